package signing

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// backends are the backends of this build: Go always, libcrypto with cgo
// (where its absence fails the test: a cgo build always links it).
func backends(t testing.TB) []Backend {
	t.Helper()
	out := []Backend{GoBackend()}
	if withCgo {
		b, err := NewBackend(BackendLibcrypto)
		if err != nil {
			t.Fatalf("cgo build without the libcrypto backend: %v", err)
		}
		out = append(out, b)
	}
	return out
}

func TestNewBackend(t *testing.T) {
	fast := BackendGo
	if withCgo {
		fast = BackendLibcrypto
	}
	for _, c := range []struct {
		name, want string
		ok         bool
	}{
		{BackendGo, BackendGo, true},                  // always there
		{BackendAuto, fast, true},                     // libcrypto when the build has cgo
		{"", fast, true},                              // the zero value is auto
		{BackendLibcrypto, BackendLibcrypto, withCgo}, // only with cgo; else a clear error
		{"openssl", "", false},                        // not a backend name
	} {
		b, err := NewBackend(c.name)
		if (err == nil) != c.ok {
			t.Fatalf("NewBackend(%q): err %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil {
			if !errors.Is(err, ErrUnsupportedAlgorithm) || !strings.Contains(err.Error(), c.name) && c.name != BackendLibcrypto {
				t.Errorf("NewBackend(%q): error %v does not name the backend or wrap ErrUnsupportedAlgorithm", c.name, err)
			}
			continue
		}
		if b.Name() != c.want || !strings.HasPrefix(b.Describe(), c.want+" (") {
			t.Errorf("NewBackend(%q) = %s (%s), want %s", c.name, b.Name(), b.Describe(), c.want)
		}
	}
}

// digestOf hashes msg with h (raw msg for hash 0, as PKCS#1 v1.5 signs it unhashed).
func digestOf(h crypto.Hash, msg []byte) []byte {
	switch h {
	case crypto.SHA256:
		s := sha256.Sum256(msg)
		return s[:]
	case crypto.SHA384:
		s := sha512.Sum384(msg)
		return s[:]
	case crypto.SHA512:
		s := sha512.Sum512(msg)
		return s[:]
	}
	return msg
}

// TestBackendsSignAlike: PKCS#1 v1.5 is deterministic, so every backend
// signs the same key and message to the same bytes, and every backend
// verifies every other's signature.
func TestBackendsSignAlike(t *testing.T) {
	k := loadKeys(t)
	bs := backends(t)
	for _, c := range []struct {
		name string
		key  *rsa.PrivateKey
		hash crypto.Hash
		msg  string
	}{
		{"sha256 cavage string", k.rsaA, crypto.SHA256, "(request-target): post /inbox\nhost: a.test\ndate: Tue, 01 Dec 2026 08:00:00 GMT"},
		{"sha256 empty message", k.rsaA, crypto.SHA256, ""},
		{"sha256 other key", k.rsaB, crypto.SHA256, "hello"},
		{"sha384", k.rsaA, crypto.SHA384, "hello"},
		{"sha512 (rsa-sha512)", k.rsaB, crypto.SHA512, strings.Repeat("x", 5000)},
		{"no hash: a raw block, as Go signs hash 0", k.rsaA, 0, "a short raw block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := digestOf(c.hash, []byte(c.msg))
			var sigs [][]byte
			for _, b := range bs {
				key, err := b.PrivateKey(c.key)
				if err != nil {
					t.Fatal(err)
				}
				if signsWith(key) != b.Name() {
					t.Errorf("the key signs with %s, want %s", signsWith(key), b.Name())
				}
				if pub, ok := key.Public().(*rsa.PublicKey); !ok || !pub.Equal(&c.key.PublicKey) {
					t.Errorf("%s: Public() is not the key's public key", b.Name())
				}
				sig, err := key.Sign(rand.Reader, d, c.hash)
				if err != nil {
					t.Fatalf("%s sign: %v", b.Name(), err)
				}
				sigs = append(sigs, sig)
			}
			for i, sig := range sigs {
				if !bytes.Equal(sig, sigs[0]) {
					t.Errorf("%s signs differently from %s", bs[i].Name(), bs[0].Name())
				}
				for _, b := range bs {
					if err := b.VerifyPKCS1v15(&c.key.PublicKey, c.hash, d, sig); err != nil {
						t.Errorf("%s does not verify %s's signature: %v", b.Name(), bs[i].Name(), err)
					}
				}
			}
		})
	}
}

