package signing

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// Params is a parsed draft-cavage Signature header.
type Params struct {
	// KeyID is the keyId parameter; never empty in a successfully parsed header.
	KeyID string
	// Algorithm is the algorithm parameter, lower-cased; empty when absent
	// (the verifier then derives it from the key, as hs2019 says).
	Algorithm Algorithm
	// Headers are the signed header names, lower-cased, in signing order.
	// When the parameter is absent it is ["date"], as draft-cavage specifies.
	Headers []string
	// Signature is the decoded signature; never empty when parsing succeeded.
	Signature []byte
	// Created and Expires are the created/expires parameters in Unix seconds;
	// 0 when absent.
	Created, Expires int64
}

// ParseSignatureHeader parses the value of a draft-cavage Signature header (an
// Authorization header value with its leading "Signature " scheme is accepted
// too). Parameters are comma-separated name=value pairs with optional
// whitespace; values are tokens or quoted strings, and quoted strings may
// contain commas, spaces and backslash-escaped characters. Names are matched
// case-insensitively; unknown parameters are ignored; a repeated known
// parameter is an error (two keyIds would be ambiguous). keyId and signature
// are required; the signature must be base64. Errors wrap ErrMalformedSignature.
func ParseSignatureHeader(h string) (Params, error) {
	sc := headerScanner{s: stripScheme(strings.TrimSpace(h))}
	var b paramsBuilder
	for sc.more() {
		name, err := sc.key()
		if err != nil {
			return Params{}, err
		}
		val, err := sc.value(name)
		if err != nil {
			return Params{}, err
		}
		if err := sc.separator(name); err != nil {
			return Params{}, err
		}
		if err := b.set(name, val); err != nil {
			return Params{}, err
		}
	}
	return b.finish()
}

// stripScheme drops the leading "Signature " of the Authorization form
// ("Signature keyId=..."), but not from a first parameter named signature
// (`signature ="..."`).
func stripScheme(s string) string {
	const scheme = "signature"
	if len(s) > len(scheme+" ") && strings.EqualFold(s[:len(scheme)], scheme) && isOWS(s[len(scheme)]) {
		if rest := strings.TrimLeft(s[len(scheme):], " \t"); !strings.HasPrefix(rest, "=") {
			return rest
		}
	}
	return s
}

// headerScanner walks a cavage parameter list: name=value pairs separated by
// commas, with optional whitespace around every token. i is the offset of the
// next unread byte; errors name offsets within s.
type headerScanner struct {
	s string
	i int
}

func (sc *headerScanner) skipOWS() {
	for sc.i < len(sc.s) && isOWS(sc.s[sc.i]) {
		sc.i++
	}
}

// more skips separators (commas and whitespace, so empty list members are
// tolerated) and reports whether a parameter follows.
func (sc *headerScanner) more() bool {
	for sc.i < len(sc.s) && (isOWS(sc.s[sc.i]) || sc.s[sc.i] == ',') {
		sc.i++
	}
	return sc.i < len(sc.s)
}

// key reads a parameter name (a token) and the '=' after it, with the
// whitespace around the '='.
func (sc *headerScanner) key() (string, error) {
	start := sc.i
	for sc.i < len(sc.s) && isTokenChar(sc.s[sc.i]) {
		sc.i++
	}
	name := sc.s[start:sc.i]
	if name == "" {
		return "", malformed("unexpected %q at offset %d", sc.s[sc.i], sc.i)
	}
	sc.skipOWS()
	if sc.i >= len(sc.s) || sc.s[sc.i] != '=' {
		return "", malformed("parameter %q has no value", name)
	}
	sc.i++
	sc.skipOWS()
	return name, nil
}

// value reads a quoted string or, leniently, everything up to the next comma
// or whitespace, so unquoted base64 (with '/', '+', '=') still works.
func (sc *headerScanner) value(name string) (string, error) {
	if sc.i < len(sc.s) && sc.s[sc.i] == '"' {
		return sc.quoted(name)
	}
	begin := sc.i
	for sc.i < len(sc.s) && sc.s[sc.i] != ',' && !isOWS(sc.s[sc.i]) {
		sc.i++
	}
	return sc.s[begin:sc.i], nil
}

