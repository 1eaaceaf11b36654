package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/pasture"
)

// rounds measures each side (closed loop) Rounds times, in turn, the order
// reversed every other round (A, B, …, then …, B, A: roundOrder), and
// returns their medians, in order, and every measurement.
func (b *bench) rounds(ctx context.Context, names []string, fns []func(context.Context) loopResult) (meds []float64, all map[string][]loopResult) {
	all = map[string][]loopResult{}
	rates := make([][]float64, len(names))
	for round := range b.cfg.Rounds {
		for _, i := range roundOrder(round, len(fns)) {
			if ctx.Err() != nil {
				break
			}
			r := fns[i](ctx)
			all[names[i]] = append(all[names[i]], r)
			rates[i] = append(rates[i], r.Rate)
			extra := ""
			if r.Client == clientWrk {
				extra = fmt.Sprintf(" (wrk: p50 %.2f ms, p99 %.2f ms, %.1f µs client CPU/request)", r.P50, r.P99, cpuPerRequest(r))
			}
			if r.Bad > 0 {
				extra += fmt.Sprintf(" (%d not as expected, first: %s)", r.Bad, r.FirstBad)
			}
			b.logf("  %-16s %8.0f/s%s", names[i], r.Rate, extra)
		}
	}
	for _, rs := range rates {
		meds = append(meds, median(rs))
	}
	return meds, all
}

// roundOrder is the order the n sides are measured in, in round (from 0): as given in even
// rounds, reversed in odd ones (A B, B A, A B…). On a host whose speed drifts, a side measured
// first in every round is measured a slot earlier than the other throughout, and the ratio
// takes the drift as a difference; with the order reversed, an even number of rounds puts the
// sides' median slots at the same place (A at 0, 3, 4, 7; B at 1, 2, 5, 6). The run's very
// first measurement still falls on A.
func roundOrder(round, n int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = k
		if round%2 == 1 {
			order[k] = n - 1 - k
		}
	}
	return order
}

// cpuPerRequest is the client's CPU per request of r, in µs (0 when
// unknown).
func cpuPerRequest(r loopResult) float64 {
	if n := r.OK + r.Bad; n > 0 && r.ClientCPU > 0 {
		return r.ClientCPU / float64(n) * 1e6
	}
	return 0
}

// replay is what one closed-loop pair sends: a pool of n requests,
// replayed round robin, as the Go client makes them (mk) and in wire form
// for wrk (raw), and the status a request must be answered with.
type replay struct {
	name   string // names the wrk files in the scratch directory
	n      int
	want   int
	mk     func(i int64) *http.Request // i ≥ 0: request i mod n
	raw    func(i int) []byte          // 0 ≤ i < n
	conc   int                         // connections; 0: -conc
	script string                      // the wrk script, once written
}

// closedPair measures the servers at addrA and addrB with the same
// requests, in rounds (rounds). Before any measurement, each server must
// answer every request of the pool with the wanted status (checkPool):
// wrk counts only answers ≥ 400 as errors, and a pool that does not
// work must fail the row rather than measure error pages. Each
// measurement is a warm-up of Measure/10 by the Go client (its figures
// discarded) and then Measure by the bench's client: wrk when there is
// one (whole seconds), else the Go client.
func (b *bench) closedPair(ctx context.Context, nameA, addrA, nameB, addrB string, rp *replay) (medA, medB float64, all map[string][]loopResult, err error) {
	meds, all, err := b.closedSides(ctx, []string{nameA, nameB}, []string{addrA, addrB}, rp)
	if err != nil {
		return 0, 0, nil, err
	}
	return meds[0], meds[1], all, nil
}

// closedSides is closedPair for any number of servers, measured in turn.
func (b *bench) closedSides(ctx context.Context, names, addrs []string, rp *replay) (meds []float64, all map[string][]loopResult, err error) {
	return b.closedSidesBy(ctx, b.wrk, names, addrs, rp)
}

// closedSidesBy is closedSides measured by w (nil: the Go client), over
// rp.conc connections (0: -conc).
func (b *bench) closedSidesBy(ctx context.Context, w *wrkClient, names, addrs []string, rp *replay) (meds []float64, all map[string][]loopResult, err error) {
	conc := rp.conc
	if conc <= 0 {
		conc = b.cfg.Conc
	}
	if w != nil {
		reqs := make([][]byte, rp.n)
		for i := range reqs {
			reqs[i] = rp.raw(i)
		}
		if rp.script, err = writeWrkScript(b.tmp, rp.name, reqs); err != nil {
			return nil, nil, err
		}
	}
	for i, addr := range addrs {
		if err := checkPool(ctx, addr, rp.n, rp.want, rp.mk); err != nil {
			return nil, nil, fmt.Errorf("%s does not answer the pool with %d: %w", names[i], rp.want, err)
		}
	}
	fns := make([]func(context.Context) loopResult, len(addrs))
	for i, addr := range addrs {
		fns[i] = b.closedSide(w, addr, conc, rp)
	}
	meds, all = b.rounds(ctx, names, fns)
	return meds, all, nil
}

