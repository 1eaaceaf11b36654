package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/pasture"
	"github.com/crowdfed/crowd/pasture/weather"
)

// Row keys of the weather section.
const (
	rowWeatherDocuments = "weather_documents"
	rowWeatherInbox     = "weather_inbox"
)

// benchWeather is the weather the section puts on 10 % of the world's origins (at least one,
// and never all): the last origins, given in turn the conditions the HTTP path answers, so the
// weather's check is live while the clear origins are measured.
func benchWeather(hosts []string) weather.Spec {
	kinds := []weather.Condition{
		{Kind: weather.Down}, {Kind: weather.Flaky, P: 0.5}, {Kind: weather.Blackhole},
		{Kind: weather.Slow, Delay: 30 * time.Second, DocShare: 0.5}, {Kind: weather.Limited, Delay: time.Minute},
	}
	n := min(max(1, len(hosts)/10), len(hosts)-1)
	var spec weather.Spec
	for i, h := range hosts[len(hosts)-max(n, 0):] {
		spec.Rules = append(spec.Rules, weather.Rule{Condition: kinds[i%len(kinds)], Origins: []string{h}})
	}
	return spec
}

// weatherSection measures what bad weather on some origins costs the clear ones: actor
// documents and verified deliveries through the crowd's origin router (pasture.Handler: host
// routing, weather, metrics, the inbox) with benchWeather in force, beside the same router with
// clear weather, both fed only requests to origins the weather left clear, by the same
// closed-loop client (closedPair). Healthy origins should not pay for sick ones.
func (b *bench) weatherSection(ctx context.Context) {
	const nameDocs = "actor documents, 10 % of origins in weather: GET/s to the clear ones"
	const nameInbox = "inbox, 10 % of origins in weather: verified deliveries/s to the clear ones"
	const target = "≥ 0.95 × clear weather"
	spec := benchWeather(b.world.Hosts())
	if spec.IsClear() {
		err := fmt.Errorf("a world of %d origin cannot have some in weather and some clear (-origins)", len(b.world.Origins))
		b.rep.fail(rowWeatherDocuments, nameDocs, target, err)
		b.rep.fail(rowWeatherInbox, nameInbox, target, err)
		return
	}
	for _, side := range []struct {
		key, name string
		run       func(ctx context.Context, spec weather.Spec) (Row, error)
	}{
		{rowWeatherDocuments, nameDocs, b.weatherDocuments},
		{rowWeatherInbox, nameInbox, b.weatherInbox},
	} {
		if ctx.Err() != nil {
			return
		}
		row, err := side.run(ctx, spec)
		if err != nil {
			b.rep.fail(side.key, side.name, target, err)
			continue
		}
		row.Key, row.Name, row.Target, row.Unit = side.key, side.name, target, "/s"
		if row.Ceiling > 0 {
			row.Ratio = row.Value / row.Ceiling
		}
		results, _ := b.rep.Details[side.key].(map[string][]loopResult)
		row.Met = met(row.Ratio >= 0.95 && !anyBad(results))
		b.rep.set(row)
	}
}

// weatherRouters serves two origin routers of the bench's world, one in spec's weather and one
// in clear weather, each with the inbox handler mk makes (nil: none); clear reports whether
// the weathered router leaves a host clear.
func (b *bench) weatherRouters(spec weather.Spec, mk func(name string) (http.Handler, func(), error)) (wetAddr, dryAddr string, clear func(host string) bool, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	var wet *pasture.Pasture
	for _, s := range []struct {
		name string
		spec weather.Spec
		addr *string
	}{{"weather", spec, &wetAddr}, {"clear", weather.Spec{}, &dryAddr}} {
		var in http.Handler
		if mk != nil {
			h, done, err := mk(s.name)
			if err != nil {
				stop()
				return "", "", nil, nil, err
			}
			in = h
			stops = append(stops, done)
		}
		p, err := pasture.New(pasture.Config{World: b.world, Version: "bench", Inbox: in, Weather: s.spec, Registry: prometheus.NewRegistry()})
		if err != nil {
			stop()
			return "", "", nil, nil, err
		}
		if s.name == "weather" {
			wet = p
		}
		addr, done, err := serve(p.Handler())
		if err != nil {
			stop()
			return "", "", nil, nil, err
		}
		*s.addr = addr
		stops = append(stops, done)
	}
	return wetAddr, dryAddr, func(host string) bool { return wet.Sky().Condition(host).Kind == weather.Clear }, stop, nil
}

