package inbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/discardwriter"
	"github.com/crowdfed/crowd/signing"
)

// BenchmarkServeHTTP measures verified deliveries through the inbox
// handler: Creates signed by a crowd actor (key resolved from the world),
// presigned outside the timer, logged to disk. Compare with
// BenchmarkVerifyOnly, the bare verifier on the same requests.
func BenchmarkServeHTTP(b *testing.B) {
	in, reqs := benchSetup(b, 2000)
	h := addressed(in.world, in)
	b.ResetTimer()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := reqs[int(n.Add(1))%len(reqs)]
			r := httptest.NewRequest(http.MethodPost, "/users/alice/inbox", bytes.NewReader(p.body))
			r.Host = "flood1.test"
			r.Header = p.header.Clone()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusAccepted {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkVerifyOnly is the ceiling: signing.Verifier alone on the same
// presigned requests, keys from the world.
func BenchmarkVerifyOnly(b *testing.B) {
	in, reqs := benchSetup(b, 2000)
	b.ResetTimer()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := reqs[int(n.Add(1))%len(reqs)]
			r := httptest.NewRequest(http.MethodPost, "/users/alice/inbox", bytes.NewReader(p.body))
			r.Host = "flood1.test"
			r.Header = p.header.Clone()
			if _, err := in.verifier.Verify(r.Context(), r, p.body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type presigned struct {
	header http.Header
	body   []byte
}

// benchSetup opens a world and an inbox logging to disk in a temporary
// directory, and presigns n Creates from bob to alice.
func benchSetup(b *testing.B, n int) (*Inbox, []presigned) {
	state := b.TempDir()
	world := openWorld(b, state)
	b.Cleanup(func() { world.Close() })
	in, err := New(Config{World: world, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		// Not b.Context(): it is cancelled before cleanups run, and Shutdown
		// would return before the log's writer closed its file, leaving the
		// temporary directory busy.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in.Shutdown(ctx)
	})
	from, _ := world.ActorByID("https://flood2.test/users/bob")
	s := signing.NewSigner(signing.SignerOptions{})
	reqs := make([]presigned, n)
	for i := range reqs {
		body := fmt.Appendf(nil, `{"@context":"https://www.w3.org/ns/activitystreams","id":"%s/notes/%d/activity","type":"Create","actor":%q,"to":["https://www.w3.org/ns/activitystreams#Public"],"object":{"id":"%s/notes/%d","type":"Note","attributedTo":%q,"content":"<p>hello, this is a note of a realistic length, about two hundred bytes of text, which is what the flood sends by default</p>","published":%q}}`,
			from.ID, i, from.ID, from.ID, i, from.ID, time.Now().UTC().Format(time.RFC3339))
		req, _ := http.NewRequest(http.MethodPost, "https://flood1.test/users/alice/inbox", nil)
		if err := s.SignPost(req, body, from.KeyID, from.Key); err != nil {
			b.Fatal(err)
		}
		reqs[i] = presigned{header: req.Header, body: body}
	}
	return in, reqs
}

// BenchmarkParseActivity: the parser on a typical Create(Note).
func BenchmarkParseActivity(b *testing.B) {
	body := []byte(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://flood2.test/users/bob/notes/1/activity","type":"Create","actor":"https://flood2.test/users/bob","to":["https://www.w3.org/ns/activitystreams#Public"],"object":{"id":"https://flood2.test/users/bob/notes/1","type":"Note","attributedTo":"https://flood2.test/users/bob","content":"<p>hello, this is a note of a realistic length, about two hundred bytes of text, which is what the flood sends by default</p>","published":"2026-01-01T00:00:00Z"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseActivity(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInboxServeHTTP is the cost of one verified delivery, one at a
// time (b.Loop: no parallelism, so ns/op is the handler's own time), for
// benchstat comparisons of the handler before and after a change. The
// deliveries are what the bench replays: Creates (a Note with a mention,
// about 1.3 KB) and Likes (about 450 B), presigned outside the timer by
// the world's actors to a shared inbox, answered 202 and logged to disk.
// handler=bare is the ceiling the bench compares with: read the body and
// run signing.Verifier, nothing else. cpu-ns/op is the process's user +
// system CPU per delivery (getrusage), which also counts what ns/op does
// not: the activity log's writer goroutine and the garbage collector.
func BenchmarkInboxServeHTTP(b *testing.B) {
	in, _ := benchSetup(b, 0)
	w := in.world
	alice, _ := w.ActorByID("https://flood1.test/users/alice")
	bob, _ := w.ActorByID("https://flood2.test/users/bob")
	s := signing.NewSigner(signing.SignerOptions{})
	u := &url.URL{Scheme: "http", Host: "flood1.test", Path: "/inbox"}
	bodies := map[string]func(i int, from *actors.Actor) []byte{
		"create": func(i int, from *actors.Actor) []byte {
			note := fmt.Sprintf("%s/notes/%d", from.ID, i)
			return fmt.Appendf(nil, `{"@context":"https://www.w3.org/ns/activitystreams","id":"%s/activity","type":"Create","actor":%q,"published":%q,"to":["https://www.w3.org/ns/activitystreams#Public"],"cc":["%s/followers","%s"],"object":{"id":%q,"type":"Note","attributedTo":%q,"content":"<p><span class=\"h-card\"><a href=\"%s\" class=\"u-url mention\">@<span>%s</span></a></span> Note %d from %s. The crowd is loud today, and every one of us has something to say about federation. The crowd is loud today, and every one of us has something to say </p>","published":%q,"url":%q,"to":["https://www.w3.org/ns/activitystreams#Public"],"cc":["%s/followers","%s"],"tag":[{"type":"Mention","href":%q,"name":"@%s@flood1.test"}]}}`,
				note, from.ID, time.Now().UTC().Format(time.RFC3339), from.ID, alice.ID, note, from.ID, alice.ID, alice.Name, i, from.ID,
				time.Now().UTC().Format(time.RFC3339), note, from.ID, alice.ID, alice.ID, alice.Name)
		},
		"like": func(i int, from *actors.Actor) []byte {
			return fmt.Appendf(nil, `{"@context":"https://www.w3.org/ns/activitystreams","id":"%s/likes/%d","type":"Like","actor":%q,"published":%q,"object":"%s/notes/%d"}`,
				from.ID, i, from.ID, time.Now().UTC().Format(time.RFC3339), alice.ID, i)
		},
	}
	bare := func(wr http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(wr, r.Body, 1<<20))
		if err != nil {
			http.Error(wr, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := in.verifier.Verify(r.Context(), r, body); err != nil {
			http.Error(wr, err.Error(), http.StatusUnauthorized)
			return
		}
		wr.WriteHeader(http.StatusAccepted)
	}
	for _, kind := range []string{"create", "like"} {
		// 256 deliveries, signed by two actors of another origin and of
		// the recipient's: enough that no cache of the last few helps.
		reqs := make([]presigned, 256)
		for i := range reqs {
			from := bob
			if i%2 == 1 {
				from = alice
			}
			body := bodies[kind](i, from)
			req := &http.Request{Method: http.MethodPost, URL: u, Host: u.Host, Header: http.Header{
				"Content-Type": {"application/activity+json"}, "User-Agent": {"crowd-bench/dev"}}}
			if err := s.SignPost(req, body, from.KeyID, from.Key); err != nil {
				b.Fatal(err)
			}
			reqs[i] = presigned{header: req.Header, body: body}
		}
		for _, h := range []struct {
			name  string
			serve http.HandlerFunc
		}{{"inbox", addressed(w, in).ServeHTTP}, {"bare", bare}} {
			b.Run("handler="+h.name+"/body="+kind, func(b *testing.B) {
				b.ReportAllocs()
				rw := discardwriter.New()
				cpu0, cpuOK := processCPU()
				i := 0
				for b.Loop() {
					p := reqs[i%len(reqs)]
					i++
					r := &http.Request{Method: http.MethodPost, URL: u, Host: u.Host, Header: p.header,
						Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: "127.0.0.1:40000",
						RequestURI: "/inbox", ContentLength: int64(len(p.body)), Body: io.NopCloser(bytes.NewReader(p.body))}
					rw.Reset()
					h.serve(rw, r)
					if rw.Status() != http.StatusAccepted {
						b.Fatalf("delivery %d: %d", i, rw.Status())
					}
				}
				if cpu1, ok := processCPU(); ok && cpuOK {
					b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}

// BenchmarkLineEncoder is the activity log writer's cost of one journal
// line, for a delivery as the inbox logs it (a compact Create of about
// 600 bytes, its signature headers): ns/op and allocs/op of the encoder
// alone, which BenchmarkInboxServeHTTP's cpu-ns/op includes among the rest;
// body=known as the inbox's own deliveries are (their parse found the body
// compact), body=checked as every other entry is.
func BenchmarkLineEncoder(b *testing.B) {
	e := Entry{Seq: 1, Time: time.Now().UTC(), Direction: DirIn, Remote: "127.0.0.1:40000", Method: http.MethodPost,
		URL: "flood1.test/inbox", Headers: http.Header{"Content-Type": {"application/activity+json"},
			"Signature": {`keyId="https://flood2.test/users/bob#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest",signature="c2lnbmF0dXJl"`},
			"Date":      {"Wed, 02 Dec 2026 14:00:00 GMT"}, "Digest": {"SHA-256=ZGlnZXN0"}},
		Body:      `{"@context":"https://www.w3.org/ns/activitystreams","id":"https://flood2.test/users/bob/notes/1/activity","type":"Create","actor":"https://flood2.test/users/bob","to":["https://www.w3.org/ns/activitystreams#Public"],"object":{"id":"https://flood2.test/users/bob/notes/1","type":"Note","attributedTo":"https://flood2.test/users/bob","content":"<p>hello, this is a note of a realistic length, about two hundred bytes of text, which is what the flood sends by default</p>","published":"2026-01-01T00:00:00Z"}}`,
		BodyBytes: 512, ID: "https://flood2.test/users/bob/notes/1/activity", Type: "Create",
		Actor: "https://flood2.test/users/bob", Object: "https://flood2.test/users/bob/notes/1", ObjectType: "Note",
		Local: "https://flood1.test/users/alice", KeyID: "https://flood2.test/users/bob#main-key",
		Verdict: VerdictAccepted, Status: http.StatusAccepted, DurationMS: 0.412}
	for _, known := range []bool{true, false} {
		name := map[bool]string{true: "body=known", false: "body=checked"}[known]
		b.Run(name, func(b *testing.B) {
			enc := newLineEncoder()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.line(&e, known); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
