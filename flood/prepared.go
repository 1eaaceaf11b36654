// The request the engine sends and what its token may ask of it: the
// seam between the engine and the traffic that fills it (flood/traffic).

package flood

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/h1"
)

// Prepared is one request ready to go on the wire: already signed, so the
// engine only sends it. The engine reads it and never modifies it; URL and
// Header may be shared between many Prepared values (a Source typically
// parses each inbox URL once). A copy of a Prepared whose head was made
// (RenderHead) carries that head, so a request that differs from one in
// its Method, URL, Host, Header or Body must be a new Prepared, not an
// edited copy, or the old head goes on the wire.
type Prepared struct {
	Type   record.ActivityKind // activity type, the per-type breakdown key
	Method string              // usually POST
	URL    *url.URL            // target inbox; shared, read-only
	Host   string              // Host header if it differs from URL.Host (signed as "host"); "" = URL.Host
	Header http.Header         // complete headers incl. Date, Digest, Signature; read-only
	Body   []byte              // the exact signed body; read-only (the transport may read it after the answer)
	// Token is the Source's, opaque to the engine: it comes back in
	// Collector.Settled with what became of the request. A token may
	// also be a Fallback, a Holder or an AsSigned, which the engine asks.
	Token any

	head *h1.Head // the fast client's head of the request, made by RenderHead; nil: made at the send
}

// RenderHead makes p's head as the fast client writes it (h1.NewHead),
// once, so that a dispatcher writing p on a resting connection copies it
// where it would sort and check p's fields at the send. A Source whose
// requests are made before their sends (presigned, or signed by a
// pipeline's signers) calls it as it makes each, off the dispatchers'
// threads; p's fields must not change after it. A request h1 would
// refuse is left without a head, to be refused at its send as before,
// and so is one the dispatcher never writes (a body over directMaxBody).
func (p *Prepared) RenderHead() {
	if len(p.Body) > directMaxBody {
		return
	}
	req := http.Request{Method: p.Method, URL: p.URL, Host: p.Host, Header: p.Header, ContentLength: int64(len(p.Body))}
	if h, err := h1.NewHead(&req); err == nil {
		p.head = h
	}
}

// DispatcherAware is implemented by a Source whose work shares the
// machine's cores with the dispatcher and adapts to how the
// dispatcher's thread runs (the pipeline's signers, which give way to a
// dispatcher that is not real-time). The engine calls Dispatching once a
// schedule, with what the record says of that thread, before it takes the
// schedule's first request (but an AlwaysReady Source's), on the
// goroutine that then calls Next (one of them, where dispatchers share
// the schedule). A Source that wraps another passes it on: see
// WrapSource.
type DispatcherAware interface {
	Dispatching(thread record.Dispatcher)
}

// NextReady is implemented by a Source that can tell, without waiting,
// whether Next would return at once with a request made already (a
// presigned pool, a pipeline's buffer), where another makes it in Next
// (jit signing) or waits for one. The dispatcher reads the answers to
// what it wrote itself (the fast client, plain HTTP, Linux, a real-time
// dispatcher or dispatchers sharing the schedule) only from a NextReady
// Source, and before it calls a Next that is
// not ready it leaves the answers it awaits to workers: an answer it read
// after a wait in Next would be timed late by that wait. WrapSource does
// not pass it on (a wrapper's Next may make its request).
type NextReady interface {
	NextReady() bool
}

// AlwaysReady is implemented by a NextReady Source whose Next never waits
// and makes nothing (every request made before the run: a presigned
// pool), when AlwaysReady says so. Above 5 000 sends a second (10 000
// with PriorityRealtime) the engine then shares the schedule among
// dispatchers, one a core (see Plan), which take turns with Next: one at a
// time, never at once, so Next needs no lock of its own; one that waited
// or signed would hold up every dispatcher. At those rates its first
// request is taken before Dispatching, when it is DispatcherAware too: it
// says where the schedule goes (over plain HTTP alone the dispatchers read
// their answers).
// WrapSource does not pass it on.
type AlwaysReady interface {
	NextReady
	AlwaysReady() bool
}

