package signing

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"math/big"
)

// The other algorithms of RFC 9421 §3.3 (beside RFC9421RSAv15SHA256,
// RFC9421RSAPSSSHA512 and RFC9421Ed25519). verifyRFC9421With verifies them;
// the inbox accepts none of them from remote actors (see doc.go).
const (
	RFC9421HMACSHA256      Algorithm = "hmac-sha256"
	RFC9421ECDSAP256SHA256 Algorithm = "ecdsa-p256-sha256"
	RFC9421ECDSAP384SHA384 Algorithm = "ecdsa-p384-sha384"
)

// RSAPSSPublicKey is an RSA public key meant for RSASSA-PSS alone, as a key
// published with the id-RSASSA-PSS algorithm identifier declares itself
// (RFC 9421's test-key-rsa-pss): with no alg parameter, the key's type
// picks rsa-pss-sha512 (RFC 9421 §3.2), where a plain *rsa.PublicKey picks
// rsa-v1_5-sha256.
type RSAPSSPublicKey struct{ *rsa.PublicKey }

// SharedSecret is an HMAC key (RFC 9421 §3.3.3, test-shared-secret): it
// verifies hmac-sha256. Fediverse actors publish no such key; peers that
// share a secret (and tests) use it.
type SharedSecret []byte

// RFC9421AlgorithmFor is the algorithm a verification key implies when a
// signature names none (RFC 9421 §3.2: the key decides): rsa-pss-sha512
// for an RSAPSSPublicKey, rsa-v1_5-sha256 for an *rsa.PublicKey,
// ecdsa-p256-sha256 / ecdsa-p384-sha384 by the ECDSA key's curve, ed25519,
// and hmac-sha256 for a SharedSecret. Other keys wrap
// ErrUnsupportedAlgorithm.
func RFC9421AlgorithmFor(key crypto.PublicKey) (Algorithm, error) {
	switch k := key.(type) {
	case RSAPSSPublicKey:
		return RFC9421RSAPSSSHA512, nil
	case *rsa.PublicKey:
		return RFC9421RSAv15SHA256, nil
	case ed25519.PublicKey:
		return RFC9421Ed25519, nil
	case SharedSecret:
		return RFC9421HMACSHA256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return RFC9421ECDSAP256SHA256, nil
		case elliptic.P384():
			return RFC9421ECDSAP384SHA384, nil
		}
		return "", fmt.Errorf("%w: ECDSA curve %s", ErrUnsupportedAlgorithm, k.Curve.Params().Name)
	}
	return "", fmt.Errorf("%w: key type %T", ErrUnsupportedAlgorithm, key)
}

// verifyRFC9421With checks sig over an RFC 9421 signature base under alg,
// or, when alg is "", under the algorithm the key implies
// (RFC9421AlgorithmFor), with the RSA operations done by b (nil: Go's
// crypto/rsa), as the Verifier's backend does them. Every algorithm of RFC 9421 §3.3 is verified:
// rsa-pss-sha512 (an RSA or RSA-PSS key; salt length 64, the digest's, as
// §3.3.1 says, or any when the signer chose another), rsa-v1_5-sha256 (an
// RSA key, not an RSA-PSS one), hmac-sha256 (a SharedSecret),
// ecdsa-p256-sha256 and ecdsa-p384-sha384 (r‖s, each the curve's size, as
// §3.3.4 says), ed25519. A signature that does not verify, or an alg the
// key does not fit, wraps ErrBadSignature; an unknown alg or key,
// ErrUnsupportedAlgorithm. The Verifier lets remote actors use only RSA and
// Ed25519 keys (verify9421); the rest is checked against RFC 9421's examples.
func verifyRFC9421With(b Backend, alg Algorithm, key crypto.PublicKey, base, sig []byte) error {
	if alg == "" {
		var err error
		if alg, err = RFC9421AlgorithmFor(key); err != nil {
			return err
		}
	}
	ok, fits := false, true
	switch alg {
	case RFC9421RSAPSSSHA512:
		var k *rsa.PublicKey
		switch kk := key.(type) {
		case RSAPSSPublicKey:
			k = kk.PublicKey
		case *rsa.PublicKey:
			k = kk
		}
		if fits = k != nil; fits {
			sum := sha512.Sum512(base)
			ok = backendOr(b).VerifyPSS(k, crypto.SHA512, sum[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthAuto}) == nil
		}
	case RFC9421RSAv15SHA256:
		k, isRSA := key.(*rsa.PublicKey)
		if fits = isRSA; fits {
			sum := sha256.Sum256(base)
			ok = backendOr(b).VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) == nil
		}
	case RFC9421HMACSHA256:
		k, isSecret := key.(SharedSecret)
		if fits = isSecret && len(k) > 0; fits {
			mac := hmac.New(sha256.New, k)
			mac.Write(base)
			ok = hmac.Equal(mac.Sum(nil), sig)
		}
	case RFC9421ECDSAP256SHA256, RFC9421ECDSAP384SHA384:
		curve, sum := elliptic.P256(), func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
		if alg == RFC9421ECDSAP384SHA384 {
			curve, sum = elliptic.P384(), func(b []byte) []byte { s := sha512.Sum384(b); return s[:] }
		}
		k, isEC := key.(*ecdsa.PublicKey)
		if fits = isEC && k.Curve == curve; fits {
			ok = verifyECDSARaw(k, sum(base), sig)
		}
	case RFC9421Ed25519:
		k, isEd := key.(ed25519.PublicKey)
		if fits = isEd; fits {
			ok = ed25519.Verify(k, base, sig)
		}
	default:
		return fmt.Errorf("%w: alg %q (RFC 9421 §3.3 defines rsa-pss-sha512, rsa-v1_5-sha256, hmac-sha256, ecdsa-p256-sha256, ecdsa-p384-sha384, ed25519)", ErrUnsupportedAlgorithm, alg)
	}
	if !fits {
		return fmt.Errorf("%w: alg %s does not fit a %T key", ErrBadSignature, alg, key)
	}
	if !ok {
		return fmt.Errorf("%w: %s signature does not verify", ErrBadSignature, alg)
	}
	return nil
}

// verifyECDSARaw checks an RFC 9421 ECDSA signature: r and s as unsigned
// big-endian integers of the curve's byte size, concatenated (not DER).
func verifyECDSARaw(k *ecdsa.PublicKey, digest, sig []byte) bool {
	n := (k.Curve.Params().BitSize + 7) / 8
	if len(sig) != 2*n {
		return false
	}
	r, s := new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])
	return ecdsa.Verify(k, digest, r, s)
}
