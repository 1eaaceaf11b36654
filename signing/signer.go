package signing

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// Key is the private-key operation. It is kept this small so that a faster
// signer (OpenSSL, an HSM, Ed25519) can replace *rsa.PrivateKey without
// touching the rest: Public must return *rsa.PublicKey or ed25519.PublicKey,
// and Sign follows crypto.Signer (RSA: PKCS#1 v1.5 over a digest with
// opts = the hash; Ed25519: the whole message with opts = crypto.Hash(0)).
// *rsa.PrivateKey and ed25519.PrivateKey satisfy it.
type Key interface{ crypto.Signer }

// Algorithm is the draft-cavage algorithm label written to (or read from) the
// Signature header.
type Algorithm string

const (
	// RSASHA256 is the default: RSASSA-PKCS1-v1_5 with SHA-256. Every fediverse
	// verifier accepts it; Joyent's http-signature and activitypub-http-signatures
	// reject the hs2019 label.
	RSASHA256 Algorithm = "rsa-sha256"
	// HS2019 labels the signature "hs2019" (algorithm derived from the key).
	// With an RSA key it signs RSASSA-PKCS1-v1_5/SHA-256, as Mastodon does; with
	// an Ed25519 key it signs Ed25519.
	HS2019 Algorithm = "hs2019"
	// RSASHA512 is RSASSA-PKCS1-v1_5 with SHA-512.
	RSASHA512 Algorithm = "rsa-sha512"
	// Ed25519 is Ed25519 over the signing string; needs an Ed25519 key.
	Ed25519 Algorithm = "ed25519"
)

const (
	// ContentTypeActivity is the Content-Type SignPost sets when none is set.
	ContentTypeActivity = "application/activity+json"
	// AcceptActivity is the Accept header SignGet (and apclient) send when none
	// is set: both media types real servers serve actors under.
	AcceptActivity = `application/activity+json, application/ld+json; profile="https://www.w3.org/ns/activitystreams"`
	// DefaultUserAgent is used when SignerOptions.UserAgent is empty. GoToSocial
	// answers 418 to an empty User-Agent.
	DefaultUserAgent = "crowd/dev"
)

// PostHeaders and GetHeaders are the headers parameter SignPost and SignGet write.
const (
	PostHeaders = "(request-target) host date digest content-type"
	GetHeaders  = "(request-target) host date accept"
)

// SignerOptions configures a Signer. The zero value is usable.
type SignerOptions struct {
	// Algorithm is the label to sign with; default RSASHA256.
	Algorithm Algorithm
	// UserAgent is set on requests that have none; default DefaultUserAgent.
	// Callers pass something like "crowd/1.2.3 (+https://github.com/crowdfed/crowd)".
	UserAgent string
	// Now gives the time for the Date header; default time.Now.
	Now func() time.Time
}

// Signer signs outgoing requests with draft-cavage HTTP signatures. It holds
// only immutable configuration, so one Signer is safe for concurrent use by any
// number of goroutines (unlike go-fed/httpsig signers). It builds the signing
// string itself; the private-key operation is delegated to Key.
type Signer struct {
	alg Algorithm
	ua  string
	now func() time.Time
}

