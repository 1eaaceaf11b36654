package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/pasture"
	"github.com/crowdfed/crowd/signing"
)

// pair measures A and B (closed loop) Rounds times each, alternating,
// and returns their medians and every measurement.
func (b *bench) pair(ctx context.Context, nameA, nameB string, a, b2 func(context.Context) loopResult) (medA, medB float64, all map[string][]loopResult) {
	all = map[string][]loopResult{}
	var ra, rb []float64
	for range b.cfg.Rounds {
		for _, side := range []struct {
			name string
			fn   func(context.Context) loopResult
			out  *[]float64
		}{{nameA, a, &ra}, {nameB, b2, &rb}} {
			if ctx.Err() != nil {
				break
			}
			r := side.fn(ctx)
			all[side.name] = append(all[side.name], r)
			*side.out = append(*side.out, r.Rate)
			bad := ""
			if r.Bad > 0 {
				bad = fmt.Sprintf(" (%d not as expected, first: %s)", r.Bad, r.FirstBad)
			}
			b.logf("  %-16s %8.0f/s%s", side.name, r.Rate, bad)
		}
	}
	return median(ra), median(rb), all
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
// requests by the same closed-loop client.
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
	dir := filepath.Join(b.tmp, "inbox")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail(err)
		return
	}
	in, err := inbox.New(inbox.Config{World: b.world, StateDir: dir, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		fail(err)
		return
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in.Shutdown(sctx)
	}()
	inAddr, stopIn, err := serve(in)
	if err != nil {
		fail(err)
		return
	}
	defer stopIn()
	keys := map[string]signing.PublicKey{}
	for _, o := range b.world.Origins {
		for _, a := range o.Actors {
			keys[a.KeyID] = signing.PublicKey{Key: &a.Key.PublicKey, Owner: a.ID, ID: a.KeyID}
		}
		keys[o.Instance.KeyID] = signing.PublicKey{Key: &o.Instance.Key.PublicKey, Owner: o.Instance.ID, ID: o.Instance.KeyID}
	}
	verifier := &signing.Verifier{Keys: signing.KeyResolverFunc(func(_ context.Context, keyID string, _ bool) (signing.PublicKey, error) {
		if k, ok := keys[keyID]; ok {
			return k, nil
		}
		return signing.PublicKey{}, fmt.Errorf("%w: %s", signing.ErrKeyUnavailable, keyID)
	})}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := verifier.Verify(r.Context(), r, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	bareAddr, stopBare, err := serve(bare)
	if err != nil {
		fail(err)
		return
	}
	defer stopBare()
	mk := func(i int64) *http.Request { return postRequest(pool[i%int64(len(pool))]) }
	inRate, bareRate, all := b.pair(ctx, "inbox", "bare verifier",
		func(ctx context.Context) loopResult {
			return closedLoop(ctx, inAddr, b.cfg.Conc, b.cfg.Measure, http.StatusAccepted, mk)
		},
		func(ctx context.Context) loopResult {
			return closedLoop(ctx, bareAddr, b.cfg.Conc, b.cfg.Measure, http.StatusAccepted, mk)
		})
	b.rep.Details[rowInbox] = all
	row := Row{Key: rowInbox, Name: name, Value: inRate, Unit: "/s", Ceiling: bareRate,
		CeilingName: "bare net/http handler: read body + signing.Verifier, keys in memory", Target: target}
	if bareRate > 0 {
		row.Ratio = inRate / bareRate
	}
	row.Met = met(inRate >= 15000 && row.Ratio >= 0.5)
	row.Notes = fmt.Sprintf("%d presigned Creates/Likes (%s) to the shared inboxes, replayed by %d closed-loop clients for %v, median of %d alternating rounds; the activity log writes to disk%s",
		len(pool), b.cfg.Mix, b.cfg.Conc, b.cfg.Measure, b.cfg.Rounds, badNote(all))
	b.rep.set(row)
}

// postRequest is a replay of p: its URL (whose host names the origin; the
// client dials the listener under test), headers and body.
func postRequest(p *flood.Prepared) *http.Request {
	return &http.Request{Method: p.Method, URL: p.URL, Header: p.Header, Host: p.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(p.Body)), ContentLength: int64(len(p.Body))}
}

// canned is a document the bare handler answers: the bytes the crowd's
// router answered for the same request.
type canned struct {
	contentType string
	body        []byte
}

// docReq is one GET a document client makes.
type docReq struct {
	url    *url.URL
	header http.Header
}

// documentsSection: actor documents and WebFinger through the crowd's
// router (pasture.Handler: host routing, content negotiation, metrics) vs
// a bare net/http handler answering the same bytes from a map, both behind
// a real loopback listener, fed by the same closed-loop client.
func (b *bench) documentsSection(ctx context.Context) {
	const nameActor = "actor documents: GET/s (pasture router)"
	const nameWF = "WebFinger: GET/s (pasture router)"
	const target = "≥ 0.8 × bare"
	p, err := pasture.New(pasture.Config{World: b.world, Version: "bench"})
	if err != nil {
		b.rep.fail(rowActor, nameActor, target, err)
		b.rep.fail(rowWebFinger, nameWF, target, err)
		return
	}
	h := p.Handler()
	var actorReqs, wfReqs []docReq
	answers := map[string]canned{}
	accept := http.Header{"Accept": {"application/activity+json"}}
	jrd := http.Header{"Accept": {"application/jrd+json"}}
	var bad error
	for _, a := range b.world.Actors() {
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
				bad = err
				continue
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, d.raw, nil)
			req.Header = d.header.Clone()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				bad = fmt.Errorf("GET %s: %d %s", d.raw, rec.Code, rec.Body)
				continue
			}
			answers[u.Host+u.RequestURI()] = canned{contentType: rec.Header().Get("Content-Type"), body: rec.Body.Bytes()}
			*d.list = append(*d.list, docReq{url: u, header: d.header})
		}
	}
	if bad != nil {
		b.rep.fail(rowActor, nameActor, target, bad)
		b.rep.fail(rowWebFinger, nameWF, target, bad)
		return
	}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := answers[r.Host+r.URL.RequestURI()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", c.contentType)
		w.Write(c.body)
	})
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
	loop := func(addr string, reqs []docReq) func(context.Context) loopResult {
		return func(ctx context.Context) loopResult {
			return closedLoop(ctx, addr, b.cfg.Conc, b.cfg.Measure, http.StatusOK, get(reqs))
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
		crowd, bareRate, all := b.pair(ctx, d.what, "bare "+d.what, loop(pAddr, d.reqs), loop(bAddr, d.reqs))
		b.rep.Details[d.key] = all
		row := Row{Key: d.key, Name: d.name, Value: crowd, Unit: "/s", Ceiling: bareRate,
			CeilingName: "bare net/http handler answering the same bytes from a map", Target: target}
		if bareRate > 0 {
			row.Ratio = crowd / bareRate
		}
		row.Met = met(row.Ratio >= 0.8)
		row.Notes = fmt.Sprintf("%d documents (%d B mean) round robin, %d closed-loop clients for %v, median of %d alternating rounds%s",
			len(d.reqs), meanBytes(answers, d.reqs), b.cfg.Conc, b.cfg.Measure, b.cfg.Rounds, badNote(all))
		b.rep.set(row)
	}
}

func meanBytes(answers map[string]canned, reqs []docReq) int {
	n := 0
	for _, r := range reqs {
		n += len(answers[r.url.Host+r.url.RequestURI()].body)
	}
	return n / max(1, len(reqs))
}
