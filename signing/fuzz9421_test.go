package signing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzVerifyRFC9421 feeds arbitrary Signature-Input, Signature and
// Content-Digest fields and request targets to the RFC 9421 verifier: it
// must never panic, and every refusal must wrap ErrRFC9421 (so the inbox
// answers 401 and a sender falls back).
func FuzzVerifyRFC9421(f *testing.F) {
	k := loadKeys(f)
	s := NewSigner(SignerOptions{Now: func() time.Time { return time.Unix(1748779200, 0) }})
	req, _ := http.NewRequest(http.MethodPost, inbox+"?a=1&b=two", nil)
	if err := s.SignPost9421(req, testBody, keyA, k.rsaA); err != nil {
		f.Fatal(err)
	}
	f.Add(req.Header.Get("Signature-Input"), req.Header.Get("Signature"), req.Header.Get("Content-Digest"), "/users/bob/inbox?a=1&b=two")
	for _, n := range []string{"b21", "b22", "b23", "b25", "b26"} {
		h := readTestdata(f, appendixB, n+".headers")
		in, sig, _ := strings.Cut(h, "\n")
		f.Add(strings.TrimPrefix(in, "Signature-Input: "), strings.TrimPrefix(strings.TrimSpace(sig), "Signature: "), "sha-512=:AAAA:", "/foo?param=Value&Pet=dog")
	}
	f.Add(`sig1=("@method" "@target-uri" "@query-param";name="a%20b");created=1;keyid="k"`, "sig1=:AAAA:", "", "/?a+b=1&a%20b=2")
	f.Add(`sig1=("@status");created=1748779200;keyid="x"`, "sig1=:AAAA:", "", "/")
	res := &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}}
	v := &Verifier{Keys: res, Now: func() time.Time { return time.Unix(1748779200, 0) }}
	f.Fuzz(func(t *testing.T, input, sig, digest, target string) {
		if _, err := url.ParseRequestURI(target); err != nil || !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t#") {
			target = "/" // the harness's limit: a request line a server would have refused
		}
		r := httptest.NewRequest(http.MethodPost, "https://sut.test"+target, strings.NewReader(string(testBody)))
		r.Header.Set("Signature-Input", input)
		r.Header.Set("Signature", sig)
		if digest != "" {
			r.Header.Set("Content-Digest", digest)
		}
		if _, err := v.Verify(context.Background(), r, testBody); err != nil && !errors.Is(err, ErrRFC9421) {
			t.Fatalf("a refusal that does not wrap ErrRFC9421: %v", err)
		}
	})
}
