//go:build cgo

package main

// withCgo says this test binary links libcrypto, so the backend rows run.
const withCgo = true
