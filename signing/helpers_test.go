package signing

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/testkeys"
)

// testKeys are fixed keys from testdata (generated once with openssl), so
// tests need no slow RSA key generation and signatures are reproducible.
type testKeys struct {
	rsaA, rsaB *rsa.PrivateKey
	edA        ed25519.PrivateKey
}

func loadKeys(t testing.TB) testKeys {
	t.Helper()
	return testKeys{
		rsaA: loadKey(t, "rsa-a.pem").(*rsa.PrivateKey),
		rsaB: loadKey(t, "rsa-b.pem").(*rsa.PrivateKey),
		edA:  loadKey(t, "ed25519-a.pem").(ed25519.PrivateKey),
	}
}

func loadKey(t testing.TB, name string) crypto.Signer {
	return testkeys.Load(t, filepath.Join("testdata", name))
}

func pubPEM(t testing.TB, k crypto.PublicKey) string { return testkeys.PublicPEM(t, k) }

// fakeResolver serves fixed keys; rotated, when set, is what a refresh returns.
type fakeResolver struct {
	keys      map[string]PublicKey
	rotated   map[string]PublicKey
	calls     atomic.Int32
	refreshes atomic.Int32
}

func (f *fakeResolver) ResolveKey(_ context.Context, keyID string, refresh bool) (PublicKey, error) {
	f.calls.Add(1)
	if refresh {
		f.refreshes.Add(1)
		if pk, ok := f.rotated[keyID]; ok {
			return pk, nil
		}
	}
	if pk, ok := f.keys[keyID]; ok {
		return pk, nil
	}
	return PublicKey{}, fmt.Errorf("%w: unknown key %s", ErrKeyUnavailable, keyID)
}

// overTheWire writes a client request out and reads it back as a server would
// see it (Host moved out of the header map, RequestURI set, body streamed).
func overTheWire(t testing.TB, req *http.Request) *http.Request {
	t.Helper()
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		t.Fatal(err)
	}
	sreq, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		t.Fatal(err)
	}
	return sreq
}

// fixedClock is a settable clock for injected Now functions.
type fixedClock struct{ t atomic.Int64 }

func newClock(t time.Time) *fixedClock {
	c := &fixedClock{}
	c.t.Store(t.UnixNano())
	return c
}
func (c *fixedClock) Now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *fixedClock) Advance(d time.Duration) { c.t.Add(int64(d)) }

func sha256Sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

func sha512Sum(b []byte) []byte { s := sha512.Sum512(b); return s[:] }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
