package signing

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Scheme is an HTTP signature scheme a request is signed with.
type Scheme string

const (
	// SchemeCavage is draft-cavage-http-signatures-12: one Signature header
	// (and Digest for a body). What every fediverse server verifies.
	SchemeCavage Scheme = "cavage"
	// SchemeRFC9421 is RFC 9421 HTTP Message Signatures: Signature-Input and
	// Signature (and RFC 9530 Content-Digest for a body). Mastodon accepts
	// it since 4.5 (4.4 behind a flag), Fedify since 1.6.
	SchemeRFC9421 Scheme = "rfc9421"
)

// RFC9421Label is the signature label SignPost9421 and SignGet9421 write:
// sig1, as Fedify does.
const RFC9421Label = "sig1"

// The covered components of the crowd's RFC 9421 signatures: Fedify's
// (>= 1.6) request shape, which includes what Mastodon requires of an
// incoming RFC 9421 request (@method, @target-uri, and content-digest on a
// POST; the created parameter).
const (
	RFC9421PostComponents = `"@method" "@target-uri" "@authority" "host" "date" "content-digest"`
	RFC9421GetComponents  = `"@method" "@target-uri" "@authority" "host" "date"`
)

// ContentDigest returns the RFC 9530 Content-Digest value for body:
// "sha-256=:<base64 of the SHA-256 of the exact bytes>:".
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// Sign signs a request carrying body (nil for a GET) with scheme: SignPost
// or SignGet for SchemeCavage, SignPost9421 or SignGet9421 for
// SchemeRFC9421 (an empty scheme is cavage). The request's method picks
// POST or GET.
func (s *Signer) Sign(scheme Scheme, req *http.Request, body []byte, keyID string, key Key) error {
	get := req != nil && (req.Method == "" || req.Method == http.MethodGet || req.Method == http.MethodHead)
	switch scheme {
	case "", SchemeCavage:
		if get {
			return s.SignGet(req, keyID, key)
		}
		return s.SignPost(req, body, keyID, key)
	case SchemeRFC9421:
		if get {
			return s.SignGet9421(req, keyID, key)
		}
		return s.SignPost9421(req, body, keyID, key)
	}
	return fmt.Errorf("%w: signature scheme %q (want cavage or rfc9421)", ErrUnsupportedAlgorithm, scheme)
}

// SignPost9421 signs a request carrying body with an RFC 9421 signature,
// as Fedify (>= 1.6) does: it sets Host, Date, User-Agent and attaches body
// as SignPost does, Content-Type application/activity+json when unset,
// Content-Digest "sha-256=:…:" of exactly body (always), removes any
// cavage Signature and Digest, and sets Signature-Input and Signature under
// the label sig1, covering RFC9421PostComponents, with the parameters
// alg, keyid and created (now). alg is rsa-v1_5-sha256 for an RSA key and
// ed25519 for an Ed25519 key, whatever the Signer's cavage Algorithm says.
func (s *Signer) SignPost9421(req *http.Request, body []byte, keyID string, key Key) error {
	if err := s.prepare(req); err != nil {
		return err
	}
	h := req.Header
	delete(h, "Digest")
	h["Content-Digest"] = []string{ContentDigest(body)}
	if len(h["Content-Type"]) == 0 {
		h["Content-Type"] = []string{ContentTypeActivity}
	}
	attachBody(req, body)
	return s.sign9421(req, keyID, key, RFC9421PostComponents)
}

// SignGet9421 signs a GET with an RFC 9421 signature: Host, Date,
// User-Agent and Accept as SignGet sets them, then Signature-Input and
// Signature covering RFC9421GetComponents.
func (s *Signer) SignGet9421(req *http.Request, keyID string, key Key) error {
	if err := s.prepare(req); err != nil {
		return err
	}
	if len(req.Header["Accept"]) == 0 {
		req.Header["Accept"] = []string{AcceptActivity}
	}
	return s.sign9421(req, keyID, key, RFC9421GetComponents)
}

// sign9421 builds the signature base over comps (serialised component
// identifiers) with this package's own base builder, the one the
// verifier uses, signs it and sets Signature-Input and Signature.
func (s *Signer) sign9421(req *http.Request, keyID string, key Key, comps string) error {
	if keyID == "" || strings.ContainsFunc(keyID, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }) {
		return fmt.Errorf("%w: keyId %q is empty or is not printable ASCII without quotes and backslashes", ErrMalformedSignature, keyID)
	}
	if key == nil {
		return fmt.Errorf("%w: nil key", ErrUnsupportedAlgorithm)
	}
	var alg Algorithm
	switch key.Public().(type) {
	case *rsa.PublicKey:
		alg = RFC9421RSAv15SHA256
	case ed25519.PublicKey:
		alg = RFC9421Ed25519
	default:
		return fmt.Errorf("%w: key type %T (want RSA or Ed25519)", ErrUnsupportedAlgorithm, key.Public())
	}
	delete(req.Header, "Signature")
	delete(req.Header, "Signature-Input")
	params := "(" + comps + `);alg="` + string(alg) + `";keyid="` + keyID + `";created=` + strconv.FormatInt(s.now().Unix(), 10)
	base, err := signatureBase(req, strings.Fields(strings.ReplaceAll(comps, `"`, "")), params)
	if err != nil {
		return err
	}
	var sig []byte
	if alg == RFC9421Ed25519 {
		sig, err = key.Sign(rand.Reader, base, crypto.Hash(0))
	} else {
		sum := sha256.Sum256(base)
		sig, err = key.Sign(rand.Reader, sum[:], crypto.SHA256)
	}
	if err != nil {
		return fmt.Errorf("signing: %s: %w", alg, err)
	}
	req.Header["Signature-Input"] = []string{RFC9421Label + "=" + params}
	req.Header["Signature"] = []string{RFC9421Label + "=:" + base64.StdEncoding.EncodeToString(sig) + ":"}
	return nil
}
