package signing

import (
	"crypto"
	"crypto/rsa"
	"fmt"
)

// Backend does the RSA key operations: it turns a private key into the Key
// that signs, and it checks PKCS#1 v1.5 and PSS signatures. Two exist: the Go
// backend (crypto/rsa, what a CGO_ENABLED=0 build has) and libcrypto
// (OpenSSL 3 through cgo, faster at signing by how much the processor lets
// OpenSSL's own code gain: 1.6 to 3.6 times on the machines
// docs/contributing.md's bench ran on). Both give the same bytes: PKCS#1 v1.5 is
// deterministic, so the same key and message sign to the same signature
// whichever backend signs. A Backend is safe for concurrent use.
type Backend interface {
	// Name is the backend's name as flags and records spell it: BackendGo
	// or BackendLibcrypto.
	Name() string
	// Describe is Name with the library's version, for `crowd version` and
	// logs (e.g. "libcrypto (OpenSSL 3.0.15 3 Sep 2024)").
	Describe() string
	// PrivateKey wraps k into the Key that signs with this backend. The Key's
	// Public returns &k.PublicKey; its Sign takes what *rsa.PrivateKey.Sign
	// takes (a digest with crypto.Hash opts for PKCS#1 v1.5, *rsa.PSSOptions
	// for PSS). k must not change afterwards. The work of preparing the key
	// is done here, once, not per signature.
	PrivateKey(k *rsa.PrivateKey) (Key, error)
	// VerifyPKCS1v15 is rsa.VerifyPKCS1v15: nil when sig is a valid
	// PKCS#1 v1.5 signature of the digest hashed with hash under pub.
	VerifyPKCS1v15(pub *rsa.PublicKey, hash crypto.Hash, hashed, sig []byte) error
	// VerifyPSS is rsa.VerifyPSS, opts as there (nil: salt length auto).
	VerifyPSS(pub *rsa.PublicKey, hash crypto.Hash, digest, sig []byte, opts *rsa.PSSOptions) error
}

// Backend names, as --crypto and the run record spell them.
const (
	// BackendGo is Go's crypto/rsa.
	BackendGo = "go"
	// BackendLibcrypto is OpenSSL 3's libcrypto, linked through cgo.
	BackendLibcrypto = "libcrypto"
	// BackendAuto picks libcrypto when the build has it, else Go.
	BackendAuto = "auto"
)

// NewBackend returns the backend named name: BackendGo, BackendLibcrypto or
// BackendAuto ("" is auto). Asking for libcrypto in a build without cgo is an
// error wrapping ErrUnsupportedAlgorithm that says so.
func NewBackend(name string) (Backend, error) {
	switch name {
	case BackendGo:
		return GoBackend(), nil
	case BackendLibcrypto:
		return newLibcrypto()
	case BackendAuto, "":
		if b, err := newLibcrypto(); err == nil {
			return b, nil
		}
		return GoBackend(), nil
	}
	return nil, fmt.Errorf("%w: signing backend %q (want auto, go or libcrypto)", ErrUnsupportedAlgorithm, name)
}

// GoBackend returns the backend of Go's crypto/rsa: PrivateKey returns the
// key itself.
func GoBackend() Backend { return goBackend{} }

// backendOr is b, or the Go backend when b is nil (a zero Verifier).
func backendOr(b Backend) Backend {
	if b == nil {
		return goBackend{}
	}
	return b
}

type goBackend struct{}

func (goBackend) Name() string     { return BackendGo }
func (goBackend) Describe() string { return BackendGo + " (crypto/rsa)" }

func (goBackend) PrivateKey(k *rsa.PrivateKey) (Key, error) {
	if k == nil {
		return nil, fmt.Errorf("%w: nil RSA key", ErrUnsupportedAlgorithm)
	}
	return k, nil
}

func (goBackend) VerifyPKCS1v15(pub *rsa.PublicKey, hash crypto.Hash, hashed, sig []byte) error {
	return rsa.VerifyPKCS1v15(pub, hash, hashed, sig)
}

func (goBackend) VerifyPSS(pub *rsa.PublicKey, hash crypto.Hash, digest, sig []byte, opts *rsa.PSSOptions) error {
	return rsa.VerifyPSS(pub, hash, digest, sig, opts)
}
