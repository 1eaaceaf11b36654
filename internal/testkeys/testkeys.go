// Package testkeys reads the private-key fixtures of tests (PKCS#8 PEM
// files) and renders public keys as actors publish them. Test code only:
// every failure ends the test.
package testkeys

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

// Load reads the PKCS#8 PEM private key at path.
func Load(t testing.TB, path string) crypto.Signer {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return k.(crypto.Signer)
}

// RSA is Load for a key that must be RSA.
func RSA(t testing.TB, path string) *rsa.PrivateKey {
	t.Helper()
	k, ok := Load(t, path).(*rsa.PrivateKey)
	if !ok {
		t.Fatalf("%s is not an RSA key", path)
	}
	return k
}

// PublicPEM renders pub as the "PUBLIC KEY" (PKIX) PEM block actors
// publish in publicKeyPem.
func PublicPEM(t testing.TB, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}
