package inbox

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/signing"
)

// BenchmarkServeHTTP measures verified deliveries through the inbox
// handler: Creates signed by a crowd actor (key resolved from the world),
// presigned outside the timer, logged to disk. Compare with
// BenchmarkVerifyOnly, the bare verifier on the same requests.
func BenchmarkServeHTTP(b *testing.B) {
	in, reqs := benchSetup(b)
	b.ResetTimer()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := reqs[int(n.Add(1))%len(reqs)]
			r := httptest.NewRequest(http.MethodPost, "/users/alice/inbox", bytes.NewReader(p.body))
			r.Host = "flood1.test"
			r.Header = p.header.Clone()
			w := httptest.NewRecorder()
			in.ServeHTTP(w, r)
			if w.Code != http.StatusAccepted {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkVerifyOnly is the ceiling: signing.Verifier alone on the same
// presigned requests, keys from the world.
func BenchmarkVerifyOnly(b *testing.B) {
	in, reqs := benchSetup(b)
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

func benchSetup(b *testing.B) (*Inbox, []presigned) {
	state := b.TempDir()
	world := openWorld(b, state)
	b.Cleanup(func() { world.Close() })
	in, err := New(Config{World: world, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Shutdown(b.Context()) })
	from, _ := world.ActorByID("https://flood2.test/users/bob")
	s := signing.NewSigner(signing.SignerOptions{})
	reqs := make([]presigned, 2000)
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
