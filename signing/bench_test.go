package signing

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// Timing claims are benchmarks. Run:
//   go test -bench . -run '^$' ./signing/ -benchtime=2s
// BenchmarkSignPost is one core's RSA-2048 signing ceiling; BenchmarkSignParallel
// is the whole machine's; compare with the Ed25519 variant for the headroom a
// faster Key buys.

func benchRequest() *http.Request {
	u, _ := url.Parse(inbox)
	return &http.Request{Method: http.MethodPost, URL: u, Header: make(http.Header, 8)}
}

func benchSignPost(b *testing.B, alg Algorithm, key Key) {
	s := NewSigner(SignerOptions{Algorithm: alg})
	b.ReportAllocs()
	for b.Loop() {
		if err := s.SignPost(benchRequest(), testBody, keyA, key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignPost(b *testing.B) { benchSignPost(b, RSASHA256, loadKeys(b).rsaA) }

func BenchmarkSignPostEd25519(b *testing.B) { benchSignPost(b, Ed25519, loadKeys(b).edA) }

func BenchmarkSignParallel(b *testing.B) {
	k := loadKeys(b)
	s := NewSigner(SignerOptions{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.SignPost(benchRequest(), testBody, keyA, k.rsaA); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	k := loadKeys(b)
	req := benchRequest()
	if err := NewSigner(SignerOptions{}).SignPost(req, testBody, keyA, k.rsaA); err != nil {
		b.Fatal(err)
	}
	sreq := overTheWire(b, req)
	v := &Verifier{Keys: &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, sreq, testBody); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSignatureHeader(b *testing.B) {
	k := loadKeys(b)
	req := benchRequest()
	if err := NewSigner(SignerOptions{}).SignPost(req, testBody, keyA, k.rsaA); err != nil {
		b.Fatal(err)
	}
	h := req.Header.Get("Signature")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSignatureHeader(h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeyCacheHit is a cached key resolved from many goroutines, as an
// inbox does for a remote keyId it has seen: the cache's cost on a hit.
func BenchmarkKeyCacheHit(b *testing.B) {
	w := newWeb(b)
	w.actor("a.test", "alice", loadKeys(b).rsaA.Public())
	kc := w.cache(KeyCacheOptions{})
	const id = "http://a.test/users/alice#main-key"
	resolveKey(b, kc, id, false)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := kc.ResolveKey(context.Background(), id, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
