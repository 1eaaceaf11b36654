package signing

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	"github.com/dunglas/httpsfv"
)

// RFC 9421 algorithm identifiers this package verifies.
const (
	RFC9421RSAv15SHA256 Algorithm = "rsa-v1_5-sha256"
	RFC9421RSAPSSSHA512 Algorithm = "rsa-pss-sha512"
	RFC9421Ed25519      Algorithm = "ed25519"
)

// verifyRFC9421 verifies an RFC 9421 HTTP Message Signature. The first label
// in Signature-Input that has a byte-sequence entry in Signature is checked.
// Supported: components @method, @authority, @scheme, @target-uri,
// @request-target, @path, @query and plain header fields (no component
// parameters); algorithms rsa-v1_5-sha256, rsa-pss-sha512 and ed25519 (or no
// alg, derived from the key). Required: @method; one of @target-uri,
// @request-target or @path; a created parameter or a covered date;
// content-digest covered and matching for a POST or any request with a body.
// Every error wraps ErrRFC9421 and, where one fits, the matching cavage
// sentinel too (ErrDigestMismatch, ErrDateSkew, ...), with a reason.
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

// checkCoverage requires the components that bind the signature to this
// request: @method, its target, and a time (created or date).
func (s *rfc9421Signature) checkCoverage() error {
	if !s.covers("@method") {
		return rfcErr(ErrMalformedSignature, "@method is not covered (components %q)", s.comps)
	}
	if !s.covers("@target-uri") && !s.covers("@request-target") && !s.covers("@path") {
		return rfcErr(ErrMalformedSignature, "none of @target-uri, @request-target, @path is covered (components %q)", s.comps)
	}
	if s.created == 0 && !s.covers("date") {
		return rfcErr(ErrMalformedSignature, "no created parameter and date is not covered")
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
// member: strings, without parameters, each once.
func coveredComponents(in httpsfv.InnerList) ([]string, error) {
	comps := make([]string, 0, len(in.Items))
	for _, it := range in.Items {
		c, ok := it.Value.(string)
		if !ok {
			return nil, rfcErr(ErrMalformedSignature, "component identifier is not a string")
		}
		if names := it.Params.Names(); len(names) > 0 {
			return nil, rfcErr(ErrUnsupportedAlgorithm, "component %q has parameters (;%s), which this verifier does not support", c, names[0])
		}
		if slices.Contains(comps, c) {
			return nil, rfcErr(ErrMalformedSignature, "component %q covered twice", c)
		}
		comps = append(comps, c)
	}
	return comps, nil
}

// signatureBase builds the RFC 9421 §2.5 signature base.
func signatureBase(req *http.Request, comps []string, params string) ([]byte, error) {
	var b []byte
	scheme := requestScheme(req)
	authority := strings.ToLower(req.Host)
	if authority == "" && req.URL != nil {
		authority = strings.ToLower(req.URL.Host)
	}
	if scheme == "https" {
		authority = strings.TrimSuffix(authority, ":443")
	} else if scheme == "http" {
		authority = strings.TrimSuffix(authority, ":80")
	}
	pq := pathAndQuery(req)
	path, query, hasQuery := strings.Cut(pq, "?")
	for _, c := range comps {
		var val string
		switch c {
		case "@method":
			val = methodName(req)
		case "@authority":
			val = authority
		case "@scheme":
			val = scheme
		case "@target-uri":
			val = scheme + "://" + authority + pq
		case "@request-target":
			val = pq
		case "@path":
			val = path
		case "@query":
			val = "?"
			if hasQuery {
				val += query
			}
		case "@signature-params":
			return nil, rfcErr(ErrMalformedSignature, "@signature-params must not be covered")
		default:
			if strings.HasPrefix(c, "@") {
				return nil, rfcErr(ErrUnsupportedAlgorithm, "derived component %q is not supported", c)
			}
			if c != strings.ToLower(c) {
				return nil, rfcErr(ErrMalformedSignature, "component %q is not lower-case", c)
			}
			var vals []string
			if c == "host" && len(req.Header["Host"]) == 0 && req.Host != "" {
				vals = []string{req.Host}
			} else {
				vals = req.Header[textproto.CanonicalMIMEHeaderKey(c)]
			}
			if len(vals) == 0 {
				return nil, rfcErr(ErrMalformedSignature, "covered header %q is not in the request", c)
			}
			for i, v := range vals {
				if i > 0 {
					val += ", "
				}
				val += strings.TrimSpace(v)
			}
		}
		if strings.ContainsAny(val, "\r\n") {
			return nil, rfcErr(ErrMalformedSignature, "component %q contains a newline", c)
		}
		b = append(b, '"')
		b = append(b, c...)
		b = append(b, `": `...)
		b = append(b, val...)
		b = append(b, '\n')
	}
	b = append(b, `"@signature-params": `...)
	b = append(b, params...)
	return b, nil
}

// requestScheme is the scheme the request arrived over: the URL's (client
// side), TLS on the connection, X-Forwarded-Proto from a proxy, else http.
func requestScheme(req *http.Request) string {
	if req.URL != nil && req.URL.Scheme != "" {
		return strings.ToLower(req.URL.Scheme)
	}
	if req.TLS != nil {
		return "https"
	}
	if p := req.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		return p
	}
	return "http"
}

func verify9421(b Backend, alg Algorithm, pk PublicKey, base, sig []byte) error {
	switch k := pk.Key.(type) {
	case *rsa.PublicKey:
		switch alg {
		case "", RFC9421RSAv15SHA256:
			sum := sha256.Sum256(base)
			if err := backendOr(b).VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig); err != nil {
				return fmt.Errorf("%w: rsa-v1_5-sha256 with key %s: %v", ErrBadSignature, pk.ID, err)
			}
			return nil
		case RFC9421RSAPSSSHA512:
			sum := sha512.Sum512(base)
			if err := backendOr(b).VerifyPSS(k, crypto.SHA512, sum[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthAuto}); err != nil {
				return fmt.Errorf("%w: rsa-pss-sha512 with key %s: %v", ErrBadSignature, pk.ID, err)
			}
			return nil
		}
	case ed25519.PublicKey:
		if alg == "" || alg == RFC9421Ed25519 {
			if !ed25519.Verify(k, base, sig) {
				return fmt.Errorf("%w: ed25519 with key %s", ErrBadSignature, pk.ID)
			}
			return nil
		}
	default:
		return fmt.Errorf("%w: key %s is a %T", ErrUnsupportedAlgorithm, pk.ID, pk.Key)
	}
	return fmt.Errorf("%w: alg %s does not fit key %s (%T)", ErrBadSignature, alg, pk.ID, pk.Key)
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
			return fmt.Errorf("%w: body %s is :%s:, Content-Digest says :%s:", ErrDigestMismatch, name,
				base64.StdEncoding.EncodeToString(sum), base64.StdEncoding.EncodeToString(got))
		}
	}
	if checked == 0 {
		return fmt.Errorf("%w: Content-Digest %q has no sha-256 or sha-512 member", ErrDigestMismatch, h)
	}
	return nil
}
