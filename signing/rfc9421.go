package signing

import (
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"
)

// RFC 9421 algorithm identifiers this package verifies.
const (
	RFC9421RSAv15SHA256 Algorithm = "rsa-v1_5-sha256"
	RFC9421RSAPSSSHA512 Algorithm = "rsa-pss-sha512"
	RFC9421Ed25519      Algorithm = "ed25519"
)

// verifyRFC9421 verifies an RFC 9421 HTTP Message Signature under the
// inbox's profile, which is what Mastodon (app/lib/signed_request.rb)
// requires of an incoming RFC 9421 request: the first label in
// Signature-Input that has a byte-sequence entry in Signature is checked;
// keyid and created are required; @method and @target-uri must be
// covered, and content-digest on a POST (or any request with a body), whose
// Content-Digest must carry a matching sha-256 (a sha-512 beside it must
// match too); created lies within the Window. Algorithms: rsa-v1_5-sha256,
// rsa-pss-sha512 and ed25519, or no alg (the key decides). Components
// beyond the required: @authority, @scheme, @request-target, @path,
// @query, @query-param;name and header fields. Every error wraps
// ErrRFC9421 and, where one fits, the matching cavage sentinel too
// (ErrDigestMismatch, ErrDateSkew, ...), with a reason.
func (v *Verifier) verifyRFC9421(ctx context.Context, req *http.Request, body []byte) (Verified, error) {
	s, err := parseRFC9421(req.Header)
	if err != nil {
		return Verified{}, err
	}
	if err := s.checkCoverage(); err != nil {
		return Verified{}, err
	}
	if err := s.checkDigest(req, body); err != nil {
		return Verified{}, err
	}
	if err := v.checkTimes(req.Header, s.created, s.expires); err != nil {
		return Verified{}, fmt.Errorf("%w: %w", ErrRFC9421, err)
	}
	base, rawBase, err := s.bases(req)
	if err != nil {
		return Verified{}, err
	}
	pk, err := v.resolveAndCheck(ctx, s.keyID, func(pk PublicKey) error {
		err := verify9421(v.Backend, s.alg, pk, base, s.sig)
		if err != nil && rawBase != nil && verify9421(v.Backend, s.alg, pk, rawBase, s.sig) == nil {
			return nil
		}
		return err
	})
	if err != nil {
		return Verified{}, fmt.Errorf("%w: %w", ErrRFC9421, err)
	}
	if pk.Owner == "" {
		return Verified{}, rfcErr(ErrKeyUnavailable, "key %s has no owner", s.keyID)
	}
	return Verified{KeyID: s.keyID, Owner: pk.Owner, Algorithm: s.algorithmFor(pk), Scheme: "rfc9421", Headers: s.comps}, nil
}

// rfc9421Signature is the one signature verifyRFC9421 checks: a
// Signature-Input member with its parameters read, and its bytes from
// Signature.
type rfc9421Signature struct {
	label            string
	in               httpsfv.InnerList
	sig              []byte
	keyID            string
	alg              Algorithm // "" when the member names none
	created, expires int64     // 0 when absent
	comps            []string  // covered component identifiers, in order
}

// parseRFC9421 reads Signature-Input and Signature, picks the signature to
// check and reads its parameters and covered components.
func parseRFC9421(h http.Header) (rfc9421Signature, error) {
	inputs, err := httpsfv.UnmarshalDictionary(h["Signature-Input"])
	if err != nil {
		return rfc9421Signature{}, rfcErr(ErrMalformedSignature, "Signature-Input: %v", err)
	}
	sigs, err := httpsfv.UnmarshalDictionary(h["Signature"])
	if err != nil {
		return rfc9421Signature{}, rfcErr(ErrMalformedSignature, "Signature: %v", err)
	}
	label, in, sig := pickSignature(inputs, sigs)
	if sig == nil {
		return rfc9421Signature{}, rfcErr(ErrNoSignature, "no Signature entry matches a Signature-Input label %q", inputs.Names())
	}
	s := rfc9421Signature{label: label, in: in, sig: sig}
	if err := s.readParams(); err != nil {
		return rfc9421Signature{}, err
	}
	if s.comps, err = coveredComponents(in); err != nil {
		return rfc9421Signature{}, err
	}
	return s, nil
}