// closedSide is one measurement of the server at addr by w (nil: the Go
// client) over conc connections, replaying rp (its wrk script written).
func (b *bench) closedSide(w *wrkClient, addr string, conc int, rp *replay) func(context.Context) loopResult {
	return func(ctx context.Context) loopResult {
		if w == nil {
			return closedLoop(ctx, addr, conc, b.cfg.Measure, rp.want, rp.mk)
		}
		closedLoop(ctx, addr, conc, b.cfg.Measure/10, rp.want, rp.mk)
		r := w.run(ctx, rp.script, addr, conc, b.cfg.Measure)
		if r.Bad > 0 && r.Seconds > 0 {
			// wrk says how many, not which: find the first bad answer.
			if err := checkPool(ctx, addr, rp.n, rp.want, rp.mk); err != nil {
				r.FirstBad += "; replayed once more: " + err.Error()
			} else {
				r.FirstBad += "; replayed once more, the pool was answered as wanted"
			}
		}
		return r
	}
}

// clientNote says which client measured a closed-loop pair, for the
// notes of its rows.
func (b *bench) clientNote(all map[string][]loopResult) string {
	if b.wrk == nil {
		return fmt.Sprintf("%d closed-loop clients of the Go client in the bench's process, %v each after a %v warm-up",
			b.cfg.Conc, b.cfg.Measure, b.cfg.Measure/10)
	}
	var cpu []float64
	for _, rs := range all {
		for _, r := range rs {
			if c := cpuPerRequest(r); c > 0 {
				cpu = append(cpu, c)
			}
		}
	}
	return fmt.Sprintf("replayed by %s (a separate process, 1 thread, %d connections, %d s each after a %v warm-up by the Go client; median client CPU %.1f µs/request)",
		b.wrk.version, b.cfg.Conc, wrkSeconds(b.cfg.Measure), b.cfg.Measure/10, median(cpu))
}

// badNote says how many answers were not the expected ones.
func badNote(all map[string][]loopResult) string {
	s := ""
	for name, rs := range all {
		for _, r := range rs {
			if r.Bad > 0 {
				s += fmt.Sprintf("; %s: %d unexpected answers (%s)", name, r.Bad, r.FirstBad)
				break
			}
		}
	}
	return s
}

// inboxSection: verified deliveries per second through inbox.ServeHTTP
// (the whole handler: routing, Content-Type, body limit, verification,
// parse, owner check, activity log, metrics) vs a bare net/http handler
// that reads the body and verifies the signature with the same keys held
// in memory. Both behind a real loopback listener, fed the same presigned
// requests by the same closed-loop client (closedPair: wrk when there is
// one). Replaying is fair: the inbox keeps no record of the activity ids
// or signatures it saw, so the nth replay of a delivery is verified,
// parsed and logged exactly as the first was, and the pool's Dates stay
// within the ±1 h window for the whole section.
func (b *bench) inboxSection(ctx context.Context) {
	const name = "inbox: verified deliveries/s (inbox.ServeHTTP)"
	const target = "≥ 15 000/s and ≥ 0.5 × bare"
	fail := func(err error) { b.rep.fail(rowInbox, name, target, err) }
	gen, err := newGenerator(b.world, b.cfg.Mix, sharedInboxTarget)
	if err != nil {
		fail(err)
		return
	}
	pool, _, err := presignPool(ctx, gen, b.cfg.Pool)
	if err != nil {
		fail(err)
		return
	}
	inAddr, stopIn, err := b.startInbox(b.world, "inbox")
	if err != nil {
		fail(err)
		return
	}
	defer stopIn()
	bareAddr, stopBare, err := startBareVerifier(b.world, b.world.Backend())
	if err != nil {
		fail(err)
		return
	}
	defer stopBare()
	rp := &replay{name: "inbox", n: len(pool), want: http.StatusAccepted,
		mk:  func(i int64) *http.Request { return postRequest(pool[i%int64(len(pool))]) },
		raw: func(i int) []byte { return rawPost(pool[i]) }}
	inRate, bareRate, all, err := b.closedPair(ctx, "inbox", inAddr, "bare verifier", bareAddr, rp)
	if err != nil {
		fail(err)
		return
	}
	b.rep.Details[rowInbox] = all
	row := Row{Key: rowInbox, Name: name, Value: inRate, Unit: "/s", Ceiling: bareRate,
		CeilingName: "bare net/http handler: read body + signing.Verifier, keys in memory", Target: target}
	if bareRate > 0 {
		row.Ratio = inRate / bareRate
	}
	row.Met = met(inRate >= 15000 && row.Ratio >= 0.5 && !anyBad(all))
	row.Notes = fmt.Sprintf("verified delivery = a POST answered 202 after the whole check (RSA-2048 signature, Digest = body, Date within ±1 h, activity parsed, key owner = actor) and logged to disk; "+
		"the inbox keeps no record of ids or signatures seen, so a replay costs what a fresh delivery does; "+
		"%d presigned Creates/Likes (%s, mean body %d B) to the shared inboxes, each answered 202 by both servers before measuring, %s, median of %d rounds, the order reversed every other round%s",
		len(pool), b.cfg.Mix, meanBody(pool), b.clientNote(all), b.cfg.Rounds, badNote(all))
	b.rep.set(row)
}

