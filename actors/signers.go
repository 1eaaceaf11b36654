package actors

import (
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

// SigningKey is what every signature of the actor goes through: its Key,
// which a world's actor loads on first use and prepares for the world's
// backend then (a key the backend refuses fails that signature, and is
// logged). An actor built by hand signs with the Key it was given; nil when
// it has none.
func (a *Actor) SigningKey() signing.Key { return a.Key }