// readParams reads keyid (required), alg (one this package verifies),
// created and expires from the member's parameters; others are ignored.
func (s *rfc9421Signature) readParams() error {
	for _, k := range s.in.Params.Names() {
		v, _ := s.in.Params.Get(k)
		switch k {
		case "keyid", "alg":
			str, ok := v.(string)
			if !ok {
				return rfcErr(ErrMalformedSignature, "parameter %s is not a string", k)
			}
			if k == "keyid" {
				s.keyID = str
			} else {
				s.alg = Algorithm(str)
			}
		case "created", "expires":
			n, ok := v.(int64)
			if !ok || n <= 0 {
				return rfcErr(ErrMalformedSignature, "parameter %s is not a positive integer", k)
			}
			if k == "created" {
				s.created = n
			} else {
				s.expires = n
			}
		}
	}
	if s.keyID == "" {
		return rfcErr(ErrMalformedSignature, "signature %s has no keyid", s.label)
	}
	switch s.alg {
	case "", RFC9421RSAv15SHA256, RFC9421RSAPSSSHA512, RFC9421Ed25519:
		return nil
	}
	return rfcErr(ErrUnsupportedAlgorithm, "alg %q (want rsa-v1_5-sha256, rsa-pss-sha512 or ed25519)", s.alg)
}

func (s *rfc9421Signature) covers(c string) bool { return slices.Contains(s.comps, c) }

// checkCoverage requires what binds the signature to this request, as
// Mastodon does: a created parameter, @method and @target-uri.
func (s *rfc9421Signature) checkCoverage() error {
	if s.created == 0 {
		return rfcErr(ErrMalformedSignature, "signature %s has no created parameter (Mastodon requires one)", s.label)
	}
	if !s.covers("@method") || !s.covers("@target-uri") {
		return rfcErr(ErrMalformedSignature, "@method and @target-uri must both be covered, as Mastodon requires (components %q)", s.comps)
	}
	return nil
}

// checkDigest binds the body: a POST or a request with a body needs a covered
// Content-Digest, and any Content-Digest present must match the body.
func (s *rfc9421Signature) checkDigest(req *http.Request, body []byte) error {
	cd := strings.Join(req.Header["Content-Digest"], ", ")
	if len(body) > 0 || req.Method == http.MethodPost {
		if cd == "" {
			return rfcErr(ErrDigestMismatch, "no Content-Digest header on a %s with a %d-byte body", methodName(req), len(body))
		}
		if !s.covers("content-digest") {
			return rfcErr(ErrMalformedSignature, "content-digest is not covered (components %q)", s.comps)
		}
	}
	if cd != "" {
		if !strings.Contains(cd, "sha-256=") {
			return rfcErr(ErrDigestMismatch, "Content-Digest %q has no sha-256 (Mastodon requires it)", cd)
		}
		if err := verifyContentDigest(cd, body); err != nil {
			return fmt.Errorf("%w: %w", ErrRFC9421, err)
		}
	}
	return nil
}

// bases builds the signature base with the canonical serialisation of the
// parameters and, when the sender's own text differs, with that text too
// (rawBase; nil otherwise): a sender that serialised its parameters
// non-canonically most likely signed its own text.
func (s *rfc9421Signature) bases(req *http.Request) (base, rawBase []byte, err error) {
	params, err := httpsfv.Marshal(s.in)
	if err != nil {
		return nil, nil, rfcErr(ErrMalformedSignature, "Signature-Input %s: %v", s.label, err)
	}
	if base, err = signatureBase(req, s.comps, params); err != nil {
		return nil, nil, err
	}
	if raw := memberText(req.Header["Signature-Input"], s.label); raw != params {
		rawBase, _ = signatureBase(req, s.comps, raw)
	}
	return base, rawBase, nil
}

// algorithmFor is the alg the signature used: its alg parameter, or when it
// named none the one derived from the key that verified it.
func (s *rfc9421Signature) algorithmFor(pk PublicKey) Algorithm {
	if s.alg != "" {
		return s.alg
	}
	if _, ok := pk.Key.(ed25519.PublicKey); ok {
		return RFC9421Ed25519
	}
	return RFC9421RSAv15SHA256
}

func rfcErr(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrRFC9421, sentinel, fmt.Sprintf(format, args...))
}

