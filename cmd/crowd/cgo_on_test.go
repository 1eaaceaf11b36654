//go:build cgo

package main

// withCgo says this test binary links libcrypto: auto signs with it.
const withCgo = true
