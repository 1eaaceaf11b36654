package actors

import (
	"context"
	"crypto/rsa"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/crowdfed/crowd/signing"
)

// verifyWith signs a POST as keyID with key and verifies it as a SUT
// that fetches keys from w's actor documents, with an empty key cache
// (one that refetched after the rotation).
func verifyWith(t *testing.T, w *World, keyID string, key *rsa.PrivateKey) (signing.Verified, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "https://sut.test/inbox", nil)
	body := []byte(`{"type":"Create"}`)
	if err := signing.NewSigner(signing.SignerOptions{}).SignPost(req, body, keyID, key); err != nil {
		t.Fatal(err)
	}
	cache := signing.NewKeyCache(signing.KeyCacheOptions{Fetcher: fetchKeyFunc(func(_ context.Context, url string) ([]byte, error) {
		a, ok := w.ActorByID(url)
		if !ok {
			return nil, errors.New("404")
		}
		return a.DocumentJSON(), nil
	})})
	return (&signing.Verifier{Keys: cache}).Verify(context.Background(), req, body)
}

// rotationWorlds are the worlds a rotation must work in.
var rotationWorlds = []struct {
	name string
	cfg  Config // without StateDir
}{
	// Every actor has its own key file, rotated in place.
	{"a key per actor", Config{Origins: 1, Actors: 1, Domain: "flood%d.test", EphemeralGraph: true}},
	// Four actors share two keys: the rotated one gets a key file of its
	// own, the others keep the pool's.
	{"a key pool", Config{Origins: 1, Actors: 3, Domain: "flood%d.test", EphemeralGraph: true, KeyPool: 2}},
}

// privateKey is a's RSA key, or the test fails.
func privateKey(t *testing.T, a *Actor) *rsa.PrivateKey {
	t.Helper()
	k, err := a.PrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRotateKey: a key rotated to a new key id (--new-key-id) verifies new
// signatures under its new key id (the actor's cached document rendered again), the old key keeps
// verifying at its id until retired and is refused after the cut, another
// actor's key is left alone, and all of it survives a restart.
func TestRotateKey(t *testing.T) {
	for _, tc := range rotationWorlds {
		t.Run(tc.name, func(t *testing.T) {
			cfg, w := openRotationWorld(t, tc.cfg)
			a := w.Actors()[0]
			oldID, oldKey := a.KeyID, privateKey(t, a)
			if _, err := verifyWith(t, w, oldID, oldKey); err != nil { // its document is cached now
				t.Fatal(err)
			}
			if err := w.RotateKey(a, false, true); err != nil {
				t.Fatal(err)
			}
			newKey := privateKey(t, a)
			if a.KeyID != a.ID+"#main-key-2" || newKey.Equal(oldKey) {
				t.Fatalf("after rotation: keyId %s, same key %v", a.KeyID, newKey.Equal(oldKey))
			}
			again := w.Actors()[0] // computed anew: the world keeps the rotation
			if again.KeyID != a.KeyID || !privateKey(t, again).Equal(newKey) || len(again.RetainedKeys()) != 1 {
				t.Fatalf("looked up again: %s, same key %v, retained %d", again.KeyID, privateKey(t, again).Equal(newKey), len(again.RetainedKeys()))
			}
			if v, err := verifyWith(t, w, a.KeyID, newKey); err != nil || v.Owner != a.ID {
				t.Fatalf("new key: %v %+v", err, v)
			}
			if _, err := verifyWith(t, w, oldID, oldKey); err != nil {
				t.Fatalf("the old key, retained, is refused: %v", err)
			}
			if _, err := verifyWith(t, w, a.KeyID, oldKey); !errors.Is(err, signing.ErrBadSignature) {
				t.Fatalf("the old key under the new id: %v, want a bad signature", err)
			}
			for _, o := range w.Actors()[1:] {
				if o.KeyID != o.ID+"#main-key" || privateKey(t, o).Equal(newKey) {
					t.Fatalf("%s changed with the rotation of another: %s", o.Acct(), o.KeyID)
				}
			}
			if n, err := w.RetireKeys(a); err != nil || n != 1 {
				t.Fatalf("retired %d keys, %v; want the one retained", n, err)
			}
			if n, err := w.RetireKeys(a); err != nil || n != 0 {
				t.Fatalf("again: retired %d keys, %v; want none left to retire", n, err)
			}
			if _, err := verifyWith(t, w, oldID, oldKey); !errors.Is(err, signing.ErrKeyUnavailable) {
				t.Fatalf("the old key after the cut: %v, want refused (no such key)", err)
			}
			// A restart loads the rotation: the new key under its id, nothing retained.
			checkRestart(t, w, cfg, a.KeyID, newKey, 0)
		})
	}
}

// TestRotateKeyKeepsID: by default a rotation keeps the actor's key id, as
// real servers rotate: the new key verifies under #main-key, the old key
// under it is a bad signature and no longer served, a key retained under
// another id by an earlier --new-key-id rotation stays (and keeps its id
// for the next default rotation), and a restart loads all of it.
func TestRotateKeyKeepsID(t *testing.T) {
	for _, tc := range rotationWorlds {
		t.Run(tc.name, func(t *testing.T) {
			cfg, w := openRotationWorld(t, tc.cfg)
			a := w.Actors()[0]
			mainID, oldKey := a.KeyID, privateKey(t, a)
			if err := w.RotateKey(a, false, false); err != nil {
				t.Fatal(err)
			}
			newKey := privateKey(t, a)
			if a.KeyID != mainID || newKey.Equal(oldKey) || len(a.RetainedKeys()) != 0 {
				t.Fatalf("after rotation: keyId %s (want %s), same key %v, retained %v", a.KeyID, mainID, newKey.Equal(oldKey), a.RetainedKeys())
			}
			if v, err := verifyWith(t, w, mainID, newKey); err != nil || v.Owner != a.ID {
				t.Fatalf("new key under #main-key: %v %+v", err, v)
			}
			if _, err := verifyWith(t, w, mainID, oldKey); !errors.Is(err, signing.ErrBadSignature) {
				t.Fatalf("the old key under #main-key: %v, want a bad signature", err)
			}
			// A --new-key-id rotation, then a default one: the id of the
			// second stays #main-key-2, and #main-key stays retained.
			if err := w.RotateKey(a, false, true); err != nil {
				t.Fatal(err)
			}
			if err := w.RotateKey(a, false, false); err != nil {
				t.Fatal(err)
			}
			last := privateKey(t, a)
			if a.KeyID != a.ID+"#main-key-2" || len(a.RetainedKeys()) != 1 || a.RetainedKeys()[0].ID != mainID {
				t.Fatalf("after --new-key-id and a default rotation: %s, retained %v", a.KeyID, a.RetainedKeys())
			}
			checkRestart(t, w, cfg, a.ID+"#main-key-2", last, 1)
		})
	}
}

// TestRotateKeyTorn: a crash after the rotation file was written but
// before the key file was replaced is finished at the next start, and a
// new key left without a rotation file is dropped.
func TestRotateKeyTorn(t *testing.T) {
	for _, tc := range rotationWorlds {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			dir := t.TempDir()
			cfg.StateDir = dir
			w, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			a := w.Actors()[0]
			kp := keyPath(dir, a.Origin.Host, a.Name)
			old, err := os.ReadFile(kp) // absent in a pool world: the actor had no file
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if err := w.RotateKey(a, false, true); err != nil {
				t.Fatal(err)
			}
			newKey := privateKey(t, a)
			w.Close()
			// The state as the crash left it: the new key still in .new, the old in place.
			if err := os.Rename(kp, kp+".new"); err != nil {
				t.Fatal(err)
			}
			if old != nil {
				if err := os.WriteFile(kp, old, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// A .new of another actor, from a rotation that never wrote its rotation file.
			stray := filepath.Join(dir, "keys", a.Origin.Host, "never-rotated.pem.new")
			if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			borrow := cfg
			borrow.BorrowKeys = true
			if _, err := Open(borrow); !errors.Is(err, ErrKeyFile) {
				t.Fatalf("a borrower of a torn rotation: %v, want ErrKeyFile", err) // it must not repair another's state
			}
			w2, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Close()
			b := w2.Actors()[0]
			if b.KeyID != a.KeyID || !privateKey(t, b).Equal(newKey) || len(b.RetainedKeys()) != 1 {
				t.Fatalf("after the repair: %s, same key %v, retained %d", b.KeyID, privateKey(t, b).Equal(newKey), len(b.RetainedKeys()))
			}
			for _, p := range []string{kp + ".new", stray} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Fatalf("%s left: %v", filepath.Base(p), err)
				}
			}
		})
	}
}

