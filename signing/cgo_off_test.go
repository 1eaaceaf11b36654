//go:build !cgo

package signing

// withCgo says the test binary has no cgo: only the Go backend exists.
const withCgo = false