// pickSignature is the first Signature-Input label that is an inner list and
// has a non-empty byte sequence in Signature; sig is nil when none has.
func pickSignature(inputs, sigs *httpsfv.Dictionary) (label string, in httpsfv.InnerList, sig []byte) {
	for _, label := range inputs.Names() {
		m, _ := inputs.Get(label)
		in, ok := m.(httpsfv.InnerList)
		if !ok {
			continue
		}
		s, _ := sigs.Get(label)
		if it, ok := s.(httpsfv.Item); ok {
			if b, ok := it.Value.([]byte); ok && len(b) > 0 {
				return label, in, b
			}
		}
	}
	return "", httpsfv.InnerList{}, nil
}

// coveredComponents lists the component identifiers of a Signature-Input
// member, each once: a name, or for @query-param its name parameter too
// (`@query-param;name="Pet"`, as the signature base writes it). Other
// component parameters (sf, key, bs, req, tr) are not supported.
func coveredComponents(in httpsfv.InnerList) ([]string, error) {
	comps := make([]string, 0, len(in.Items))
	for _, it := range in.Items {
		c, ok := it.Value.(string)
		if !ok {
			return nil, rfcErr(ErrMalformedSignature, "component identifier is not a string")
		}
		names := it.Params.Names()
		if c == "@query-param" {
			v, _ := it.Params.Get("name")
			name, ok := v.(string)
			if len(names) != 1 || !ok {
				return nil, rfcErr(ErrMalformedSignature, "@query-param needs exactly one parameter, name, a string")
			}
			c += ";name=" + strconv.Quote(name)
		} else if len(names) > 0 {
			return nil, rfcErr(ErrUnsupportedAlgorithm, "component %q has parameters (;%s), which this verifier does not support", c, names[0])
		}
		if slices.Contains(comps, c) {
			return nil, rfcErr(ErrMalformedSignature, "component %q covered twice", c)
		}
		comps = append(comps, c)
	}
	return comps, nil
}

// verify9421 checks a remote actor's RFC 9421 signature: an RSA key
// (rsa-v1_5-sha256, or rsa-pss-sha512 when alg says so) or an Ed25519 key,
// the keys actors publish; any other key is refused here whatever
// verifyRFC9421With could check (see doc.go, the inbox's profile). RSA
// operations go through b (nil: Go's crypto/rsa).
func verify9421(b Backend, alg Algorithm, pk PublicKey, base, sig []byte) error {
	switch pk.Key.(type) {
	case *rsa.PublicKey, ed25519.PublicKey:
	default:
		return fmt.Errorf("%w: key %s is a %T: remote actors' RFC 9421 keys are RSA or Ed25519", ErrUnsupportedAlgorithm, pk.ID, pk.Key)
	}
	if err := verifyRFC9421With(b, alg, pk.Key, base, sig); err != nil {
		return fmt.Errorf("key %s: %w", pk.ID, err)
	}
	return nil
}

// verifyContentDigest checks an RFC 9530 Content-Digest header (sha-256 and/or
// sha-512 byte sequences; others ignored, at least one understood).
func verifyContentDigest(h string, body []byte) error {
	members, err := httpsfv.UnmarshalDictionary([]string{h})
	if err != nil {
		return fmt.Errorf("%w: Content-Digest: %v", ErrDigestMismatch, err)
	}
	checked := 0
	for _, name := range members.Names() {
		var sum []byte
		switch name {
		case "sha-256":
			s := sha256.Sum256(body)
			sum = s[:]
		case "sha-512":
			s := sha512.Sum512(body)
			sum = s[:]
		default:
			continue
		}
		checked++
		m, _ := members.Get(name)
		it, _ := m.(httpsfv.Item)
		got, ok := it.Value.([]byte)
		if !ok {
			return fmt.Errorf("%w: Content-Digest %s is not a byte sequence", ErrDigestMismatch, name)
		}
		if subtle.ConstantTimeCompare(got, sum) != 1 {
			return fmt.Errorf("%w: Content-Digest says %s :%s:, the body hashes to :%s: instead", ErrDigestMismatch, name,
				base64.StdEncoding.EncodeToString(got), base64.StdEncoding.EncodeToString(sum))
		}
	}
	if checked == 0 {
		return fmt.Errorf("%w: Content-Digest %q has no sha-256 or sha-512 member", ErrDigestMismatch, h)
	}
	return nil
}
