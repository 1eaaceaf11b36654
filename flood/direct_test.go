package flood

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/h1"
)

// loggedTransport is h1's transport with its Writes logged beside the
// Source's Nexts, in the order they were made.
type loggedTransport struct {
	*h1.Transport
	log *eventLog
}

func (t loggedTransport) Write(req *http.Request, lane int, deadline time.Time) (h1.Written, bool, error) {
	w, ok, err := t.Transport.Write(req, lane, deadline)
	if ok {
		t.log.add("wrote " + req.Header.Get("X-N"))
	}
	return w, ok, err
}

type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// numbered is a Source of POSTs to target numbered in X-N, each with the
// token token(n), logging each Next.
func numbered(t *testing.T, target string, log *eventLog, token func(n int) any) Source {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	return SourceFunc(func(context.Context) (*Prepared, error) {
		n++
		log.add("next " + strconv.Itoa(n))
		return &Prepared{Type: "Create", Method: http.MethodPost, URL: u, Token: token(n),
			Header: http.Header{"Content-Type": {"application/activity+json"}, "X-N": {strconv.Itoa(n)}},
			Body:   []byte(`{"type":"Create"}`)}, nil
	})
}

// Tokens as the engine asks them.
type (
	holdToken     struct{ ready chan struct{} }  // a Holder
	fallbackToken struct{ firsts *atomic.Int64 } // a Fallback that sends once (counting the attempts 0 it is told of, when firsts is set)
	asSignedToken struct{ asSigned bool }        // an AsSigned alone
	knockToken    struct {
		fallbackToken
		asSignedToken
	} // a Fallback that is an AsSigned
)

func (h holdToken) Hold() <-chan struct{} { return h.ready }
func (f fallbackToken) Attempt(p *Prepared, n, status int, _ bool) (http.Header, bool, error) {
	switch {
	case n == 0:
		if f.firsts != nil {
			f.firsts.Add(1)
		}
		return p.Header, true, nil
	case n == 1 && status == http.StatusUnauthorized:
		h := p.Header.Clone()
		h.Set("X-Second", "yes")
		return h, true, nil
	}
	return nil, false, nil
}
func (a asSignedToken) FirstAsSigned() bool { return a.asSigned }

// TestDispatcherWritesWhatLeavesAsSigned: with the fast client, a send that
// finds a connection resting is written by the dispatcher itself at its
// intended time, before it takes the next request, when its token lets
// it leave as signed (AsSigned, or no Holder or Fallback); the worker
// reads the answer (or the dispatcher, where it can: the Source here says
// its next request is ready), and a Fallback's later attempts are the
// worker's.
// Every other send is the worker's from the start. The server is real,
// and answers a request without X-Second 401 when refuse says so.
func TestDispatcherWritesWhatLeavesAsSigned(t *testing.T) {
	ready := make(chan struct{})
	close(ready)
	const sends = 12
	for _, c := range []struct {
		name     string
		client   Client
		token    any
		refuse   bool
		direct   bool // the dispatcher writes every send but the first, which dials
		attempts int
	}{
		// No token: nothing holds it, nothing signs it again.
		{"no token", ClientFast, nil, false, true, 1},
		// A token that says it leaves as signed.
		{"as signed", ClientFast, asSignedToken{true}, false, true, 1},
		// One that says it does not: its worker makes the send.
		{"not as signed", ClientFast, asSignedToken{false}, false, false, 1},
		// A Holder, even one whose wait is over, may hold: the worker's.
		{"holder", ClientFast, holdToken{ready}, false, false, 1},
		// A Fallback's first header is its to give: the worker's.
		{"fallback", ClientFast, fallbackToken{new(atomic.Int64)}, false, false, 1},
		// A Fallback that says its first attempt is as signed: the
		// dispatcher writes it; refused, the second is the worker's.
		{"knock refused", ClientFast, knockToken{fallbackToken{new(atomic.Int64)}, asSignedToken{true}}, true, true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if c.refuse && r.Header.Get("X-Second") == "" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				w.WriteHeader(http.StatusAccepted)
			}))
			defer srv.Close()
			log := &eventLog{}
			tr := NewClientTransport(TransportOptions{Client: c.client})
			defer tr.CloseIdleConnections()
			var rt http.RoundTripper = tr
			if h, ok := tr.(*h1.Transport); ok {
				rt = loggedTransport{h, log}
			}
			settledLog := &outcomeLog{}
			// 20 ms apart: each answer is in, its connection resting,
			// before the next send is due.
			res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, 50), Transport: rt, Limits: Limits{MaxSends: sends},
				Source: alwaysReady.of(numbered(t, srv.URL+"/inbox", log, func(int) any { return c.token }))}, settledLog.collector())

			if len(settledLog.outcomes) != sends {
				t.Fatalf("%d settled, want %d", len(settledLog.outcomes), sends)
			}
			recordedWritten := 0
			for _, o := range settledLog.outcomes {
				d := o.Delivery
				if d == nil || d.Status != http.StatusAccepted || d.Attempts != c.attempts {
					t.Fatalf("a send ended %+v, want 202 after %d attempts", d, c.attempts)
				}
				// Sent when the dispatcher wrote it, before a worker took
				// it (or then, where the dispatcher read the answer too);
				// sent by a worker after it took it.
				if d.Actual < d.Intended || d.Done < d.Picked || d.Done < d.Actual {
					t.Errorf("a send's times are out of order: intended %v, picked %v, sent %v, done %v", d.Intended, d.Picked, d.Actual, d.Done)
				}
				switch {
				case d.Written && d.Picked < d.Actual:
					t.Errorf("a send the dispatcher wrote was picked at %v, before it was sent at %v", d.Picked, d.Actual)
				case !d.Written && d.Actual < d.Picked:
					t.Errorf("a worker's send was sent at %v, before it was picked at %v", d.Actual, d.Picked)
				case d.Written:
					recordedWritten++
				}
			}
			wrote := 0
			for i, e := range log.events {
				n, ok := strings.CutPrefix(e, "wrote ")
				if !ok {
					continue
				}
				wrote++
				if i == 0 || log.events[i-1] != "next "+n {
					t.Errorf("send %s was written at event %d, not right after it was taken: %v", n, i, log.events)
				}
			}
			// The first send dials; after it a connection rests before
			// each send is due, but a machine that stalls for 20 ms may
			// leave one to a worker that dials: most, not all.
			if c.direct && wrote < sends/2 || !c.direct && wrote > 0 {
				t.Errorf("the dispatcher wrote %d of %d sends, want them written by it: %v", wrote, sends, c.direct)
			}
			if recordedWritten != wrote {
				t.Errorf("%d sends were recorded as written by the dispatcher, want the %d it wrote", recordedWritten, wrote)
			}
			if got := res.Overall.Counts.Written; got != int64(wrote) {
				t.Errorf("the result counts %d sends written by the dispatcher, want the %d it wrote", got, wrote)
			}
			// A Fallback hears of every attempt 0 once, whoever wrote it
			// and whoever read its answer.
			var firsts *atomic.Int64
			switch tk := c.token.(type) {
			case fallbackToken:
				firsts = tk.firsts
			case knockToken:
				firsts = tk.firsts
			}
			if firsts != nil && firsts.Load() != sends {
				t.Errorf("the Fallback was told of %d attempts 0, want one a send: %d", firsts.Load(), sends)
			}
		})
	}
}

