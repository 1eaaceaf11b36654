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
	var p Params
	s := strings.TrimSpace(h)
	if len(s) > len("signature ") && strings.EqualFold(s[:len("signature")], "signature") && isOWS(s[len("signature")]) {
		// "Signature keyId=..." (Authorization form), but not `signature ="..."`.
		if rest := strings.TrimLeft(s[len("signature"):], " \t"); !strings.HasPrefix(rest, "=") {
			s = rest
		}
	}
	var seen [6]bool // keyId, algorithm, headers, signature, created, expires
	var sig string
	var haveHeaders bool
	i := 0
	for {
		for i < len(s) && (isOWS(s[i]) || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			break
		}
		start := i
		for i < len(s) && isTokenChar(s[i]) {
			i++
		}
		name := s[start:i]
		if name == "" {
			return Params{}, malformed("unexpected %q at offset %d", s[i], i)
		}
		for i < len(s) && isOWS(s[i]) {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			return Params{}, malformed("parameter %q has no value", name)
		}
		i++
		for i < len(s) && isOWS(s[i]) {
			i++
		}
		var val string
		if i < len(s) && s[i] == '"' {
			i++
			var b []byte // allocated only when the value has an escape
			begin := i
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' {
					if b == nil {
						b = append(make([]byte, 0, len(s)-begin), s[begin:i]...)
					}
					i++
					if i >= len(s) {
						break
					}
					b = append(b, s[i])
					i++
					continue
				}
				if c == '"' {
					closed = true
					if b == nil {
						val = s[begin:i]
					} else {
						val = string(b)
					}
					i++
					break
				}
				if b != nil {
					b = append(b, c)
				}
				i++
			}
			if !closed {
				return Params{}, malformed("unterminated quoted value for %q", name)
			}
		} else {
			// Unquoted: be lenient and take everything up to the next comma or
			// whitespace, so unquoted base64 (with '/', '+', '=') still works.
			begin := i
			for i < len(s) && s[i] != ',' && !isOWS(s[i]) {
				i++
			}
			val = s[begin:i]
		}
		for i < len(s) && isOWS(s[i]) {
			i++
		}
		if i < len(s) && s[i] != ',' {
			return Params{}, malformed("unexpected %q after parameter %q", s[i], name)
		}

		idx := -1
		switch {
		case strings.EqualFold(name, "keyId"):
			idx = 0
		case strings.EqualFold(name, "algorithm"):
			idx = 1
		case strings.EqualFold(name, "headers"):
			idx = 2
		case strings.EqualFold(name, "signature"):
			idx = 3
		case strings.EqualFold(name, "created"):
			idx = 4
		case strings.EqualFold(name, "expires"):
			idx = 5
		}
		if idx < 0 {
			continue // unknown parameters are ignored, as the draft says
		}
		if seen[idx] {
			return Params{}, malformed("duplicate parameter %q", name)
		}
		seen[idx] = true
		switch idx {
		case 0:
			p.KeyID = val
		case 1:
			p.Algorithm = Algorithm(strings.ToLower(val))
		case 2:
			haveHeaders = true
			p.Headers = strings.Fields(strings.ToLower(val))
		case 3:
			sig = val
		case 4, 5:
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n <= 0 {
				return Params{}, malformed("parameter %q is not a positive integer: %q", name, val)
			}
			if idx == 4 {
				p.Created = n
			} else {
				p.Expires = n
			}
		}
	}
	if p.KeyID == "" {
		return Params{}, malformed("missing keyId")
	}
	if sig == "" {
		return Params{}, malformed("missing signature")
	}
	raw, err := decodeBase64(sig)
	if err != nil {
		return Params{}, malformed("signature is not base64: %v", err)
	}
	if len(raw) == 0 {
		// base64 decoding skips CR and LF, so "\n" decodes to nothing.
		return Params{}, malformed("empty signature")
	}
	p.Signature = raw
	if !haveHeaders {
		p.Headers = []string{"date"}
	} else if len(p.Headers) == 0 {
		return Params{}, malformed("empty headers parameter")
	}
	return p, nil
}

// String serialises p as a Signature header value in the usual order
// (keyId, algorithm, created, expires, headers, signature). Quotes and
// backslashes in values are backslash-escaped, so ParseSignatureHeader(p.String())
// returns p.
func (p Params) String() string {
	var b strings.Builder
	b.WriteString(`keyId="`)
	writeEscaped(&b, p.KeyID)
	b.WriteByte('"')
	if p.Algorithm != "" {
		b.WriteString(`,algorithm="`)
		writeEscaped(&b, string(p.Algorithm))
		b.WriteByte('"')
	}
	if p.Created != 0 {
		b.WriteString(",created=")
		b.WriteString(strconv.FormatInt(p.Created, 10))
	}
	if p.Expires != 0 {
		b.WriteString(",expires=")
		b.WriteString(strconv.FormatInt(p.Expires, 10))
	}
	b.WriteString(`,headers="`)
	writeEscaped(&b, strings.Join(p.Headers, " "))
	b.WriteString(`",signature="`)
	b.WriteString(base64.StdEncoding.EncodeToString(p.Signature))
	b.WriteByte('"')
	return b.String()
}

func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
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