// WaitFiller is implemented by a Source that makes its requests ahead on
// threads of its own (a pipeline's signers) and can make them on the
// dispatcher's goroutine instead, in its waits before a send: where the
// dispatcher has one CPU, which those threads could only take from it
// by turns, at two context switches a send. The dispatcher of a schedule
// that is not shared calls FillAhead in each wait, on the goroutine that
// calls Next but never while Next runs, with left (> 0) until its next
// send is due, and calls it again while it returns true. FillAhead may
// take longer than left: a send it holds past its time is late. It is
// not called while the dispatcher must read each answer as it comes (a
// loop that wakes for each, or an awaited send's deadline within 20 ms).
// A Source that pauses work of its own for it (on Dispatching) must be
// reached by FillAhead wherever Dispatching reaches it: WrapSource passes
// both on.
type WaitFiller interface {
	// FillAhead makes one request ahead, when the Source wants one made
	// on the caller and that is worth left or more, and reports whether
	// it made one; false at once otherwise.
	FillAhead(left time.Duration) bool
}

// WrapSource is next as the Source of a wrapper of in (next calls in.Next
// and changes what it gives): the seams the engine finds by a Source's
// type and that concern in, not the requests (DispatcherAware,
// WaitFiller), reach in.
func WrapSource(in Source, next SourceFunc) Source { return wrapped{in: in, next: next} }

// wrapped is WrapSource's Source.
type wrapped struct {
	in   Source
	next SourceFunc
}

func (w wrapped) Next(ctx context.Context) (*Prepared, error) { return w.next(ctx) }

// Dispatching tells in, when it wants to know.
func (w wrapped) Dispatching(thread record.Dispatcher) {
	if a, ok := w.in.(DispatcherAware); ok {
		a.Dispatching(thread)
	}
}

// FillAhead tells in, when it fills in the dispatcher's waits.
func (w wrapped) FillAhead(left time.Duration) bool {
	if f, ok := w.in.(WaitFiller); ok {
		return f.FillAhead(left)
	}
	return false
}

// Source produces the prepared requests of a run. Next is called by one
// goroutine at a time (the dispatcher, or the dispatchers in turn: see
// AlwaysReady), ahead of each send's intended time; if it
// returns after that time, the send is late and counted as starved (the
// generator's bottleneck, not the SUT's). Next returns io.EOF when it has no
// more requests (the run ends, marked partial) and ctx's error when ctx is
// done.
type Source interface {
	Next(ctx context.Context) (*Prepared, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context) (*Prepared, error)

// Next calls f.
func (f SourceFunc) Next(ctx context.Context) (*Prepared, error) { return f(ctx) }

// Fallback is implemented by a token whose request may be sent again,
// signed otherwise, once answered (the double knock: RFC 9421 first,
// draft-cavage on a 4xx). The engine asks before attempt 0 (or, when the
// token is an AsSigned that said attempt 0 goes as signed, once that
// attempt is on the wire, before its answer is read, for the token's
// bookkeeping: the header it gives is not used) and after each answer:
// Attempt(p, n, status, measured) returns the header attempt n goes
// with, status being attempt n-1's answer (0 for n = 0), or ok false for
// no attempt n. measured says whether the send counts in the record. An
// error ends the send as a connection error.
type Fallback interface {
	Attempt(p *Prepared, n, status int, measured bool) (header http.Header, ok bool, err error)
}

// Holder is implemented by a token whose request must wait before it
// leaves (a Delete until its object is recorded deleted): Hold is what
// must close first, nil when nothing holds it. The wait counts in the
// send's service time and is bounded by the send's timeout.
type Holder interface {
	Hold() <-chan struct{}
}

// AsSigned is implemented by a token that knows, without waiting or
// signing, whether its request leaves now and first as it was signed: its
// Hold (if a Holder) is nil, and its Fallback (if one) will give p.Header
// and no error for attempt 0. Then the dispatcher may write that attempt
// itself on a resting connection, and a worker (or the dispatcher, once the whole
// answer is there: then Attempt for attempts 0 and 1 is called on the
// dispatcher and must not wait either) tells the Fallback of attempt 0,
// reads the answer and asks the Fallback from attempt 1 on. A Holder or
// Fallback token that is not an AsSigned, or says false, has its whole
// send made by a worker; a token that is none of the three leaves as
// signed.
// FirstAsSigned is called on the dispatcher, before the send is handed
// to a worker: it must not wait. Where dispatchers share the schedule,
// they may call FirstAsSigned and Attempt for different tokens at once,
// as workers do.
type AsSigned interface {
	FirstAsSigned() bool
}
