//go:build cgo

package signing

// withCgo says the test binary has cgo, so the libcrypto backend must exist.
const withCgo = true
