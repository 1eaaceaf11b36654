package signing

import (
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-fed/httpsig"
)

// Verifier checks the signatures of incoming requests. The zero Window and Now
// take their defaults, so a Verifier literal with only Keys set is usable. It
// holds no mutable state and is safe for concurrent use.
type Verifier struct {
	// Keys resolves keyIds (normally a *KeyCache).
	Keys KeyResolver
	// Window is how far the Date (or created) may lie in the past or the
	// future; default 1 h, like Mastodon.
	Window time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Verified describes a request whose signature checked out.
type Verified struct {
	// KeyID is the signature's keyId.
	KeyID string
	// Owner is the key's owner; the inbox must check it equals the activity's actor.
	Owner string
	// Algorithm is the label the signature used (for cavage "rsa-sha256",
	// "hs2019", ...; "hs2019" when the header named none; for RFC 9421 the alg
	// parameter, e.g. "rsa-v1_5-sha256").
	Algorithm Algorithm
	// Scheme is "cavage" or "rfc9421".
	Scheme string
	// Headers are the covered headers/components, in signing order.
	Headers []string
}

// Verify checks req's signature over body (the exact bytes read from the
// request; req.Body is not read).
//
// Draft-cavage (Signature, or Authorization: Signature): the header must parse;
// the algorithm must be rsa-sha256, rsa-sha512, hs2019 or ed25519 (or absent);
// the signed headers must include date or (created), (request-target) or
// digest, host for a GET, and digest for a POST or any request with a body; a
// Digest header (SHA-256 or SHA-512) must then be present and match body; Date
// and created must lie within Window of Now, and expires must not have passed.
// The key is resolved through Keys and the signature checked with go-fed/httpsig;
// if that fails, the key is resolved once more with refresh=true (key rotation)
// and checked again.
//
// RFC 9421 (a Signature-Input header): see verifyRFC9421; failures wrap ErrRFC9421.
//
// Every error wraps one sentinel (ErrNoSignature, ErrMalformedSignature,
// ErrDigestMismatch, ErrDateSkew, ErrKeyUnavailable, ErrBadSignature,
// ErrUnsupportedAlgorithm or ErrRFC9421) and gives a reason.
func (v *Verifier) Verify(ctx context.Context, req *http.Request, body []byte) (Verified, error) {
	if v.Keys == nil {
		return Verified{}, fmt.Errorf("%w: verifier has no key resolver", ErrKeyUnavailable)
	}
	if len(req.Header["Signature-Input"]) > 0 {
		return v.verifyRFC9421(ctx, req, body)
	}
	raw, authz := signatureHeader(req.Header)
	if raw == "" {
		return Verified{}, fmt.Errorf("%w: no Signature header", ErrNoSignature)
	}
	p, err := ParseSignatureHeader(raw)
	if err != nil {
		return Verified{}, err
	}
	switch p.Algorithm {
	case "", RSASHA256, RSASHA512, HS2019, Ed25519:
	default:
		return Verified{}, fmt.Errorf("%w: algorithm %q (want rsa-sha256, rsa-sha512, hs2019 or ed25519)", ErrUnsupportedAlgorithm, p.Algorithm)
	}
	signed := func(h string) bool { return slices.Contains(p.Headers, h) }
	if !signed("date") && !signed("(created)") {
		return Verified{}, malformed("neither date nor (created) is signed (headers=%q)", strings.Join(p.Headers, " "))
	}
	if !signed("(request-target)") && !signed("digest") {
		return Verified{}, malformed("neither (request-target) nor digest is signed (headers=%q)", strings.Join(p.Headers, " "))
	}
	if (req.Method == http.MethodGet || req.Method == http.MethodHead) && !signed("host") {
		return Verified{}, malformed("host is not signed on a %s", req.Method)
	}
	if signed("(created)") && p.Created == 0 {
		return Verified{}, malformed("(created) is signed but there is no created parameter")
	}
	if signed("(expires)") && p.Expires == 0 {
		return Verified{}, malformed("(expires) is signed but there is no expires parameter")
	}
	// Digest: go-fed never compares it with the body; we must.
	digest := strings.Join(req.Header["Digest"], ",")
	if len(body) > 0 || req.Method == http.MethodPost {
		if digest == "" {
			return Verified{}, fmt.Errorf("%w: no Digest header on a %s with a %d-byte body", ErrDigestMismatch, methodName(req), len(body))
		}
		if !signed("digest") {
			return Verified{}, malformed("Digest is not among the signed headers (headers=%q)", strings.Join(p.Headers, " "))
		}
	}
	if digest != "" {
		if err := VerifyDigest(digest, body); err != nil {
			return Verified{}, err
		}
	}

	for _, h := range p.Headers {
		if strings.HasPrefix(h, "(") {
			if h != "(request-target)" && h != "(created)" && h != "(expires)" {
				return Verified{}, malformed("unknown pseudo-header %q", h)
			}
			continue
		}
		if h == "host" && req.Host != "" {
			continue
		}
		if len(req.Header[textproto.CanonicalMIMEHeaderKey(h)]) == 0 {
			return Verified{}, malformed("signed header %q is not in the request", h)
		}
	}

	if err := v.checkTimes(req.Header, p.Created, p.Expires); err != nil {
		return Verified{}, err
	}

	res := Verified{KeyID: p.KeyID, Algorithm: p.Algorithm, Scheme: "cavage", Headers: p.Headers}
	if res.Algorithm == "" {
		res.Algorithm = HS2019
	}
	pk, err := v.Keys.ResolveKey(ctx, p.KeyID, false)
	if err != nil {
		return Verified{}, keyErr(p.KeyID, err)
	}
	err = checkCavage(req, raw, authz, p, pk)
	if errors.Is(err, ErrBadSignature) {
		// Key rotation: refetch once and try again with the fresh key.
		pk2, rerr := v.Keys.ResolveKey(ctx, p.KeyID, true)
		if rerr == nil {
			pk, err = pk2, checkCavage(req, raw, authz, p, pk2)
		}
	}
	if err != nil {
		return Verified{}, err
	}
	if pk.Owner == "" {
		return Verified{}, fmt.Errorf("%w: key %s has no owner", ErrKeyUnavailable, p.KeyID)
	}
	res.Owner = pk.Owner
	return res, nil
}

// checkTimes applies the Date window, and the created/expires parameters.
func (v *Verifier) checkTimes(h http.Header, created, expires int64) error {
	window := v.Window
	if window <= 0 {
		window = time.Hour
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	t := now()
	if d := h.Get("Date"); d != "" {
		dt, err := http.ParseTime(d)
		if err != nil {
			return fmt.Errorf("%w: Date %q is not an HTTP date", ErrDateSkew, d)
		}
		if skew := t.Sub(dt); skew > window || skew < -window {
			return fmt.Errorf("%w: Date %s is %s from now (window ±%s)", ErrDateSkew, d, skew.Round(time.Second), window)
		}
	}
	if created != 0 {
		ct := time.Unix(created, 0)
		if skew := t.Sub(ct); skew > window || skew < -window {
			return fmt.Errorf("%w: created %d is %s from now (window ±%s)", ErrDateSkew, created, skew.Round(time.Second), window)
		}
	}
	if expires != 0 && t.Unix() > expires {
		return fmt.Errorf("%w: signature expired at %d, now %d", ErrDateSkew, expires, t.Unix())
	}
	return nil
}

// checkCavage verifies the signature with go-fed/httpsig on a minimal copy of
// the request: only the signed headers, the wire-form request target (go-fed
// signs URL.Path, which is decoded on the server side), and Host from req.Host.
func checkCavage(req *http.Request, raw string, authz bool, p Params, pk PublicKey) error {
	algo, err := goFedAlgorithm(p.Algorithm, pk)
	if err != nil {
		return err
	}
	h := make(http.Header, len(p.Headers)+1)
	for _, name := range p.Headers {
		if name == "host" {
			if vals := req.Header["Host"]; len(vals) > 0 {
				h["Host"] = vals
			} else {
				h["Host"] = []string{req.Host}
			}
			continue
		}
		k := textproto.CanonicalMIMEHeaderKey(name)
		if vals, ok := req.Header[k]; ok {
			h[k] = vals
		}
	}
	if authz {
		h["Authorization"] = []string{raw}
	} else {
		h["Signature"] = []string{raw}
	}
	path, query, _ := strings.Cut(pathAndQuery(req), "?")
	r2 := &http.Request{Method: req.Method, URL: &url.URL{Path: path, RawQuery: query}, Header: h, Host: req.Host}
	if r2.Method == "" {
		r2.Method = http.MethodGet
	}
	gv, err := httpsig.NewVerifier(r2)
	if err != nil {
		return malformed("go-fed/httpsig cannot parse the signature: %v", err)
	}
	if gv.KeyId() != p.KeyID {
		return malformed("parsers disagree on keyId (%q vs %q)", gv.KeyId(), p.KeyID)
	}
	if err := gv.Verify(pk.Key, algo); err != nil {
		return fmt.Errorf("%w: %s with key %s: %v", ErrBadSignature, algoName(p.Algorithm), p.KeyID, err)
	}
	return nil
}

// goFedAlgorithm maps a header algorithm label and the key type to the
// go-fed algorithm that checks it. A key of the wrong type is reported as a bad
// signature, so that the verifier refetches once (the key may have rotated).
func goFedAlgorithm(label Algorithm, pk PublicKey) (httpsig.Algorithm, error) {
	switch pk.Key.(type) {
	case *rsa.PublicKey:
		switch label {
		case RSASHA256, HS2019, "":
			return httpsig.RSA_SHA256, nil
		case RSASHA512:
			return httpsig.RSA_SHA512, nil
		}
	case ed25519.PublicKey:
		switch label {
		case Ed25519, HS2019, "":
			return httpsig.ED25519, nil
		}
	default:
		return "", fmt.Errorf("%w: key %s is a %T", ErrUnsupportedAlgorithm, pk.ID, pk.Key)
	}
	return "", fmt.Errorf("%w: algorithm %s does not fit key %s (%T)", ErrBadSignature, label, pk.ID, pk.Key)
}

// signatureHeader returns the cavage signature parameters and whether they came
// from Authorization.
func signatureHeader(h http.Header) (string, bool) {
	if s := h.Get("Signature"); s != "" {
		return s, false
	}
	a := h.Get("Authorization")
	if len(a) > len("signature ") && strings.EqualFold(a[:len("signature ")], "signature ") {
		return a, true
	}
	return "", false
}

func keyErr(keyID string, err error) error {
	if errors.Is(err, ErrKeyUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrKeyUnavailable, keyID, err)
}

func methodName(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}

func algoName(a Algorithm) string {
	if a == "" {
		return "(no algorithm)"
	}
	return string(a)
}
