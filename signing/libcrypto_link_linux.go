//go:build cgo && !crowd_static

package signing

// Linked to OpenSSL 3's shared library by its own name, as the runtime
// package installs it (Debian's libssl3, libssl3t64 from Debian 13), so that a machine without the
// development package (libssl-dev, whose libcrypto.so names it for -lcrypto)
// builds the crowd too. A static build (the image's) has no shared
// library to name: it takes the tag crowd_static and links libcrypto.a.

// #cgo LDFLAGS: -l:libcrypto.so.3
import "C"