// quoted reads a quoted string starting at its opening quote, resolving
// backslash escapes. Without an escape the value is a substring of s.
func (sc *headerScanner) quoted(name string) (string, error) {
	sc.i++
	begin := sc.i
	var b []byte // allocated only when the value has an escape
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case c == '\\':
			if b == nil {
				b = append(make([]byte, 0, len(sc.s)-begin), sc.s[begin:sc.i]...)
			}
			sc.i++
			if sc.i >= len(sc.s) {
				return "", malformed("unterminated quoted value for %q", name)
			}
			b = append(b, sc.s[sc.i])
		case c == '"':
			val := sc.s[begin:sc.i]
			if b != nil {
				val = string(b)
			}
			sc.i++
			return val, nil
		case b != nil:
			b = append(b, c)
		}
		sc.i++
	}
	return "", malformed("unterminated quoted value for %q", name)
}

// separator checks that a value is followed, after optional whitespace, by a
// comma or the end of the header.
func (sc *headerScanner) separator(name string) error {
	sc.skipOWS()
	if sc.i < len(sc.s) && sc.s[sc.i] != ',' {
		return malformed("unexpected %q after parameter %q", sc.s[sc.i], name)
	}
	return nil
}

// The parameters ParseSignatureHeader knows, as indexes into paramsBuilder.seen.
const (
	paramKeyID = iota
	paramAlgorithm
	paramHeaders
	paramSignature
	paramCreated
	paramExpires
	numParams
)

// paramIndex is the index of a known parameter name (matched
// case-insensitively), or -1 for one the draft says to ignore.
func paramIndex(name string) int {
	known := [numParams]string{
		paramKeyID: "keyId", paramAlgorithm: "algorithm", paramHeaders: "headers",
		paramSignature: "signature", paramCreated: "created", paramExpires: "expires",
	}
	for i, k := range known {
		if strings.EqualFold(name, k) {
			return i
		}
	}
	return -1
}

// paramsBuilder collects parameters as they are scanned and checks, at the
// end, that the ones a verifier needs are there.
type paramsBuilder struct {
	p           Params
	seen        [numParams]bool
	sig         string // still base64; decoded by finish
	haveHeaders bool
}

// set records one parameter; unknown names are ignored and a repeated known
// one is an error.
func (b *paramsBuilder) set(name, val string) error {
	idx := paramIndex(name)
	if idx < 0 {
		return nil
	}
	if b.seen[idx] {
		return malformed("duplicate parameter %q", name)
	}
	b.seen[idx] = true
	switch idx {
	case paramKeyID:
		b.p.KeyID = val
	case paramAlgorithm:
		b.p.Algorithm = Algorithm(strings.ToLower(val))
	case paramHeaders:
		b.haveHeaders = true
		b.p.Headers = strings.Fields(strings.ToLower(val))
	case paramSignature:
		b.sig = val
	case paramCreated, paramExpires:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n <= 0 {
			return malformed("parameter %q is not a positive integer: %q", name, val)
		}
		if idx == paramCreated {
			b.p.Created = n
		} else {
			b.p.Expires = n
		}
	}
	return nil
}

// finish checks the required parameters, decodes the signature and applies
// the draft's default headers list.
func (b *paramsBuilder) finish() (Params, error) {
	p := b.p
	if p.KeyID == "" {
		return Params{}, malformed("missing keyId")
	}
	if b.sig == "" {
		return Params{}, malformed("missing signature")
	}
	raw, err := decodeBase64(b.sig)
	if err != nil {
		return Params{}, malformed("signature is not base64: %v", err)
	}
	if len(raw) == 0 {
		// base64 decoding skips CR and LF, so "\n" decodes to nothing.
		return Params{}, malformed("empty signature")
	}
	p.Signature = raw
	if !b.haveHeaders {
		p.Headers = []string{"date"}
	} else if len(p.Headers) == 0 {
		return Params{}, malformed("empty headers parameter")
	}
	return p, nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformedSignature, fmt.Sprintf(format, args...))
}

func isOWS(c byte) bool { return c == ' ' || c == '\t' }

// isTokenChar reports whether c is an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// decodeBase64 accepts standard base64 with or without padding, since some
// implementations strip the padding.
func decodeBase64(s string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(s)
}