// TestBackendsSignPostAlike: a whole signed request (every header) is byte
// for byte the same whichever backend signed it.
func TestBackendsSignPostAlike(t *testing.T) {
	k := loadKeys(t)
	now := func() time.Time { return time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC) }
	for _, alg := range []Algorithm{RSASHA256, HS2019, RSASHA512} {
		var first http.Header
		for _, b := range backends(t) {
			key, err := b.PrivateKey(k.rsaA)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse("https://b.test/users/bob/inbox")
			req := &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}
			if err := NewSigner(SignerOptions{Algorithm: alg, Now: now}).SignPost(req, testBody, keyA, key); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = req.Header
				continue
			}
			for name := range first {
				if got, want := req.Header.Get(name), first.Get(name); got != want {
					t.Errorf("%s %s: %s = %q, Go backend gave %q", alg, b.Name(), name, got, want)
				}
			}
		}
	}
}

// TestBackendsPSS: PSS is salted, so the backends cannot agree on bytes; each
// verifies the other's, with the salt-length options crypto/rsa knows.
func TestBackendsPSS(t *testing.T) {
	k := loadKeys(t)
	d := digestOf(crypto.SHA512, []byte("rsa-pss-sha512"))
	for _, salt := range []int{rsa.PSSSaltLengthAuto, rsa.PSSSaltLengthEqualsHash, 20} {
		for _, signer := range backends(t) {
			key, err := signer.PrivateKey(k.rsaA)
			if err != nil {
				t.Fatal(err)
			}
			sig, err := key.Sign(rand.Reader, d, &rsa.PSSOptions{SaltLength: salt, Hash: crypto.SHA512})
			if err != nil {
				t.Fatalf("%s PSS sign (salt %d): %v", signer.Name(), salt, err)
			}
			for _, v := range backends(t) {
				// Auto on the verifying side reads any salt length.
				for _, o := range []*rsa.PSSOptions{nil, {SaltLength: rsa.PSSSaltLengthAuto}} {
					if err := v.VerifyPSS(&k.rsaA.PublicKey, crypto.SHA512, d, sig, o); err != nil {
						t.Errorf("%s does not verify %s's PSS signature (salt %d, opts %v): %v", v.Name(), signer.Name(), salt, o, err)
					}
				}
				if err := v.VerifyPKCS1v15(&k.rsaA.PublicKey, crypto.SHA512, d, sig); err == nil {
					t.Errorf("%s takes a PSS signature for PKCS#1 v1.5", v.Name())
				}
			}
		}
	}
}

// TestBackendsReject: what one backend refuses, every backend refuses.
func TestBackendsReject(t *testing.T) {
	k := loadKeys(t)
	d := digestOf(crypto.SHA256, []byte("message"))
	good, err := k.rsaA.Sign(rand.Reader, d, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[100] ^= 1
	small := &rsa.PublicKey{N: new(big.Int).Lsh(big.NewInt(1), 511), E: 65537}
	small.N.Add(small.N, big.NewInt(1))
	for _, c := range []struct {
		name   string
		pub    *rsa.PublicKey
		hash   crypto.Hash
		digest []byte
		sig    []byte
	}{
		{"a flipped bit", &k.rsaA.PublicKey, crypto.SHA256, d, flipped},
		{"another key", &k.rsaB.PublicKey, crypto.SHA256, d, good},
		{"another digest", &k.rsaA.PublicKey, crypto.SHA256, digestOf(crypto.SHA256, []byte("other")), good},
		{"a truncated signature", &k.rsaA.PublicKey, crypto.SHA256, d, good[:255]},
		{"a signature one byte long", &k.rsaA.PublicKey, crypto.SHA256, d, good[:1]},
		{"no signature", &k.rsaA.PublicKey, crypto.SHA256, d, nil},
		{"the wrong hash named", &k.rsaA.PublicKey, crypto.SHA512, digestOf(crypto.SHA512, []byte("message")), good},
		{"a digest of the wrong length", &k.rsaA.PublicKey, crypto.SHA256, d[:31], good},
		{"a 512-bit key (crypto/rsa refuses under 1024)", small, crypto.SHA256, d, make([]byte, 64)},
	} {
		for _, b := range backends(t) {
			if err := b.VerifyPKCS1v15(c.pub, c.hash, c.digest, c.sig); err == nil {
				t.Errorf("%s: %s verifies", c.name, b.Name())
			}
		}
	}
}

// TestBackendVerifierEndToEnd: the Verifier checks through its Backend, and
// a request signed by any backend verifies under any other.
func TestBackendVerifierEndToEnd(t *testing.T) {
	k := loadKeys(t)
	now := time.Now
	for _, signer := range backends(t) {
		key, err := signer.PrivateKey(k.rsaA)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(inbox)
		req := &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}
		if err := NewSigner(SignerOptions{Now: now}).SignPost(req, testBody, keyA, key); err != nil {
			t.Fatal(err)
		}
		sreq := overTheWire(t, req)
		for _, vb := range backends(t) {
			v := &Verifier{Keys: &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}}, Backend: vb}
			if _, err := v.Verify(context.Background(), sreq, testBody); err != nil {
				t.Errorf("signed by %s, verified by %s: %v", signer.Name(), vb.Name(), err)
			}
			if _, err := v.Verify(context.Background(), sreq, append(bytes.Clone(testBody), ' ')); err == nil {
				t.Errorf("%s verifies a changed body", vb.Name())
			}
		}
	}
}

