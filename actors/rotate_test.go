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
	cache := signing.NewKeyCache(signing.KeyCacheOptions{Fetcher: signing.KeyFetcherFunc(func(_ context.Context, url string) ([]byte, error) {
		a, ok := w.ActorByID(url)
		if !ok {
			return nil, errors.New("404")
		}
		return a.DocumentJSON(), nil
	})})
	return (&signing.Verifier{Keys: cache}).Verify(context.Background(), req, body)
}

// TestRotateKey: a rotated key verifies new signatures under its new key
// id, the old key keeps verifying at its id until retired and is refused
// after the cut, and all of it survives a restart.
func TestRotateKey(t *testing.T) {
	_, cfg, w := rotationWorld(t)
	a := w.Actors()[0]
	oldID, oldKey := a.KeyID, a.Key
	if err := w.RotateKey(a, false); err != nil {
		t.Fatal(err)
	}
	if a.KeyID != a.ID+"#main-key-2" || a.Key.Equal(oldKey) {
		t.Fatalf("after rotation: keyId %s, same key %v", a.KeyID, a.Key.Equal(oldKey))
	}
	if v, err := verifyWith(t, w, a.KeyID, a.Key); err != nil || v.Owner != a.ID {
		t.Fatalf("new key: %v %+v", err, v)
	}
	if _, err := verifyWith(t, w, oldID, oldKey); err != nil {
		t.Fatalf("the old key, retained, is refused: %v", err)
	}
	if _, err := verifyWith(t, w, a.KeyID, oldKey); !errors.Is(err, signing.ErrBadSignature) {
		t.Fatalf("the old key under the new id: %v, want a bad signature", err)
	}
	if err := w.RetireKeys(a); err != nil {
		t.Fatal(err)
	}
	if _, err := verifyWith(t, w, oldID, oldKey); !errors.Is(err, signing.ErrKeyUnavailable) {
		t.Fatalf("the old key after the cut: %v, want refused (no such key)", err)
	}
	w.Close()

	// A restart loads the rotation: the new key under its id, nothing retained.
	w2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := w2.Actors()[0]
	if b.KeyID != a.KeyID || !b.Key.Equal(a.Key) || len(b.RetainedKeys()) != 0 {
		t.Fatalf("after restart: %s, same key %v, retained %v", b.KeyID, b.Key.Equal(a.Key), b.RetainedKeys())
	}
	if _, err := verifyWith(t, w2, b.KeyID, b.Key); err != nil {
		t.Fatal(err)
	}
	w2.Close()
}

// TestRotateKeyTorn: a crash after the rotation file was written but
// before the key file was replaced is finished at the next start.
func TestRotateKeyTorn(t *testing.T) {
	dir, cfg, w := rotationWorld(t)
	a := w.Actors()[0]
	kp := keyPath(dir, a.Origin.Host, a.Name)
	old, err := os.ReadFile(kp)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RotateKey(a, false); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// The state as the crash left it: the new key still in .new, the old in place.
	if err := os.Rename(kp, kp+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kp, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: dir, EphemeralGraph: true, BorrowKeys: true}); !errors.Is(err, ErrKeyFile) {
		t.Fatalf("a borrower of a torn rotation: %v, want ErrKeyFile", err) // it must not repair another's state
	}
	w2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	b := w2.Actors()[0]
	if b.KeyID != a.KeyID || !b.Key.Equal(a.Key) || len(b.RetainedKeys()) != 1 {
		t.Fatalf("after the repair: %s, same key %v, retained %d", b.KeyID, b.Key.Equal(a.Key), len(b.RetainedKeys()))
	}
	if _, err := os.Stat(kp + ".new"); !os.IsNotExist(err) {
		t.Fatalf(".new left: %v", err)
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "keys", a.Origin.Host, "*")); len(got) < 2 {
		t.Fatalf("state files %v", got)
	}
}

// rotationWorld opens a one-actor world in a new state directory.
func rotationWorld(t *testing.T) (string, Config, *World) {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: dir, EphemeralGraph: true}
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dir, cfg, w
}
