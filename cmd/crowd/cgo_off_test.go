//go:build !cgo

package main

// withCgo says this test binary has no cgo: only the Go backend exists.
const withCgo = false
