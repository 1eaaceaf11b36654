package main

import (
	"fmt"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/signing"
	"github.com/spf13/cobra"
)

// registerCrypto adds --crypto, the backend of every RSA key operation
// (signing the flood and the Accepts, verifying the inbox's deliveries).
func (g *globalOptions) registerCrypto(root *cobra.Command) {
	root.PersistentFlags().StringVar(&g.crypto, "crypto", "auto",
		"signing backend: auto (libcrypto when this build has cgo, else go), go (crypto/rsa) or libcrypto (OpenSSL 3, about 3.5x faster)")
}

// checkCrypto refuses a --crypto this build cannot honour (a usage error):
// an unknown name, or libcrypto in a build without cgo.
func (g *globalOptions) checkCrypto() error {
	if _, err := signing.NewBackend(g.crypto); err != nil {
		return usage(fmt.Errorf("--crypto %q: %w", g.crypto, err))
	}
	return nil
}

// applyCrypto gives the world w the backend --crypto names.
func (g *globalOptions) applyCrypto(w *actors.Config) error {
	b, err := signing.NewBackend(g.crypto)
	if err != nil {
		return usage(fmt.Errorf("--crypto %q: %w", g.crypto, err))
	}
	w.Backend = b
	return nil
}

// signingLine is `crowd version`'s second line: the backend that signs
// with this build and these flags, and its library.
func (g *globalOptions) signingLine() (string, error) {
	b, err := signing.NewBackend(g.crypto)
	if err != nil {
		return "", usage(fmt.Errorf("--crypto %q: %w", g.crypto, err))
	}
	return "signing backend " + b.Describe(), nil
}
