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
	// All 50 stay reachable until counted: a collection during the loop
	// would free some early and make the count below a matter of timing.
	pubs := make([]*rsa.PublicKey, 50)
	for i := range pubs {
		pubs[i] = &rsa.PublicKey{N: k.rsaA.N, E: k.rsaA.E}
		if err := b.VerifyPKCS1v15(pubs[i], crypto.SHA256, d, sig); err != nil {
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
	runtime.KeepAlive(pubs)
	for i := 0; i < 100 && cached() > 1; i++ {
		runtime.GC() // cleanups run after a collection, on their own goroutine
		runtime.Gosched()
	}
	if n := cached(); n != 1 {
		t.Errorf("%d public keys still cached after their *rsa.PublicKey went away, want 1 (the one still in use)", n)
	}
	runtime.KeepAlive(keep)
}

// TestLibcryptoReusesContexts: the contexts kept ready per key serve
// operation after operation, a failed verification does not spoil the next
// one, and no more than the pool's size are kept.
func TestLibcryptoReusesContexts(t *testing.T) {
	k := loadKeys(t)
	b := &libcrypto{}
	key, err := b.PrivateKey(k.rsaA)
	if err != nil {
		t.Fatal(err)
	}
	d := digestOf(crypto.SHA256, []byte("reuse"))
	want, _ := k.rsaA.Sign(rand.Reader, d, crypto.SHA256)
	bad := append([]byte(nil), want...)
	bad[7] ^= 0x40
	pub := &k.rsaA.PublicKey
	for i := range 20 {
		sig, err := key.Sign(rand.Reader, d, crypto.SHA256)
		if err != nil || string(sig) != string(want) {
			t.Fatalf("signature %d differs (err %v)", i, err)
		}
		if err := b.VerifyPKCS1v15(pub, crypto.SHA256, d, bad); err == nil {
			t.Fatalf("verification %d of a changed signature passed", i)
		}
		if err := b.VerifyPKCS1v15(pub, crypto.SHA256, d, sig); err != nil {
			t.Fatalf("verification %d after a failed one: %v", i, err)
		}
	}
	ev, err := b.public(pub)
	if err != nil {
		t.Fatal(err)
	}
	lk := key.(*libcryptoKey)
	if n := len(lk.evp.ready); n < 1 || n > cap(lk.evp.ready) {
		t.Errorf("%d signing contexts kept ready, want 1 to %d", n, cap(lk.evp.ready))
	}
	if n := len(ev.ready); n < 1 || n > cap(ev.ready) {
		t.Errorf("%d verifying contexts kept ready, want 1 to %d", n, cap(ev.ready))
	}
	runtime.KeepAlive(key)
}
