package h1

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWriteHeadWritesWhatWriteWrites: a request's Head, made once, puts on
// the wire the very bytes Write puts there for the request, and its answer
// is read by what the request asked (a HEAD's has no body), whatever became
// of the request after NewHead.
func TestWriteHeadWritesWhatWriteWrites(t *testing.T) {
	for _, c := range []struct {
		name   string
		method string
		body   string
		edit   func(*http.Request)
		answer string
		got    string // the answer's body as read
	}{
		// The flood's: a signed POST with a body.
		{"signed POST", http.MethodPost, `{"type":"Create"}`, func(r *http.Request) {
			r.Header = http.Header{
				"Date":      {"Wed, 02 Dec 2026 16:00:00 GMT"},
				"Digest":    {"SHA-256=abc="},
				"Signature": {`keyId="https://flood1.test/users/a#main-key"`},
			}
		}, ok2, "ok"},
		// A Host other than the URL's, and a field of two values, trimmed.
		{"host and two values", http.MethodPost, "{}", func(r *http.Request) {
			r.Host = "flood1.test"
			r.Header = http.Header{"Accept": {" a ", "b\t"}}
		}, ok2, "ok"},
		// A GET has no Content-Length.
		{"GET", http.MethodGet, "", nil, ok2, "ok"},
		// A POST without a body announces 0.
		{"empty POST", http.MethodPost, "", nil, ok2, "ok"},
		// A HEAD's answer has no body, whatever it announces.
		{"HEAD", http.MethodHead, "", nil, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", ""},
		// The query goes on the request line.
		{"query", http.MethodPost, "{}", func(r *http.Request) { r.URL.RawQuery = "q=1" }, ok2, "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startRaw(t, answer{raw: ok2}, answer{raw: c.answer}, answer{raw: c.answer})
			tr := NewTransport(Options{IdleTimeout: time.Minute})
			defer tr.CloseIdleConnections()
			if _, _, _, err := send(t, tr, s.url(), "{}", 10*time.Second); err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(c.method, s.url(), strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.body == "" {
				req.Body, req.ContentLength = nil, 0
			}
			if c.edit != nil {
				c.edit(req)
			}
			h, err := NewHead(req)
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			w, ok, err := tr.Write(req, 0, deadline)
			if !ok || err != nil {
				t.Fatalf("Write: written %v: %v", ok, err)
			}
			readAll(t, tr, w, c.got)
			*req = http.Request{Method: http.MethodGet} // a Head keeps nothing of it
			w, ok, err = tr.WriteHead(h, []byte(c.body), 0, deadline)
			if !ok || err != nil {
				t.Fatalf("WriteHead: written %v: %v", ok, err)
			}
			readAll(t, tr, w, c.got)
			if got := s.accepts.Load(); got != 1 {
				t.Errorf("%d connections, want the one that rested", got)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.raw) != 3 || s.raw[2] != s.raw[1] {
				t.Errorf("on the wire:\n%q\nwant the second as the first:\n%q", s.raw[2:], s.raw[1])
			}
		})
	}
}

// readAll reads w's answer to its end and checks its body.
func readAll(t *testing.T, tr *Transport, w Written, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tr.Read(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != want {
		t.Fatalf("the answer's body %q (%v), want %q", b, err, want)
	}
}

// TestNewHeadRefuses: a request Write would refuse gets no Head.
func TestNewHeadRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*http.Request)
	}{
		// A value with a newline would add a header the signer never saw.
		{"newline in value", func(r *http.Request) { r.Header.Set("Date", "x\r\nX-Evil: 1") }},
		// A name that is no token.
		{"bad name", func(r *http.Request) { r.Header["Bad Name"] = []string{"1"} }},
		// A method that is no token.
		{"bad method", func(r *http.Request) { r.Method = "PO ST" }},
		// A host with a blank.
		{"bad host", func(r *http.Request) { r.Host = "a b" }},
		// Only http and https.
		{"scheme", func(r *http.Request) { r.URL.Scheme = "ftp" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/inbox", nil)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(req)
			if h, err := NewHead(req); err == nil {
				t.Errorf("a head of %d bytes", len(h.wire))
			}
		})
	}
}

