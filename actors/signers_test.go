package actors

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"

	"github.com/crowdfed/crowd/signing"
)

// TestActorsSignWithTheWorldsBackend: every actor's SigningKey signs with
// the world's backend, byte for byte what Go's crypto/rsa signs with the
// same key (PKCS#1 v1.5 is deterministic). A Key replaced by hand signs as
// itself.
func TestActorsSignWithTheWorldsBackend(t *testing.T) {
	fast, err := signing.NewBackend(signing.BackendAuto)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("signing string"))
	for _, c := range []struct {
		name    string
		backend signing.Backend
		want    string
	}{
		{"no backend: Go", nil, signing.BackendGo},     // the zero Config
		{"Go", signing.GoBackend(), signing.BackendGo}, // --crypto go
		{"auto", fast, fast.Name()},                    // libcrypto in a cgo build
	} {
		w := testWorldWith(t, c.backend)
		if w.Backend().Name() != c.want {
			t.Errorf("%s: world backend %s, want %s", c.name, w.Backend().Name(), c.want)
		}
		for _, a := range append(w.Actors(), w.Origins[0].Instance) {
			k := a.SigningKey()
			if got := signsWith(k); got != c.want {
				t.Errorf("%s: %s signs with %s, want %s", c.name, a.Acct(), got, c.want)
			}
			got, err := k.Sign(rand.Reader, sum[:], crypto.SHA256)
			priv, perr := a.PrivateKey()
			if perr != nil {
				t.Fatal(perr)
			}
			want, _ := priv.Sign(rand.Reader, sum[:], crypto.SHA256)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %s's SigningKey signs differently from crypto/rsa (err %v)", c.name, a.Acct(), err)
			}
		}
	}
	a := testWorld(t).Actors()[0]
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	a.Key = other
	if k := a.SigningKey(); k.Public().(*rsa.PublicKey) != &other.PublicKey || signsWith(k) != signing.BackendGo {
		t.Errorf("after the key changed, SigningKey is %T of another key", k)
	}
	if (&Actor{}).SigningKey() != nil {
		t.Error("an actor with no key has a SigningKey")
	}
}

// signsWith names the backend that signs with k: the entry's backend for a
// world's key, BackendGo for a plain key.
func signsWith(k signing.Key) string {
	if e, ok := k.(*keyEntry); ok {
		return e.BackendName()
	}
	return signing.BackendGo
}
