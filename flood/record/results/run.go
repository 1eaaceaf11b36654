package results

import (
	"net/url"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// Run is the collector (flood.Collector) that writes one run's lines
// through its Writer: a RunLine at Begin, a SendLine per request settled,
// an EndLine at End. Settled never blocks: a line that finds the Writer's
// queue full is lost and counted in the EndLine.
type Run struct {
	w     *Writer
	index int
	s     record.Settings
	seed  uint64
	sends atomic.Int64
	lost  atomic.Int64
}

// Run returns the collector of the Writer's next run, whose first line
// carries s. Call it on one goroutine, one run after another.
func (w *Writer) Run(s record.Settings) *Run {
	r := &Run{w: w, index: w.runs, s: s}
	w.runs++
	return r
}

// SetSeed says the seed of the run's draws in its first line; before Begin.
func (r *Run) SetSeed(seed uint64) { r.seed = seed }

// Begin writes the run's first line, its settings completed from the
// schedule as the record's are.
func (r *Run) Begin(s record.Schedule) {
	set := r.s
	set.Rate, set.Duration, set.Warmup, set.MaxSends, set.MaxInflight, set.Timeout = s.Rate, s.Duration, s.Warmup, s.MaxSends, s.MaxInflight, s.Timeout
	head := &RunLine{Line: LineRun, Schema: Schema, Version: Version, Run: r.index,
		Start: s.Start.UTC(), Settings: set, RateHz: s.Rate, DurationUS: s.Duration.Microseconds(),
		WarmupUS: s.Warmup.Microseconds(), MaxSends: s.MaxSends, MaxInflight: s.MaxInflight,
		TimeoutUS: s.Timeout.Microseconds(), TotalUS: s.Total.Microseconds(), Seed: r.seed}
	if d := s.Dispatcher; d != (record.Dispatcher{}) {
		head.Dispatcher = &d
	}
	r.w.queue <- entry{head: head}
}

// Offered is nothing to the results: the settlement carries the offer.
func (r *Run) Offered(record.Offer) {}

// Answered is nothing to the results: the settlement carries the delivery.
func (r *Run) Answered(int, *record.Delivery) {}

// Settled queues the request's line.
func (r *Run) Settled(token any, o record.Outcome) {
	e := entry{send: send{run: r.index, sent: o.Sent, aborted: o.Aborted}}
	if o.Delivery != nil {
		e.send.d = *o.Delivery
	}
	if o.Offer.Dropped {
		e.send.o, e.send.offered = o.Offer, true
	}
	if r.w.o.Describe != nil {
		e.send.who = r.w.o.Describe(token)
	}
	select {
	case r.w.queue <- e:
		r.sends.Add(1)
	default:
		r.lost.Add(1)
		r.w.lost.Add(1)
	}
}

// End writes the run's last line and waits until it is written through
// (or the Writer failed), so that Err then says whether the run's lines
// are all in the file.
func (r *Run) End(st record.Stop) {
	end := &EndLine{Line: LineEnd, Run: r.index, End: st.End.UTC(), WindowEndUS: st.WindowEnd.Microseconds(),
		Partial: st.Partial, Reason: string(st.Reason), Sends: r.sends.Load(), Lost: r.lost.Load()}
	if st.Err != nil {
		end.Error = st.Err.Error()
	}
	flushed := make(chan struct{})
	r.w.queue <- entry{end: end}
	r.w.queue <- entry{flushed: flushed}
	<-flushed
}

// lineScratch is what the writing goroutine makes a send's line in,
// reused line after line, so that a line allocates nothing: a fast flood
// writes one a send, and their garbage had the GC run beside it.
type lineScratch struct {
	l    SendLine
	at   time.Time // what l.RateLimitResetAt points to
	nums [8]int64  // what l's other pointer fields point to: SendLine has eight *int64
	used int
	// The last target seen, by value, and its string: the sends of a
	// flood share a few targets, each parsed once per actor.
	url   url.URL
	inbox string
}

// num is a pointer to v, in the scratch.
func (sc *lineScratch) num(v int64) *int64 {
	p := &sc.nums[sc.used]
	*p = v
	sc.used++
	return p
}

func (sc *lineScratch) micros(d time.Duration) *int64 { return sc.num(d.Microseconds()) }

// target is u's string, made again only when u differs from the last.
func (sc *lineScratch) target(u *url.URL) string {
	if *u != sc.url || sc.inbox == "" {
		sc.url, sc.inbox = *u, u.String()
	}
	return sc.inbox
}

// line is the send's SendLine, made in sc (valid until its next line).
func (sc *lineScratch) line(s *send) *SendLine {
	sc.used = 0
	l := &sc.l
	*l = SendLine{Line: LineSend, Run: s.run, Sender: s.who.Actor, Origin: s.who.Origin, Signature: s.who.Signature, Forged: s.who.Forged}
	switch {
	case s.sent:
		sc.sentLine(s, l)
	case s.offered:
		l.Type, l.Measured, l.Starved, l.Outcome = s.o.Type, s.o.Measured, s.o.Starved, OutcomeDropped
		l.IntendedUS = sc.micros(s.o.Due)
	default:
		l.Outcome = OutcomeUnsent
	}
	return l
}

// sentLine fills l from the send's Delivery.
func (sc *lineScratch) sentLine(s *send, l *SendLine) {
	d := &s.d
	l.Type, l.Measured, l.Starved, l.Written = d.Type, d.Measured, d.Starved, d.Written
	if d.URL != nil {
		l.Inbox = sc.target(d.URL)
	}
	l.IntendedUS, l.PickedUS, l.DoneUS = sc.micros(d.Intended), sc.micros(d.Picked), sc.micros(d.Done)
	l.RequestBytes, l.Attempts, l.FellBack = d.SentBytes, d.Attempts, d.Attempts > 1
	if s.aborted {
		l.Outcome = OutcomeAborted
		return
	}
	l.SentUS = sc.micros(d.Actual)
	l.ResponseBytes, l.Class, l.Status, l.NoAnswer = d.GotBytes, d.Class.String(), d.Status, d.NoAnswer
	switch d.Class {
	case record.ClassTimeout:
		l.Outcome = OutcomeTimeout
	case record.ClassConnError:
		l.Outcome = OutcomeConn
	default:
		l.Outcome = OutcomeAnswered
	}
	sc.rateLimit(l, &d.RateLimit)
}

// rateLimit fills what the answer said of the server's rate limit.
func (sc *lineScratch) rateLimit(l *SendLine, rl *record.RateLimitSample) {
	said := func(f record.RateLimitFields) bool { return rl.Said&f != 0 }
	l.RetryAfter, l.RateLimitIETF = said(record.SaidRetryAfter), said(record.SaidIETF)
	if said(record.SaidLimit) {
		l.RateLimitLimit = sc.num(rl.Limit)
	}
	if said(record.SaidRemaining) {
		l.RateLimitRemaining = sc.num(rl.Remaining)
	}
	if said(record.SaidWindow) {
		l.RateLimitWindowUS = sc.micros(rl.Window)
	}
	if said(record.SaidReset) {
		l.RateLimitResetUS = sc.micros(rl.ResetIn)
		sc.at = rl.ResetAt.UTC()
		l.RateLimitResetAt = &sc.at
	}
}