// TestRotationsCostNothingUnrotated: a world none of whose actors was
// rotated keeps no rotation, so computing an actor looks nothing up.
func TestRotationsCostNothingUnrotated(t *testing.T) {
	cfg := rotationWorlds[1].cfg
	cfg.StateDir = t.TempDir()
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if m := w.rotations.m.Load(); m != nil {
		t.Fatalf("rotations of a world never rotated: %v", *m)
	}
}

// openRotationWorld opens a world of cfg in a fresh state directory and
// returns the configuration it was opened with, to open it again.
func openRotationWorld(t *testing.T, cfg Config) (Config, *World) {
	t.Helper()
	cfg.StateDir = t.TempDir()
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, w
}

// checkRestart closes w and opens its state again: the first actor must
// come back with key under keyID, retaining that many keys, and verify.
func checkRestart(t *testing.T, w *World, cfg Config, keyID string, key *rsa.PrivateKey, retained int) {
	t.Helper()
	w.Close()
	w2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	b := w2.Actors()[0]
	if b.KeyID != keyID || !privateKey(t, b).Equal(key) || len(b.RetainedKeys()) != retained {
		t.Fatalf("after restart: %s (want %s), same key %v, retained %v (want %d)", b.KeyID, keyID, privateKey(t, b).Equal(key), b.RetainedKeys(), retained)
	}
	if _, err := verifyWith(t, w2, b.KeyID, key); err != nil {
		t.Fatal(err)
	}
}

// fetchKeyFunc adapts a function to signing.KeyFetcher, for fetchers made in a test.
type fetchKeyFunc func(ctx context.Context, url string) ([]byte, error)

// FetchKey calls f.
func (f fetchKeyFunc) FetchKey(ctx context.Context, url string) ([]byte, error) { return f(ctx, url) }
