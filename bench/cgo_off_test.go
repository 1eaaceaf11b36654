//go:build !cgo

package main

// withCgo says this test binary has no cgo: the libcrypto rows say why
// they have no figures.
const withCgo = false