// headCounted is h1's transport counting the requests its Write and its
// WriteHead put on the wire.
type headCounted struct {
	*h1.Transport
	writes, heads atomic.Int64
}

func (t *headCounted) Write(req *http.Request, lane int, deadline time.Time) (h1.Written, bool, error) {
	w, ok, err := t.Transport.Write(req, lane, deadline)
	if ok && err == nil {
		t.writes.Add(1)
	}
	return w, ok, err
}

func (t *headCounted) WriteHead(h *h1.Head, body []byte, lane int, deadline time.Time) (h1.Written, bool, error) {
	w, ok, err := t.Transport.WriteHead(h, body, lane, deadline)
	if ok && err == nil {
		t.heads.Add(1)
	}
	return w, ok, err
}

// TestDispatcherWritesMadeHeads: a request whose head was made before the
// run (RenderHead, as presigning does) is written by the dispatcher as
// that head, copied, never through its fields again; and what reaches
// the server is the request as it was made, each once. Requests without
// one are written from their fields.
func TestDispatcherWritesMadeHeads(t *testing.T) {
	const sends = 12
	for _, c := range []struct {
		name   string
		render bool
	}{
		// Heads made: every dispatcher's write copies one.
		{"made", true},
		// None made: every dispatcher's write makes its own.
		{"not made", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			got := map[string]string{} // X-N → body
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got[r.Header.Get("X-N")] += r.Header.Get("Content-Type") + " " + string(b)
				mu.Unlock()
				w.WriteHeader(http.StatusAccepted)
			}))
			defer srv.Close()
			numbers := numbered(t, srv.URL+"/inbox", &eventLog{}, func(int) any { return nil })
			src := SourceFunc(func(ctx context.Context) (*Prepared, error) {
				p, err := numbers.Next(ctx)
				if err == nil && c.render {
					p.RenderHead()
				}
				return p, err
			})
			tr := &headCounted{Transport: NewClientTransport(TransportOptions{Client: ClientFast}).(*h1.Transport)}
			defer tr.CloseIdleConnections()
			// 20 ms apart: a connection rests before each send is due.
			settledLog := &outcomeLog{}
			res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, 50), Transport: tr, Limits: Limits{MaxSends: sends},
				Source: alwaysReady.of(src)}, settledLog.collector())
			if len(settledLog.outcomes) != sends {
				t.Fatalf("%d settled, want %d", len(settledLog.outcomes), sends)
			}
			for _, o := range settledLog.outcomes {
				if d := o.Delivery; d == nil || d.Status != http.StatusAccepted {
					t.Fatalf("a send ended %+v, want 202", d)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for n := 1; n <= sends; n++ {
				if want := `application/activity+json {"type":"Create"}`; got[strconv.Itoa(n)] != want {
					t.Errorf("send %d reached the server as %q, want %q once", n, got[strconv.Itoa(n)], want)
				}
			}
			heads, writes, written := tr.heads.Load(), tr.writes.Load(), res.Overall.Counts.Written
			mine, theirs := writes, heads // the writes that made the head, and those that copied one
			if c.render {
				mine, theirs = heads, writes
			}
			// The first send dials; a machine that stalls for 20 ms may
			// leave another to a worker that dials: most, not all.
			if mine < sends/2 || theirs != 0 || mine != written {
				t.Errorf("the dispatcher wrote %d sends copying a head and %d making it (%d recorded as its), want most %s", heads, writes, written, c.name)
			}
		})
	}
}
