//go:build !linux

package e2e

import (
	"errors"
	"os"
)

// setns fails outside Linux, which alone has network namespaces: the
// tests that need one fail with this reason.
func setns(f *os.File) error {
	return errors.New("setns: network namespaces are Linux's")
}
