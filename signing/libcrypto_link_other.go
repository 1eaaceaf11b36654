//go:build cgo && (!linux || crowd_static)

package signing

// Linked as -lcrypto: a static build (the tag crowd_static: libcrypto.a,
// from Debian's libssl-dev) and systems whose linker has no -l:file form
// (macOS's) name the library by its development link.

// #cgo LDFLAGS: -lcrypto
import "C"
