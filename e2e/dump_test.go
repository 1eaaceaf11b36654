package e2e

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/signing"
)

// dumpRequest renders a request as JSON so that independent verifiers
// (testpeers' Node scripts) can check the crowd's signatures. The shape is
//
//	{
//	  "method":  "POST",
//	  "url":     "https://flood3.test/users/alice/inbox",
//	  "headers": {"host": "flood3.test", "date": "...", "digest": "SHA-256=...", "signature": "..."},
//	  "body":    "{\"type\":\"Follow\",...}"
//	}
//
// url is absolute for client requests; for server requests it is made
// absolute with req.Host and the scheme the request came over. headers maps
// each lower-cased header name to its values joined with ", " (as signing
// strings combine them); host is always present (from req.Host, or the URL's
// host, when the header map lacks it).
func dumpRequest(req *http.Request, body []byte) ([]byte, error) {
	type dump struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	if req == nil || req.URL == nil || req.URL.Host == "" && req.Host == "" {
		return nil, errors.New("dump of a request without a URL or a host")
	}
	u := *req.URL
	if u.Host == "" {
		u.Host, u.Scheme = req.Host, "http"
		if p := req.Header.Get("X-Forwarded-Proto"); p == "https" || req.TLS != nil {
			u.Scheme = "https"
		}
	}
	d := dump{Method: req.Method, URL: u.String(), Headers: make(map[string]string, len(req.Header)+1), Body: string(body)}
	if d.Method == "" {
		d.Method = http.MethodGet
	}
	for k, vs := range req.Header {
		d.Headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	if _, ok := d.Headers["host"]; !ok {
		d.Headers["host"] = cmp.Or(req.Host, req.URL.Host)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// TestDumpRequest: a signed POST's dump carries what a verifier needs (the
// method, the absolute URL, every signed header lower-cased, the body as sent);
// a request as a server received it gets its URL from its Host; a request
// with no host is refused.
func TestDumpRequest(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"Create","content":"<p>a & b</p>"}`)
	req, _ := http.NewRequest(http.MethodPost, "https://sut.test/users/bob/inbox", nil)
	req.Header.Add("Accept", "application/activity+json")
	req.Header.Add("Accept", "application/ld+json")
	if err := signing.NewSigner(signing.SignerOptions{}).SignPost(req, body, "https://a.test/users/a#main-key", key); err != nil {
		t.Fatal(err)
	}
	raw, err := dumpRequest(req, body)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"host", "date", "digest", "content-type", "signature"} {
		if d.Headers[h] == "" {
			t.Errorf("header %q missing from %s", h, raw)
		}
	}
	if d.Method != "POST" || d.URL != "https://sut.test/users/bob/inbox" || d.Body != string(body) ||
		d.Headers["host"] != "sut.test" || d.Headers["accept"] != "application/activity+json, application/ld+json" {
		t.Errorf("dump = %+v", d)
	}
	in := httptest.NewRequest(http.MethodGet, "/users/bob", nil)
	in.Host = "sut.test"
	if raw, err = dumpRequest(in, nil); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.Method != "GET" || d.URL != "http://sut.test/users/bob" || d.Headers["host"] != "sut.test" {
		t.Errorf("server-side dump = %+v (%v)", d, err)
	}
	if _, err := dumpRequest(&http.Request{Method: "GET", URL: &url.URL{Path: "/users/bob"}}, nil); err == nil {
		t.Error("a request with no host was dumped")
	}
}

// signsWith names the backend that signs with key: the name a key of a
// backend other than Go reports (a world's key reports its world's), BackendGo
// for a plain key.
func signsWith(key signing.Key) string {
	if n, ok := key.(interface{ BackendName() string }); ok {
		return n.BackendName()
	}
	return signing.BackendGo
}
