package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/livemetrics"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/loadrun"
	"github.com/crowdfed/crowd/pasture"
)

// liveMetricsSection: what the live metrics cost the flood. Two searches of
// the highest rate a pipeline-signed flood sustains, their trials
// alternating: one plain, one with the live metrics as `crowd flood
// --metrics-addr` attached to a serve runs them (loadrun.LiveMetrics, the
// same wiring: the engine's Watch on every send; each tick the metrics'
// Progress, their encoding, the status classes and the FloodLive push built
// and POSTed to a real admin API, a pasture serving on loopback in this
// process), with /metrics scraped over loopback every second; then their
// CPU a send in paired trials (costRow). Target: the metrics side keeps
// ≥ 0.95 of the plain side's rate.
func (b *bench) liveMetricsSection(ctx context.Context) {
	const name = "flood, pipeline signing with live metrics: its rate beside the same without (null sink)"
	const target = "≥ 0.95 × without"
	gen, signer, start, err := b.pipelineStart(ctx)
	if err != nil {
		b.rep.fail(rowLiveMetrics, name, target, err)
		return
	}
	plain := func(ctx context.Context, rate float64) outcome {
		b.logf("  without live metrics:")
		o := b.pipelineTrial(ctx, "plain", gen, signer, rate, 0, 0, nil)
		o.Side = "plain"
		return o
	}
	serve, err := startBenchServe(b)
	if err != nil {
		b.rep.fail(rowLiveMetrics, name, target, err)
		return
	}
	defer serve.Close()
	watched := func(ctx context.Context, rate float64) outcome {
		var lm *loadrun.LiveMetrics
		var lerr error
		b.logf("  with live metrics:")
		o := b.pipelineTrial(ctx, "metrics", gen, signer, rate, 0, 0, func(p *flood.Plan) (flood.Collector, func(record.Progress)) {
			buf, _ := p.Source.(livemetrics.Buffer) // the trial's pipeline, as a run's
			lm, lerr = loadrun.StartLiveMetrics(ctx, loadrun.LiveMetricsConfig{Run: adminapi.FloodRun{Label: "bench", Seed: "1"},
				Buffer: buf, Admin: serve.admin, Addr: "127.0.0.1:0"})
			if lerr != nil {
				return nil, nil
			}
			serve.scrape(lm.Addr())
			return lm.Watch(p.Pacer.Rate(), nil)
		})
		serve.stopScraping()
		if lm != nil {
			lm.Stop()
		}
		o.Side = "metrics"
		if lerr == nil {
			lerr = serve.pushed(ctx)
		}
		if lerr != nil {
			o.Pass, o.Why = false, "the live metrics: "+lerr.Error()
		}
		return o
	}
	ps := newSearch("plain", start, 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	ms := newSearch("metrics", start, 1.25, b.cfg.Bracket+2, b.cfg.Steps, b.cfg.Retries)
	interleave(ctx, ms, ps, watched, plain)
	rule := fmt.Sprintf("metrics side: --metrics-addr's wiring (loadrun.LiveMetrics: the Watch on every send; Progress, encoding, classes and the push to an in-process serve's admin API each tick) and a loopback scrape of /metrics every second; the pipeline row's rule otherwise; %v trials alternating", b.cfg.Trial)
	b.rep.set(b.costRow(ctx, rowLiveMetrics, name, target, 0.95, ms, ps, watched, plain, rule))
}

// benchServe is a real admin API (a pasture of the bench's world) on a
// loopback listener, for the metrics side to push to, and the scraper of
// the metrics side's /metrics.
type benchServe struct {
	admin *adminapi.Client
	srv   *http.Server

	done     chan struct{} // closed to stop the scraper; nil when none runs
	finished chan struct{}
}

// startBenchServe starts the admin API.
func startBenchServe(b *bench) (*benchServe, error) {
	p, err := pasture.New(pasture.Config{World: b.world, Version: "bench"})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &benchServe{srv: &http.Server{Handler: p.AdminHandler(), ReadHeaderTimeout: 5 * time.Second}}
	go s.srv.Serve(ln)
	if s.admin, err = adminapi.New("http://"+ln.Addr().String(), adminapi.Options{}); err != nil {
		s.srv.Close()
		return nil, err
	}
	return s, nil
}

// scrape GETs http://addr/metrics once a second, as Prometheus does, until
// stopScraping.
func (s *benchServe) scrape(addr string) {
	s.done, s.finished = make(chan struct{}), make(chan struct{})
	go func(done, finished chan struct{}) {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}(s.done, s.finished)
}

// stopScraping stops the scraper, if one runs.
func (s *benchServe) stopScraping() {
	if s.done == nil {
		return
	}
	close(s.done)
	<-s.finished
	s.done = nil
}

// pushed checks the serve holds the trial's final push: the metrics side
// paid for the pushes it is priced with.
func (s *benchServe) pushed(ctx context.Context) error {
	runs, err := s.admin.FloodLive(ctx)
	if err != nil {
		return fmt.Errorf("reading the serve's live runs: %w", err)
	}
	if len(runs) == 0 || !runs[0].Final || runs[0].Totals.Sent == 0 {
		return fmt.Errorf("the serve holds no final push of the trial (%d runs)", len(runs))
	}
	return nil
}

// Close stops the admin API.
func (s *benchServe) Close() { s.srv.Close() }
