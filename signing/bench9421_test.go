package signing

import (
	"context"
	"crypto/tls"
	"testing"
)

// RFC 9421 beside draft-cavage (bench_test.go): run both in one go to
// compare, e.g.
//   go test -bench 'SignPost|Verify' -run '^$' ./signing/ -benchtime=2s
// The Ed25519 variants show what the scheme itself costs beside a fast
// key: its signature base is longer and built from structured fields.

func benchSignPost9421(b *testing.B, key Key) {
	s := NewSigner(SignerOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if err := s.SignPost9421(benchRequest(), testBody, keyA, key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignPost9421(b *testing.B) { benchSignPost9421(b, loadKeys(b).rsaA) }

func BenchmarkSignPost9421Ed25519(b *testing.B) { benchSignPost9421(b, loadKeys(b).edA) }

func BenchmarkVerify9421(b *testing.B) {
	k := loadKeys(b)
	req := benchRequest()
	if err := NewSigner(SignerOptions{}).SignPost9421(req, testBody, keyA, k.rsaA); err != nil {
		b.Fatal(err)
	}
	sreq := overTheWire(b, req)
	sreq.TLS = &tls.ConnectionState{}
	v := &Verifier{Keys: &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, sreq, testBody); err != nil {
			b.Fatal(err)
		}
	}
}
