//go:build !cgo

package signing

import "fmt"

// newLibcrypto is unavailable: this build has no cgo (CGO_ENABLED=0), so
// libcrypto is not linked in and the Go backend signs.
func newLibcrypto() (Backend, error) {
	return nil, fmt.Errorf("%w: the libcrypto backend needs a build with cgo (this one has CGO_ENABLED=0); use go", ErrUnsupportedAlgorithm)
}