// TestBackendsConcurrent shares one key and one backend between goroutines
// (run with -race): every signature is the Go backend's.
func TestBackendsConcurrent(t *testing.T) {
	k := loadKeys(t)
	d := digestOf(crypto.SHA256, []byte("concurrent"))
	want, _ := k.rsaA.Sign(rand.Reader, d, crypto.SHA256)
	for _, b := range backends(t) {
		key, err := b.PrivateKey(k.rsaA)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 10 {
					sig, err := key.Sign(rand.Reader, d, crypto.SHA256)
					if err != nil || !bytes.Equal(sig, want) {
						t.Errorf("%s: concurrent signature differs (err %v)", b.Name(), err)
						return
					}
					// A fresh copy of the public key each time: the cache under it is shared too.
					if err := b.VerifyPKCS1v15(&rsa.PublicKey{N: k.rsaA.N, E: k.rsaA.E}, crypto.SHA256, d, sig); err != nil {
						t.Errorf("%s: concurrent verify: %v", b.Name(), err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}

// FuzzBackendsAgree is the differential test: for any message and any
// change to its signature, every backend signs alike and gives the same
// verdict.
func FuzzBackendsAgree(f *testing.F) {
	f.Add([]byte("(request-target): post /inbox"), uint16(0), byte(0))
	f.Add([]byte(""), uint16(17), byte(0x80))
	f.Add(bytes.Repeat([]byte{0xff}, 300), uint16(255), byte(1))
	k := loadKeys(f)
	bs := backends(f)
	keys := make([]Key, len(bs))
	for i, b := range bs {
		var err error
		if keys[i], err = b.PrivateKey(k.rsaB); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, msg []byte, at uint16, flip byte) {
		d := digestOf(crypto.SHA256, msg)
		var sig []byte
		for i, key := range keys {
			s, err := key.Sign(rand.Reader, d, crypto.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			if sig == nil {
				sig = s
			} else if !bytes.Equal(s, sig) {
				t.Fatalf("%s signs %q differently", bs[i].Name(), msg)
			}
		}
		bad := bytes.Clone(sig)
		bad[int(at)%len(bad)] ^= flip
		want := flip == 0
		for _, b := range bs {
			if got := b.VerifyPKCS1v15(&k.rsaB.PublicKey, crypto.SHA256, d, bad) == nil; got != want {
				t.Fatalf("%s: verdict %v on a signature changed by %#x at %d, want %v", b.Name(), got, flip, at, want)
			}
		}
	})
}

// Timing claims are benchmarks: go test -bench Backend -run '^$' ./signing/
// gives each backend's one-core RSA-2048 sign and verify cost side by side.
func BenchmarkBackendSign(b *testing.B) {
	k := loadKeys(b)
	d := digestOf(crypto.SHA256, []byte("bench"))
	for _, be := range backends(b) {
		key, err := be.PrivateKey(k.rsaA)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(be.Name(), func(b *testing.B) {
			for b.Loop() {
				if _, err := key.Sign(rand.Reader, d, crypto.SHA256); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBackendVerify(b *testing.B) {
	k := loadKeys(b)
	d := digestOf(crypto.SHA256, []byte("bench"))
	sig, _ := k.rsaA.Sign(rand.Reader, d, crypto.SHA256)
	for _, be := range backends(b) {
		b.Run(be.Name(), func(b *testing.B) {
			for b.Loop() {
				if err := be.VerifyPKCS1v15(&k.rsaA.PublicKey, crypto.SHA256, d, sig); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// signsWith names the backend that signs with key: the name a key of a
// backend other than Go reports, BackendGo for a plain key.
func signsWith(key Key) string {
	if n, ok := key.(interface{ BackendName() string }); ok {
		return n.BackendName()
	}
	return BackendGo
}
