//go:build cgo

package signing

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"runtime"
	"testing"
)

// TestLibcryptoFreesPublicKeys: the EVP_PKEY parsed for a public key lives
// only as long as the *rsa.PublicKey (a KeyCache evicts keys; the backend
// must not keep them all).
func TestLibcryptoFreesPublicKeys(t *testing.T) {
	k := loadKeys(t)
	b := &libcrypto{}
	d := digestOf(crypto.SHA256, []byte("free"))
	sig, _ := k.rsaA.Sign(rand.Reader, d, crypto.SHA256)
	keep := &rsa.PublicKey{N: k.rsaA.N, E: k.rsaA.E}
	for range 50 {
		pub := &rsa.PublicKey{N: k.rsaA.N, E: k.rsaA.E}
		if err := b.VerifyPKCS1v15(pub, crypto.SHA256, d, sig); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.VerifyPKCS1v15(keep, crypto.SHA256, d, sig); err != nil {
		t.Fatal(err)
	}
	cached := func() int {
		n := 0
		b.pubs.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	if n := cached(); n != 51 {
		t.Fatalf("%d public keys cached, want 51 (one per *rsa.PublicKey)", n)
	}
	for i := 0; i < 100 && cached() > 1; i++ {
		runtime.GC() // cleanups run after a collection, on their own goroutine
		runtime.Gosched()
	}
	if n := cached(); n != 1 {
		t.Errorf("%d public keys still cached after their *rsa.PublicKey went away, want 1 (the one still in use)", n)
	}
	runtime.KeepAlive(keep)
}