// anyBad reports whether any measurement had an unexpected answer: such
// a measurement does not count towards a target.
func anyBad(all map[string][]loopResult) bool {
	for _, rs := range all {
		for _, r := range rs {
			if r.Bad > 0 {
				return true
			}
		}
	}
	return false
}

// meanBody is the mean body length of pool, in bytes.
func meanBody(pool []*flood.Prepared) int {
	n := 0
	for _, p := range pool {
		n += len(p.Body)
	}
	return n / max(1, len(pool))
}

// rawPost is p in wire form, for wrk: its request URI, its Host (the
// origin, as the Go client sends it), its headers and body.
func rawPost(p *flood.Prepared) []byte {
	host := p.Host
	if host == "" {
		host = p.URL.Host
	}
	return rawRequest(p.Method, p.URL.RequestURI(), host, p.Header, p.Body)
}

// postRequest is a replay of p: its URL (whose host names the origin; the
// client dials the listener under test), headers and body.
func postRequest(p *flood.Prepared) *http.Request {
	return &http.Request{Method: p.Method, URL: p.URL, Header: p.Header, Host: p.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(p.Body)), ContentLength: int64(len(p.Body))}
}

// canned is a document the bare handler answers: the bytes the crowd's
// router answered for the same request, every header field it set
// included (a WebFinger answer's Access-Control-Allow-Origin, which RFC
// 7033 asks for; an actor document's Vary; the router sets neither Date nor
// Content-Length, which net/http adds to both answers alike). Without them
// the bare handler would write fewer bytes than a server must, and the
// ratio would price them as the router's cost.
type canned struct {
	header http.Header // shared by every answer, only read
	body   []byte
}

// cannedDocuments asks h (the crowd's router) for every actor's document
// and WebFinger answer of world, and returns them canned for the bare
// handler beside the two lists of requests; an error names the first
// request h did not answer 200.
func cannedDocuments(h http.Handler, world *actors.World) (answers map[string]canned, actorReqs, wfReqs []docReq, bad error) {
	answers = map[string]canned{}
	accept := http.Header{"Accept": {"application/activity+json"}}
	jrd := http.Header{"Accept": {"application/jrd+json"}}
	for _, a := range world.Actors() {
		for _, d := range []struct {
			raw    string
			header http.Header
			list   *[]docReq
		}{
			{"http://" + a.Origin.Host + "/users/" + a.Name, accept, &actorReqs},
			{"http://" + a.Origin.Host + "/.well-known/webfinger?resource=acct:" + url.QueryEscape(a.Acct()), jrd, &wfReqs},
		} {
			u, err := url.Parse(d.raw)
			if err != nil {
				if bad == nil {
					bad = err
				}
				continue
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, d.raw, nil)
			req.Header = d.header.Clone()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				if bad == nil {
					bad = fmt.Errorf("GET %s: %d %s", d.raw, rec.Code, rec.Body)
				}
				continue
			}
			answers[u.Host+u.RequestURI()] = canned{header: rec.Header().Clone(), body: rec.Body.Bytes()}
			*d.list = append(*d.list, docReq{url: u, header: d.header})
		}
	}
	return answers, actorReqs, wfReqs, bad
}

