package signing

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"time"
)

// Verifier checks the signatures of incoming requests. The zero Window and Now
// take their defaults, so a Verifier literal with only Keys set is usable. It
// holds no mutable state and is safe for concurrent use.
type Verifier struct {
	// Keys resolves keyIds (normally a *KeyCache).
	Keys KeyResolver
	// Window is the clock-skew margin of Mastodon's window (see
	// checkTimes): how far a signed time may lie ahead of Now, and how far
	// past its expiry Now may lie; default 1 h, as Mastodon's.
	Window time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Backend checks RSA signatures; nil is the Go backend (crypto/rsa).
	Backend Backend
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
// The header is parsed once, by ParseSignatureHeader, and every clock check
// uses Now and Window. The key is resolved through Keys and the signature
// checked against the signing string rebuilt from the parsed parameters; if
// that fails, the key is resolved once more with refresh=true (key rotation)
// and checked again.
//
// RFC 9421 (a Signature-Input header): see verifyRFC9421; failures wrap ErrRFC9421.
//
// Every error wraps one sentinel (ErrNoSignature, ErrMalformedSignature,
// ErrDigestMismatch, ErrDateSkew, ErrKeyUnavailable, ErrBadSignature,
// ErrUnsupportedAlgorithm or ErrRFC9421) and gives a reason.
func (v *Verifier) Verify(ctx context.Context, req *http.Request, body []byte) (Verified, error) {
	return v.VerifyParsed(ctx, req, body, ParseRequest(req.Header))
}

// VerifyParsed is Verify with req's signature header already parsed by ParseRequest, so a
// handler that also reads the keyId (to log it, or before verifying) parses it once.
func (v *Verifier) VerifyParsed(ctx context.Context, req *http.Request, body []byte, sig RequestSignature) (Verified, error) {
	if v.Keys == nil {
		return Verified{}, fmt.Errorf("%w: verifier has no key resolver", ErrKeyUnavailable)
	}
	if sig.rfc9421 {
		return v.verifyRFC9421(ctx, req, body)
	}
	if sig.Err != nil {
		return Verified{}, sig.Err
	}
	p := sig.Params
	switch p.Algorithm {
	case "", RSASHA256, RSASHA512, HS2019, Ed25519:
	default:
		return Verified{}, fmt.Errorf("%w: algorithm %q (want rsa-sha256, rsa-sha512, hs2019 or ed25519)", ErrUnsupportedAlgorithm, p.Algorithm)
	}
	if err := checkCavageCoverage(req, p); err != nil {
		return Verified{}, err
	}
	if err := checkCavageDigest(req, p, body); err != nil {
		return Verified{}, err
	}
	if err := checkSignedHeadersPresent(req, p); err != nil {
		return Verified{}, err
	}
	if err := v.checkTimes(req.Header, p.Created, p.Expires); err != nil {
		return Verified{}, err
	}

	res := Verified{KeyID: p.KeyID, Algorithm: p.Algorithm, Scheme: "cavage", Headers: p.Headers}
	if res.Algorithm == "" {
		res.Algorithm = HS2019
	}
	pk, err := v.resolveAndCheck(ctx, p.KeyID, func(pk PublicKey) error { return checkCavage(v.Backend, req, p, pk) })
	if err != nil {
		return Verified{}, err
	}
	if pk.Owner == "" {
		return Verified{}, fmt.Errorf("%w: key %s has no owner", ErrKeyUnavailable, p.KeyID)
	}
	res.Owner = pk.Owner
	return res, nil
}

// checkCavageCoverage requires the signed headers that bind the signature
// to this request: a time, its target (or digest), host on a GET or HEAD,
// and the created/expires parameters that (created)/(expires) sign.
func checkCavageCoverage(req *http.Request, p Params) error {
	signed := func(h string) bool { return slices.Contains(p.Headers, h) }
	if !signed("date") && !signed("(created)") {
		return malformed("neither date nor (created) is signed (headers=%q)", strings.Join(p.Headers, " "))
	}
	if !signed("(request-target)") && !signed("digest") {
		return malformed("neither (request-target) nor digest is signed (headers=%q)", strings.Join(p.Headers, " "))
	}
	if (req.Method == http.MethodGet || req.Method == http.MethodHead) && !signed("host") {
		return malformed("host is not signed on a %s", req.Method)
	}
	if signed("(created)") && p.Created == 0 {
		return malformed("(created) is signed but there is no created parameter")
	}
	if signed("(expires)") && p.Expires == 0 {
		return malformed("(expires) is signed but there is no expires parameter")
	}
	return nil
}

// checkCavageDigest binds the body: the signature covers the Digest header,
// not the body, so a POST or a request with a body needs a signed Digest, and
// any Digest present must match the body.
func checkCavageDigest(req *http.Request, p Params, body []byte) error {
	digest := strings.Join(req.Header["Digest"], ",")
	if len(body) > 0 || req.Method == http.MethodPost {
		if digest == "" {
			return fmt.Errorf("%w: no Digest header on a %s with a %d-byte body", ErrDigestMismatch, methodName(req), len(body))
		}
		if !slices.Contains(p.Headers, "digest") {
			return malformed("Digest is not among the signed headers (headers=%q)", strings.Join(p.Headers, " "))
		}
	}
	if digest != "" {
		return VerifyDigest(digest, body)
	}
	return nil
}

// checkSignedHeadersPresent requires every signed header in the request and
// every signed pseudo-header to be one draft-cavage defines.
func checkSignedHeadersPresent(req *http.Request, p Params) error {
	for _, h := range p.Headers {
		if strings.HasPrefix(h, "(") {
			if h != "(request-target)" && h != "(created)" && h != "(expires)" {
				return malformed("unknown pseudo-header %q", h)
			}
			continue
		}
		if h == "host" && req.Host != "" {
			continue
		}
		if len(req.Header[textproto.CanonicalMIMEHeaderKey(h)]) == 0 {
			return malformed("signed header %q is not in the request", h)
		}
	}
	return nil
}

// resolveAndCheck resolves keyID and runs check with the key. When check
// says ErrBadSignature the key may have rotated: it is resolved once more,
// refreshed, and checked again. It returns the key that was checked last.
func (v *Verifier) resolveAndCheck(ctx context.Context, keyID string, check func(PublicKey) error) (PublicKey, error) {
	pk, err := v.Keys.ResolveKey(ctx, keyID, false)
	if err != nil {
		return PublicKey{}, keyErr(keyID, err)
	}
	err = check(pk)
	if errors.Is(err, ErrBadSignature) {
		if fresh, rerr := v.Keys.ResolveKey(ctx, keyID, true); rerr == nil {
			pk, err = fresh, check(fresh)
		}
	}
	return pk, err
}

// Mastodon's clock window (SignedRequest#matches_time_window?): a signature
// expires at its expires parameter, else DefaultExpiry after it was made,
// and never later than MaxExpiry after; it is refused once now lies more
// than the skew margin (Verifier.Window) past that, or when it was made more
// than the margin ahead of now. A plain Date is so good from 1 h ahead to
// 65 min old.
const (
	DefaultExpiry = 5 * time.Minute
	MaxExpiry     = 12 * time.Hour
)

// checkTimes applies Mastodon's window to each signed time: the Date
// header, and the created parameter (with expires) when present.
func (v *Verifier) checkTimes(h http.Header, created, expires int64) error {
	margin := v.Window
	if margin <= 0 {
		margin = time.Hour
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
		if err := inWindow(t, dt, time.Time{}, margin); err != nil {
			return fmt.Errorf("%w: Date %s %s", ErrDateSkew, d, err)
		}
	}
	if created != 0 {
		var exp time.Time
		if expires != 0 {
			exp = time.Unix(expires, 0)
		}
		if err := inWindow(t, time.Unix(created, 0), exp, margin); err != nil {
			return fmt.Errorf("%w: created %d %s", ErrDateSkew, created, err)
		}
	} else if expires != 0 && t.After(time.Unix(expires, 0).Add(margin)) {
		return fmt.Errorf("%w: signature expired at %d, %s before now, more than the %s skew margin", ErrDateSkew, expires, t.Sub(time.Unix(expires, 0)).Round(time.Second), margin)
	}
	return nil
}

// inWindow judges a signature made at made (expiring at exp, or zero for
// DefaultExpiry) at time now, with Mastodon's rule; the error says how far
// off it was, in words whose sign cannot be misread.
func inWindow(now, made, exp time.Time, margin time.Duration) error {
	if ahead := made.Sub(now); ahead > margin {
		return fmt.Errorf("is %s ahead of now: at most %s ahead is accepted", ahead.Round(time.Second), margin)
	}
	if exp.IsZero() {
		exp = made.Add(DefaultExpiry)
	}
	exp = minTime(exp, made.Add(MaxExpiry))
	if late := now.Sub(exp); late > margin {
		return fmt.Errorf("is %s old: it expired at %s, %s ago, more than the %s skew margin", now.Sub(made).Round(time.Second),
			exp.UTC().Format(time.RFC3339), late.Round(time.Second), margin)
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// checkCavage rebuilds the signing string from the parsed parameters (the
// one parse of the header) and checks the signature against it. The
// request-target is the wire form (RequestURI), as senders sign it.
func checkCavage(b Backend, req *http.Request, p Params, pk PublicKey) error {
	var arr [512]byte
	msg, err := appendSigningString(arr[:0], req, requestTarget(req), slices.Values(p.Headers), p.Created, p.Expires)
	if err != nil {
		return err
	}
	return verifyCavage(b, p, pk, msg)
}

// verifyCavage checks p.Signature over msg under the header's algorithm label and the
// key's type: an RSA key takes rsa-sha256, hs2019 or no label as PKCS#1 v1.5
// SHA-256 (what every fediverse sender means by them) and rsa-sha512 as
// PKCS#1 v1.5 SHA-512; an Ed25519 key takes ed25519, hs2019 or no label. A
// label that does not fit the key is a bad signature, so that the verifier
// refetches once (the key may have rotated). b (nil: Go) checks RSA.
func verifyCavage(b Backend, p Params, pk PublicKey, msg []byte) error {
	label, sig := p.Algorithm, p.Signature
	switch k := pk.Key.(type) {
	case *rsa.PublicKey:
		var err error
		switch label {
		case RSASHA256, HS2019, "":
			sum := sha256.Sum256(msg)
			err = backendOr(b).VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig)
		case RSASHA512:
			sum := sha512.Sum512(msg)
			err = backendOr(b).VerifyPKCS1v15(k, crypto.SHA512, sum[:], sig)
		default:
			return fmt.Errorf("%w: algorithm %s does not fit key %s (%T)", ErrBadSignature, label, p.KeyID, pk.Key)
		}
		if err != nil {
			return fmt.Errorf("%w: %s with key %s: %v", ErrBadSignature, algoName(label), p.KeyID, err)
		}
		return nil
	case ed25519.PublicKey:
		switch label {
		case Ed25519, HS2019, "":
			if !ed25519.Verify(k, msg, sig) {
				return fmt.Errorf("%w: %s with key %s", ErrBadSignature, algoName(label), p.KeyID)
			}
			return nil
		}
		return fmt.Errorf("%w: algorithm %s does not fit key %s (%T)", ErrBadSignature, label, p.KeyID, pk.Key)
	default:
		return fmt.Errorf("%w: key %s is a %T", ErrUnsupportedAlgorithm, p.KeyID, pk.Key)
	}
}

// RequestSignature is a request's signature header parsed once: for draft-cavage, Params
// when Err is nil; an RFC 9421 request (Signature-Input) is left to the verifier whole.
type RequestSignature struct {
	// Params are the cavage parameters; valid only when Err is nil.
	Params Params
	// Err wraps ErrNoSignature or ErrMalformedSignature when there is no usable cavage header.
	Err error

	rfc9421 bool
}

// ParseRequest parses h's cavage signature, from Signature or else from an Authorization
// header of the Signature scheme; a request with Signature-Input is RFC 9421 and not parsed.
func ParseRequest(h http.Header) RequestSignature {
	if len(h["Signature-Input"]) > 0 {
		return RequestSignature{rfc9421: true, Err: fmt.Errorf("%w: an RFC 9421 signature", ErrRFC9421)}
	}
	raw := h.Get("Signature")
	if a := h.Get("Authorization"); raw == "" && len(a) > len("signature ") && strings.EqualFold(a[:len("signature ")], "signature ") {
		raw = a
	}
	if raw == "" {
		return RequestSignature{Err: fmt.Errorf("%w: no Signature header", ErrNoSignature)}
	}
	p, err := ParseSignatureHeader(raw)
	return RequestSignature{Params: p, Err: err}
}

// KeyID is the keyId of a cavage signature that parses, "" otherwise.
func (s RequestSignature) KeyID() string {
	if s.Err != nil {
		return ""
	}
	return s.Params.KeyID
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