// TestWriteHeadRefusesAnotherBody: a body other than the length the head
// announces, or no head at all, is refused with nothing written, and the
// connection rests on.
func TestWriteHeadRefusesAnotherBody(t *testing.T) {
	s := startRaw(t, answer{raw: ok2})
	tr := NewTransport(Options{IdleTimeout: time.Minute})
	defer tr.CloseIdleConnections()
	if _, _, _, err := send(t, tr, s.url(), "{}", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, s.url(), strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHead(req)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range []struct {
		name string
		head *Head
		body string
	}{
		// Shorter than announced: the server would wait for the rest.
		{"short", h, "{"},
		// Longer: the rest would read as the next request.
		{"long", h, "{}{}"},
		// No head.
		{"no head", nil, "{}"},
	} {
		if _, ok, err := tr.WriteHead(c.head, []byte(c.body), 0, deadline); !ok || err == nil {
			t.Errorf("%s: written %v, error %v; want a refusal", c.name, ok, err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.raw) != 1 {
		t.Errorf("the server received %d requests, want the first alone", len(s.raw))
	}
	if n := len(tr.idle[poolKey{"http", s.ln.Addr().String()}]); n != 1 {
		t.Errorf("%d connections rest, want 1", n)
	}
}

// signedPost is a request as the flood signs one: a POST to an inbox with
// the headers of a draft-cavage signature, about 1 KB of head.
func signedPost() *http.Request {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/users/alice/inbox", nil)
	req.ContentLength = 1200
	req.Header = http.Header{
		"Accept":       {"application/activity+json"},
		"Content-Type": {"application/activity+json"},
		"Date":         {"Wed, 02 Dec 2026 16:00:00 GMT"},
		"Digest":       {"SHA-256=" + strings.Repeat("A", 43) + "="},
		"Host":         {"127.0.0.1:8080"},
		"User-Agent":   {"crowd/1 (+https://flood1.test/)"},
		"Signature": {`keyId="https://flood1.test/users/a#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest",signature="` +
			strings.Repeat("B", 342) + `=="`},
	}
	return req
}

// TestHeadCapHoldsTheHead: NewHead makes a head's wire in the one
// allocation headCap sizes, never grown, for the requests the crowd sends
// and the edges of the request line.
func TestHeadCapHoldsTheHead(t *testing.T) {
	for _, c := range []struct {
		name string
		req  func() *http.Request
	}{
		// The flood's signed POST.
		{"signed POST", signedPost},
		// A GET with a query and no body: no Content-Length on the wire.
		{"GET with a query", func() *http.Request {
			req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/.well-known/webfinger?resource=acct:a@flood1.test", nil)
			return req
		}},
		// A Host other than the URL's, and a field of two values.
		{"host and two values", func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/inbox", nil)
			req.Host = "flood1.test"
			req.Header = http.Header{"Accept": {" a ", "b\t"}}
			return req
		}},
		// No method: written as GET, longer than the empty one asked.
		{"no method", func() *http.Request {
			req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
			req.Method = ""
			return req
		}},
	} {
		req := c.req()
		h, err := NewHead(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := headCap(req); len(h.wire) > want || cap(h.wire) != want {
			t.Errorf("%s: a head of %d bytes in a wire of capacity %d; want at most %d, in that capacity", c.name, len(h.wire), cap(h.wire), want)
		}
	}
}

// BenchmarkNewHead: making the flood's signed POST's head, as a pipeline
// does once a send.
func BenchmarkNewHead(b *testing.B) {
	req := signedPost()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewHead(req); err != nil {
			b.Fatal(err)
		}
	}
}
