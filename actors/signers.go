package actors

import (
	"crypto"
	"fmt"

	"github.com/crowdfed/crowd/signing"
)

// Backend is the signing backend the world's actors sign with
// (Config.Backend, the Go backend when none was given).
func (w *World) Backend() signing.Backend {
	if w.Config.Backend == nil {
		return signing.GoBackend()
	}
	return w.Config.Backend
}

// SigningKey is what every signature of the actor goes through: Key as
// the world's backend prepared it at Open. An actor built by hand, or whose
// Key was replaced since, signs with Key itself (Go's crypto/rsa): the same
// bytes, never a stale key.
func (a *Actor) SigningKey() signing.Key {
	if a.signer != nil && a.Key != nil && a.signer.Public() == crypto.PublicKey(&a.Key.PublicKey) {
		return a.signer
	}
	if a.Key == nil {
		return nil // an actor with no key: the signer says so
	}
	return a.Key
}

// wrapKeys prepares every actor's key for the world's backend, once, at
// start-up: a key the backend cannot take is an error here, not at the
// first signature.
func (w *World) wrapKeys(all []*Actor) error {
	b := w.Backend()
	for _, a := range all {
		k, err := b.PrivateKey(a.Key)
		if err != nil {
			return fmt.Errorf("key of %s (%s backend): %w", a.Acct(), b.Name(), err)
		}
		a.signer = k
	}
	return nil
}