// NewSigner returns a Signer for o. An unknown Algorithm is reported by the
// first Sign call (wrapping ErrUnsupportedAlgorithm), not here.
func NewSigner(o SignerOptions) *Signer {
	s := &Signer{alg: Algorithm(strings.ToLower(string(o.Algorithm))), ua: o.UserAgent, now: o.Now}
	if s.alg == "" {
		s.alg = RSASHA256
	}
	if s.ua == "" {
		s.ua = DefaultUserAgent
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Algorithm returns the label this Signer writes.
func (s *Signer) Algorithm() Algorithm { return s.alg }

// SignPost signs a request carrying body (normally a POST to an inbox). It sets
// req.Host (from the URL when empty) and a Host header with the same value (so
// header-map based tools see it; net/http never sends Header["Host"]), Date in
// RFC 9110 form when unset, Digest "SHA-256=<base64>" of exactly body (always,
// replacing any), Content-Type application/activity+json and User-Agent when
// unset, and when req.Body is nil it attaches body (with ContentLength and
// GetBody). It then sets Signature with headers
// "(request-target) host date digest content-type". The request-target is the
// lower-cased method and the escaped path plus query, as sent on the wire.
func (s *Signer) SignPost(req *http.Request, body []byte, keyID string, key Key) error {
	if err := s.prepare(req); err != nil {
		return err
	}
	h := req.Header
	h["Digest"] = []string{Digest(body)}
	delete(h, "Content-Digest") // an RFC 9421 signature's, when this re-signs one
	if len(h["Content-Type"]) == 0 {
		h["Content-Type"] = []string{ContentTypeActivity}
	}
	attachBody(req, body)
	return s.sign(req, keyID, key, PostHeaders)
}

// attachBody attaches body to a request that has none (with ContentLength
// and GetBody).
func attachBody(req *http.Request, body []byte) {
	if req.Body == nil || req.Body == http.NoBody {
		if len(body) > 0 {
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
		req.ContentLength = int64(len(body))
	}
}

// SignGet signs a GET (an actor or object fetch). It sets Host as SignPost
// does, Date when unset, Accept (AcceptActivity) and User-Agent when unset,
// then Signature with headers "(request-target) host date accept".
func (s *Signer) SignGet(req *http.Request, keyID string, key Key) error {
	if err := s.prepare(req); err != nil {
		return err
	}
	if len(req.Header["Accept"]) == 0 {
		req.Header["Accept"] = []string{AcceptActivity}
	}
	return s.sign(req, keyID, key, GetHeaders)
}

func (s *Signer) prepare(req *http.Request) error {
	if req == nil || req.URL == nil {
		return fmt.Errorf("%w: nil request or URL", ErrMalformedSignature)
	}
	if req.Header == nil {
		req.Header = make(http.Header, 8)
	}
	if req.Host == "" {
		req.Host = req.URL.Host
	}
	if req.Host == "" {
		return fmt.Errorf("%w: request has no host", ErrMalformedSignature)
	}
	req.Header["Host"] = []string{req.Host}
	if len(req.Header["Date"]) == 0 {
		req.Header["Date"] = []string{s.now().UTC().Format(http.TimeFormat)}
	}
	if len(req.Header["User-Agent"]) == 0 {
		req.Header["User-Agent"] = []string{s.ua}
	}
	return nil
}

// sign builds the signing string for headers (space-separated, lower-case),
// signs it and sets the Signature header.
func (s *Signer) sign(req *http.Request, keyID string, key Key, headers string) error {
	if keyID == "" || strings.ContainsAny(keyID, "\"\\\r\n") {
		return fmt.Errorf("%w: keyId %q is empty or contains a quote, backslash or newline", ErrMalformedSignature, keyID)
	}
	if key == nil {
		return fmt.Errorf("%w: nil key", ErrUnsupportedAlgorithm)
	}
	var arr [512]byte
	msg, err := appendSigningString(arr[:0], req, requestTarget(req), strings.FieldsSeq(headers), 0, 0)
	if err != nil {
		return err
	}
	sig, err := signMessage(s.alg, key, msg)
	if err != nil {
		return err
	}
	var out strings.Builder
	out.Grow(len(keyID) + len(headers) + base64.StdEncoding.EncodedLen(len(sig)) + 64)
	out.WriteString(`keyId="`)
	out.WriteString(keyID)
	out.WriteString(`",algorithm="`)
	out.WriteString(string(s.alg))
	out.WriteString(`",headers="`)
	out.WriteString(headers)
	out.WriteString(`",signature="`)
	enc := make([]byte, base64.StdEncoding.EncodedLen(len(sig)))
	base64.StdEncoding.Encode(enc, sig)
	out.Write(enc)
	out.WriteByte('"')
	req.Header["Signature"] = []string{out.String()}
	// A verifier takes a request with Signature-Input for RFC 9421: one
	// left by an earlier signature of this request must go.
	delete(req.Header, "Signature-Input")
	return nil
}

// appendSigningString appends the draft-cavage signing string over the
// header names (lower-case) to b. Multiple values of one header are joined
// with ", " after trimming, as the draft says. Host falls back to req.Host,
// because servers keep it out of the header map. (created) and (expires) take
// the created and expires parameters; 0 means the parameter is absent.
func appendSigningString(b []byte, req *http.Request, target string, names iter.Seq[string], created, expires int64) ([]byte, error) {
	first := true
	for name := range names {
		if !first {
			b = append(b, '\n')
		}
		first = false
		b = append(b, name...)
		b = append(b, ": "...)
		switch name {
		case "(request-target)":
			b = append(b, target...)
			continue
		case "(created)", "(expires)":
			n := created
			if name == "(expires)" {
				n = expires
			}
			if n == 0 {
				return nil, fmt.Errorf("%w: %s is signed but its parameter is missing", ErrMalformedSignature, name)
			}
			b = strconv.AppendInt(b, n, 10)
			continue
		case "host":
			if len(req.Header["Host"]) == 0 {
				if req.Host == "" {
					return nil, fmt.Errorf("%w: signed header host is missing", ErrMalformedSignature)
				}
				b = append(b, req.Host...)
				continue
			}
		}
		vals := req.Header[textproto.CanonicalMIMEHeaderKey(name)]
		if len(vals) == 0 {
			return nil, fmt.Errorf("%w: signed header %q is missing", ErrMalformedSignature, name)
		}
		for i, v := range vals {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, strings.TrimSpace(v)...)
		}
	}
	return b, nil
}

// requestTarget is "(request-target)"'s value: lower-case method, space, the
// path and query as on the wire. For server requests RequestURI is exactly
// what the client sent; otherwise the URL's escaped path and raw query.
func requestTarget(req *http.Request) string {
	m := req.Method
	switch m {
	case "", http.MethodGet:
		m = "get"
	case http.MethodPost:
		m = "post"
	default:
		m = strings.ToLower(m)
	}
	return m + " " + pathAndQuery(req)
}

func pathAndQuery(req *http.Request) string {
	if strings.HasPrefix(req.RequestURI, "/") {
		return req.RequestURI
	}
	p := req.URL.EscapedPath()
	if p == "" {
		p = "/"
	}
	if req.URL.RawQuery != "" {
		p += "?" + req.URL.RawQuery
	}
	return p
}

// signMessage signs msg under alg with key, hashing as alg and the key type need.
func signMessage(alg Algorithm, key Key, msg []byte) ([]byte, error) {
	switch key.Public().(type) {
	case *rsa.PublicKey:
		switch alg {
		case RSASHA256, HS2019:
			sum := sha256.Sum256(msg)
			return key.Sign(rand.Reader, sum[:], crypto.SHA256)
		case RSASHA512:
			sum := sha512.Sum512(msg)
			return key.Sign(rand.Reader, sum[:], crypto.SHA512)
		}
	case ed25519.PublicKey:
		switch alg {
		case Ed25519, HS2019:
			return key.Sign(rand.Reader, msg, crypto.Hash(0))
		}
	default:
		return nil, fmt.Errorf("%w: key type %T (want RSA or Ed25519)", ErrUnsupportedAlgorithm, key.Public())
	}
	return nil, fmt.Errorf("%w: algorithm %q cannot sign with a %T key", ErrUnsupportedAlgorithm, alg, key.Public())
}
