package signing

import (
	"bytes"
	"encoding/base64"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestParseSignatureHeader covers the header shapes senders produce and the
// malformed ones a verifier meets.
func TestParseSignatureHeader(t *testing.T) {
	const sig = "c2lnbmF0dXJl" // "signature"
	tests := []struct {
		name string
		in   string
		want Params // zero with err: expect an error
		err  bool
	}{
		{"Mastodon", `keyId="https://m.test/users/a#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest content-type",signature="` + sig + `"`,
			Params{KeyID: "https://m.test/users/a#main-key", Algorithm: "rsa-sha256", Headers: []string{"(request-target)", "host", "date", "digest", "content-type"}, Signature: []byte("signature")}, false},
		{"spaces after commas", `keyId="k", algorithm="hs2019", headers="date", signature="` + sig + `"`,
			Params{KeyID: "k", Algorithm: "hs2019", Headers: []string{"date"}, Signature: []byte("signature")}, false}, // OWS is allowed
		{"comma inside quoted keyId", `keyId="https://x.test/a,b#k",signature="` + sig + `"`,
			Params{KeyID: "https://x.test/a,b#k", Headers: []string{"date"}, Signature: []byte("signature")}, false}, // quoted values may contain commas
		{"escaped quote", `keyId="a\"b",signature="` + sig + `"`,
			Params{KeyID: `a"b`, Headers: []string{"date"}, Signature: []byte("signature")}, false}, // quoted-pair
		{"Authorization form", `Signature keyId="k",signature="` + sig + `"`,
			Params{KeyID: "k", Headers: []string{"date"}, Signature: []byte("signature")}, false}, // scheme prefix stripped
		{"created and expires unquoted", `keyId="k",algorithm="hs2019",created=1402170695,expires=1402170995,headers="(request-target) (created) (expires)",signature="` + sig + `"`,
			Params{KeyID: "k", Algorithm: "hs2019", Created: 1402170695, Expires: 1402170995, Headers: []string{"(request-target)", "(created)", "(expires)"}, Signature: []byte("signature")}, false},
		{"created quoted", `keyId="k",created="1402170695",signature="` + sig + `"`,
			Params{KeyID: "k", Created: 1402170695, Headers: []string{"date"}, Signature: []byte("signature")}, false}, // lenient about quotes
		{"upper-case names and headers", `KEYID="k",Algorithm="RSA-SHA256",Headers="Date Host",Signature="` + sig + `"`,
			Params{KeyID: "k", Algorithm: "rsa-sha256", Headers: []string{"date", "host"}, Signature: []byte("signature")}, false}, // case-insensitive
		{"unknown parameter ignored", `keyId="k",foo="bar,baz",signature="` + sig + `"`,
			Params{KeyID: "k", Headers: []string{"date"}, Signature: []byte("signature")}, false},
		{"unpadded base64", `keyId="k",signature="c2lnbmF0dXJlMQ"`,
			Params{KeyID: "k", Headers: []string{"date"}, Signature: []byte("signature1")}, false}, // padding stripped by some senders
		{"space before equals", `keyId ="k", signature = "` + sig + `"`,
			Params{KeyID: "k", Headers: []string{"date"}, Signature: []byte("signature")}, false}, // OWS around '='
		{"signature param first with space", `signature ="` + sig + `",keyId="k"`,
			Params{KeyID: "k", Headers: []string{"date"}, Signature: []byte("signature")}, false}, // not an Authorization scheme
		{"trailing comma", `keyId="k",signature="` + sig + `",`,
			Params{KeyID: "k", Headers: []string{"date"}, Signature: []byte("signature")}, false},
		{"empty", ``, Params{}, true},
		{"no keyId", `signature="` + sig + `"`, Params{}, true},
		{"no signature", `keyId="k"`, Params{}, true},
		{"a signature of only a newline", "keYId=0,signAture=\"\n\"", Params{}, true}, // decodes to nothing (found by the fuzzer)
		{"empty keyId", `keyId="",signature="` + sig + `"`, Params{}, true},
		{"duplicate keyId", `keyId="a",keyId="b",signature="` + sig + `"`, Params{}, true}, // ambiguous
		{"unterminated quote", `keyId="k,signature="` + sig, Params{}, true},               // runs to the end
		{"no equals", `keyId,signature="` + sig + `"`, Params{}, true},                     // bare name
		{"junk after value", `keyId="k"x,signature="` + sig + `"`, Params{}, true},         // missing comma
		{"created not a number", `keyId="k",created=soon,signature="` + sig + `"`, Params{}, true},
		{"negative expires", `keyId="k",expires=-5,signature="` + sig + `"`, Params{}, true},
		{"empty headers", `keyId="k",headers="",signature="` + sig + `"`, Params{}, true},
		{"signature not base64", `keyId="k",signature="***"`, Params{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSignatureHeader(tc.in)
			if tc.err {
				if !errors.Is(err, ErrMalformedSignature) {
					t.Fatalf("err = %v, params %+v; want ErrMalformedSignature", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseSignatureHeader: no input panics; whatever parses has a keyId and
// a signature, and survives a String/Parse round trip unchanged.
func FuzzParseSignatureHeader(f *testing.F) {
	for _, s := range []string{
		`keyId="https://m.test/users/a#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest content-type",signature="c2ln"`,
		`Signature keyId="k",created=1,expires=2,headers="(created)",signature="c2ln"`,
		`keyId="a\"b,c",signature=c2ln`, `keyId=,`, `"`, `keyId="k",keyId="k"`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParseSignatureHeader(in)
		if err != nil {
			if !errors.Is(err, ErrMalformedSignature) {
				t.Fatalf("error without sentinel: %v", err)
			}
			return
		}
		if p.KeyID == "" || len(p.Signature) == 0 || len(p.Headers) == 0 {
			t.Fatalf("accepted incomplete params %+v", p)
		}
		for _, h := range p.Headers {
			if strings.ContainsAny(h, " \t") || h != strings.ToLower(h) {
				t.Fatalf("header name %q", h)
			}
		}
		p2, err := ParseSignatureHeader(formatParams(p))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", formatParams(p), err)
		}
		if p2.KeyID != p.KeyID || p2.Algorithm != p.Algorithm || !bytes.Equal(p2.Signature, p.Signature) ||
			p2.Created != p.Created || p2.Expires != p.Expires || strings.Join(p2.Headers, " ") != strings.Join(p.Headers, " ") {
			t.Fatalf("round trip changed %+v into %+v", p, p2)
		}
	})
}

// TestDigest covers Digest header parsing and checking.
func TestDigest(t *testing.T) {
	body := []byte("hello")
	d256 := Digest(body)
	d512 := sha512Digest(body)
	tests := []struct {
		name   string
		header string
		ok     bool
	}{
		{"SHA-256", d256, true}, // what everyone sends
		{"lower-case name", strings.Replace(d256, "SHA-256", "sha-256", 1), true}, // names are case-insensitive
		{"SHA-512", d512, true},                                             // allowed alternative
		{"both", d256 + ", " + d512, true},                                  // several, all checked
		{"unknown plus SHA-256", "UNIXsum=1234, " + d256, true},             // unknown ignored
		{"only unknown", "MD5=XUFAKrxLKna5cZ2REBfFkg==", false},             // nothing we can check
		{"wrong body", Digest([]byte("world")), false},                      // mismatch
		{"one of two wrong", d256 + "," + sha512Digest([]byte("x")), false}, // every known one must match
		{"not base64", "SHA-256=***", false},                                // undecodable
		{"empty", "", false},                                                // nothing
		{"no value", "SHA-256=", false},                                     // malformed element
		{"truncated", d256[:20], false},                                     // wrong length
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyDigest(tc.header, body)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, ErrDigestMismatch) {
				t.Fatalf("err without sentinel: %v", err)
			}
		})
	}
	if d256 != "SHA-256=LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=" {
		t.Errorf("Digest(hello) = %s", d256)
	}
}

// FuzzParseDigest: no input panics; parsed elements are well-formed; the
// Digest of any body verifies against that body.
func FuzzParseDigest(f *testing.F) {
	f.Add("SHA-256=LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=", []byte("hello"))
	f.Add("sha-512=abc,MD5=x,,", []byte{})
	f.Add("=,=", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		vals, err := ParseDigest(header)
		if err == nil {
			for _, v := range vals {
				if v.Algorithm == "" || v.Value == "" || v.Algorithm != strings.ToUpper(v.Algorithm) {
					t.Fatalf("bad element %+v", v)
				}
			}
		} else if !errors.Is(err, ErrDigestMismatch) {
			t.Fatalf("error without sentinel: %v", err)
		}
		_ = VerifyDigest(header, body)
		if err := VerifyDigest(Digest(body), body); err != nil {
			t.Fatal(err)
		}
	})
}

// formatParams serialises p as a Signature header value in the usual order
// (keyId, algorithm, created, expires, headers, signature). Quotes and
// backslashes in values are backslash-escaped, so
// ParseSignatureHeader(formatParams(p)) returns p: the fuzz target's round trip.
func formatParams(p Params) string {
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

// writeEscaped writes s with its quotes and backslashes backslash-escaped.
func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}