// bareDocuments is the documents' bare handler: the canned answer of the
// request's host and URI, 404 for any other.
func bareDocuments(answers map[string]canned) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := answers[r.Host+r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		for k, v := range c.header {
			h[k] = v // net/http only reads the values: no copy, as the crowd's handlers do
		}
		w.Write(c.body)
	}
}

// docReq is one GET a document client makes.
type docReq struct {
	url    *url.URL
	header http.Header
}

// documentsSection: actor documents and WebFinger through the crowd's
// router (pasture.Handler: host routing, content negotiation, metrics) vs
// a bare net/http handler answering the same bytes from a map, both behind
// a real loopback listener, fed by the same closed-loop client
// (closedPair).
func (b *bench) documentsSection(ctx context.Context) {
	const nameActor = "actor documents: GET/s (pasture router)"
	const nameWF = "WebFinger: GET/s (pasture router)"
	const least = 0.9 // the speed work's keep: the router costs at most a tenth of a bare GET
	target := fmt.Sprintf("≥ %.1f × bare", least)
	p, err := pasture.New(pasture.Config{World: b.world, Version: "bench"})
	if err != nil {
		b.rep.fail(rowActor, nameActor, target, err)
		b.rep.fail(rowWebFinger, nameWF, target, err)
		return
	}
	h := p.Handler()
	answers, actorReqs, wfReqs, bad := cannedDocuments(h, b.world)
	if bad != nil {
		b.rep.fail(rowActor, nameActor, target, bad)
		b.rep.fail(rowWebFinger, nameWF, target, bad)
		return
	}
	bare := bareDocuments(answers)
	pAddr, stopP, err := serve(h)
	if err != nil {
		b.rep.fail(rowActor, nameActor, target, err)
		return
	}
	defer stopP()
	bAddr, stopB, err := serve(bare)
	if err != nil {
		b.rep.fail(rowActor, nameActor, target, err)
		return
	}
	defer stopB()
	get := func(reqs []docReq) func(int64) *http.Request {
		return func(i int64) *http.Request {
			d := reqs[i%int64(len(reqs))]
			return &http.Request{Method: http.MethodGet, URL: d.url, Header: d.header, Host: d.url.Host,
				Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		}
	}
	raw := func(reqs []docReq) func(int) []byte {
		return func(i int) []byte {
			d := reqs[i]
			return rawRequest(http.MethodGet, d.url.RequestURI(), d.url.Host, d.header, nil)
		}
	}
	for _, d := range []struct {
		key, name, what string
		reqs            []docReq
	}{
		{rowActor, nameActor, "actor", actorReqs},
		{rowWebFinger, nameWF, "webfinger", wfReqs},
	} {
		if ctx.Err() != nil {
			return
		}
		rp := &replay{name: d.what, n: len(d.reqs), want: http.StatusOK, mk: get(d.reqs), raw: raw(d.reqs)}
		crowd, bareRate, all, err := b.closedPair(ctx, d.what, pAddr, "bare "+d.what, bAddr, rp)
		if err != nil {
			b.rep.fail(d.key, d.name, target, err)
			continue
		}
		b.rep.Details[d.key] = all
		row := Row{Key: d.key, Name: d.name, Value: crowd, Unit: "/s", Ceiling: bareRate,
			CeilingName: "bare net/http handler answering the same bytes from a map", Target: target}
		if bareRate > 0 {
			row.Ratio = crowd / bareRate
		}
		row.Met = met(row.Ratio >= least && !anyBad(all))
		row.Notes = fmt.Sprintf("%d documents (%d B mean) round robin, each answered 200 by both servers before measuring, %s, the ratio of the medians of %d rounds, the order reversed every other round (each round's own ratio: %s)%s",
			len(d.reqs), meanBytes(answers, d.reqs), b.clientNote(all), b.cfg.Rounds, roundRatios(all[d.what], all["bare "+d.what]), badNote(all))
		b.rep.set(row)
	}
}

// roundRatios lists a/b round by round (each pair measured one after the other, so a
// drift of the machine's speed over the section moves both): the spread a median hides.
func roundRatios(a, b []loopResult) string {
	var out []string
	for i := range min(len(a), len(b)) {
		if b[i].Rate > 0 {
			out = append(out, fmt.Sprintf("%.2f", a[i].Rate/b[i].Rate))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// meanBytes is the mean length of the answers to reqs, in bytes.
func meanBytes(answers map[string]canned, reqs []docReq) int {
	n := 0
	for _, r := range reqs {
		n += len(answers[r.url.Host+r.url.RequestURI()].body)
	}
	return n / max(1, len(reqs))
}