// weatherDocuments is the documents row: every clear origin's actor documents, round robin.
func (b *bench) weatherDocuments(ctx context.Context, spec weather.Spec) (Row, error) {
	wet, dry, clear, stop, err := b.weatherRouters(spec, nil)
	if err != nil {
		return Row{}, err
	}
	defer stop()
	accept := http.Header{"Accept": {"application/activity+json"}}
	var reqs []docReq
	for _, a := range b.world.Actors() {
		if !clear(a.Origin.Host) {
			continue
		}
		u, err := url.Parse("http://" + a.Origin.Host + "/users/" + a.Name)
		if err != nil {
			return Row{}, err
		}
		reqs = append(reqs, docReq{url: u, header: accept})
	}
	if len(reqs) == 0 {
		return Row{}, fmt.Errorf("the weather %s left no origin clear", spec)
	}
	rp := &replay{name: "weather documents", n: len(reqs), want: http.StatusOK,
		mk: func(i int64) *http.Request {
			d := reqs[i%int64(len(reqs))]
			return &http.Request{Method: http.MethodGet, URL: d.url, Header: d.header, Host: d.url.Host,
				Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		},
		raw: func(i int) []byte {
			return rawRequest(http.MethodGet, reqs[i].url.RequestURI(), reqs[i].url.Host, reqs[i].header, nil)
		}}
	wetRate, dryRate, all, err := b.closedPair(ctx, "documents in weather", wet, "documents in clear weather", dry, rp)
	if err != nil {
		return Row{}, err
	}
	b.rep.Details[rowWeatherDocuments] = all
	return Row{Value: wetRate, Ceiling: dryRate, CeilingName: "the same router with clear weather",
		Notes: fmt.Sprintf("weather %s; %d actor documents of the clear origins round robin, %s, median of %d rounds, the order reversed every other round%s",
			spec, len(reqs), b.clientNote(all), b.cfg.Rounds, badNote(all))}, nil
}

// weatherInbox is the inbox row: the inbox section's presigned deliveries whose origin the
// weather left clear, through the router to the inbox.
func (b *bench) weatherInbox(ctx context.Context, spec weather.Spec) (Row, error) {
	gen, err := newGenerator(b.world, b.cfg.Mix, sharedInboxTarget)
	if err != nil {
		return Row{}, err
	}
	all, _, err := presignPool(ctx, gen, b.cfg.Pool)
	if err != nil {
		return Row{}, err
	}
	mk := func(name string) (http.Handler, func(), error) {
		dir := filepath.Join(b.tmp, "weather-inbox-"+name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, err
		}
		in, err := inbox.New(inbox.Config{World: b.world, StateDir: dir, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
		if err != nil {
			return nil, nil, err
		}
		return in, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			in.Shutdown(sctx)
		}, nil
	}
	wet, dry, clear, stop, err := b.weatherRouters(spec, mk)
	if err != nil {
		return Row{}, err
	}
	defer stop()
	var pool []*flood.Prepared
	for _, p := range all {
		host := p.Host
		if host == "" {
			host = p.URL.Hostname()
		}
		if clear(host) {
			pool = append(pool, p)
		}
	}
	if len(pool) == 0 {
		return Row{}, fmt.Errorf("the weather %s left no delivery's origin clear", spec)
	}
	rp := &replay{name: "weather inbox", n: len(pool), want: http.StatusAccepted,
		mk:  func(i int64) *http.Request { return postRequest(pool[i%int64(len(pool))]) },
		raw: func(i int) []byte { return rawPost(pool[i]) }}
	wetRate, dryRate, results, err := b.closedPair(ctx, "inbox in weather", wet, "inbox in clear weather", dry, rp)
	if err != nil {
		return Row{}, err
	}
	b.rep.Details[rowWeatherInbox] = results
	return Row{Value: wetRate, Ceiling: dryRate, CeilingName: "the same router and inbox with clear weather",
		Notes: fmt.Sprintf("weather %s; %d of the inbox section's presigned deliveries, those to clear origins' shared inboxes, each answered 202 by both before measuring, %s, median of %d rounds, the order reversed every other round%s",
			spec, len(pool), b.clientNote(results), b.cfg.Rounds, badNote(results))}, nil
}
