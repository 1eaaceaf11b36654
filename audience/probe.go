package audience

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/crowdfed/crowd/flood/record"
)

// DefaultHomeLimit is how many statuses a probe asks for: Mastodon's
// maximum for the home timeline.
const DefaultHomeLimit = 40

// ProbeTarget is one persona whose home timeline is read.
type ProbeTarget struct {
	Persona string // the name Seen reports (the key Visibility uses)
	Token   string
}

// Prober reads the home timelines of its targets Hz times a second each,
// on a fixed schedule (target i offset by i/n of a period, so the probes
// spread), and reports every status it sees.
type Prober struct {
	Client  *Client
	Targets []ProbeTarget
	// Hz is probes per second per persona (--probe-hz).
	Hz float64
	// Limit is the statuses asked for; 0 = DefaultHomeLimit.
	Limit int
	// Timeout bounds each probe; 0 = 10 s.
	Timeout time.Duration
	// OnSeen is called for every status of every answer, with the time the
	// probe was asked and the time its answer arrived; it returns true when
	// persona had not seen uri before.
	OnSeen func(persona, uri string, asked, at time.Time) bool
}

// HomeStats sum up the probes of the home timelines.
type HomeStats struct {
	// Probes made; OK of them answered 2xx with a timeline.
	Probes int64 `json:"probes"`
	OK     int64 `json:"ok"`
	// Errors by class: "401", "403", "404", "429", "4xx", "5xx", "timeout",
	// "connection", "malformed".
	Errors       int64            `json:"errors"`
	ErrorClasses map[string]int64 `json:"error_classes,omitempty"`
	// Partial answers (Mastodon's 206: the home feed is being regenerated).
	Partial int64 `json:"partial"`
	// Overflows are full answers (Limit statuses) that were all new to the
	// persona: notes may have scrolled past between two probes unseen.
	Overflows int64 `json:"overflows"`
	// Skipped ticks: the probe before was still running when one was due.
	Skipped int64 `json:"skipped"`
	// Latency of the probes that answered 2xx (request to the end of the
	// body), in µs.
	Latency record.HistRecord `json:"latency"`
}

// probeClass is the error class of a failed probe.
func probeClass(err error) string {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
		switch {
		case ae.Status == 401 || ae.Status == 403 || ae.Status == 404 || ae.Status == 429:
			return fmt.Sprint(ae.Status)
		case ae.Status >= 500:
			return "5xx"
		default:
			return "4xx"
		}
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "connection"
}

// probeShard is one target's goroutine's own tally (HDR histograms are not
// goroutine-safe: one each, merged at the end).
type probeShard struct {
	st   HomeStats
	hist *hdr.Histogram
}

// Run probes until ctx ends and returns the tally of this run.
func (p *Prober) Run(ctx context.Context) HomeStats {
	hz := p.Hz
	if !(hz > 0) {
		hz = 1
	}
	period := time.Duration(float64(time.Second) / hz)
	limit := cmp.Or(p.Limit, DefaultHomeLimit)
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	shards := make([]*probeShard, len(p.Targets))
	var wg sync.WaitGroup
	start := time.Now()
	for i, t := range p.Targets {
		sh := &probeShard{hist: record.NewHist(), st: HomeStats{ErrorClasses: map[string]int64{}}}
		shards[i] = sh
		offset := period * time.Duration(i) / time.Duration(len(p.Targets))
		wg.Go(func() { p.loop(ctx, t, sh, start.Add(offset), period, limit, timeout) })
	}
	wg.Wait()
	out := HomeStats{ErrorClasses: map[string]int64{}}
	h := record.NewHist()
	for _, sh := range shards {
		out.Probes += sh.st.Probes
		out.OK += sh.st.OK
		out.Errors += sh.st.Errors
		out.Partial += sh.st.Partial
		out.Overflows += sh.st.Overflows
		out.Skipped += sh.st.Skipped
		for k, n := range sh.st.ErrorClasses {
			out.ErrorClasses[k] += n
		}
		h.Merge(sh.hist)
	}
	out.Latency = keptHist(h)
	if len(out.ErrorClasses) == 0 {
		out.ErrorClasses = nil
	}
	return out
}

// loop probes one target on its schedule: next, next+period, …
func (p *Prober) loop(ctx context.Context, t ProbeTarget, sh *probeShard, next time.Time, period time.Duration, limit int, timeout time.Duration) {
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		t0 := time.Now()
		statuses, partial, err := p.Client.HomeTimeline(pctx, t.Token, limit)
		t1 := time.Now()
		cancel()
		if ctx.Err() != nil {
			return // the run ended during the probe: it is not one of its figures
		}
		sh.st.Probes++
		if err != nil {
			sh.st.Errors++
			sh.st.ErrorClasses[probeClass(err)]++
		} else {
			sh.st.OK++
			record.RecordDuration(sh.hist, t1.Sub(t0))
			if partial {
				sh.st.Partial++
			}
			fresh := 0
			for _, s := range statuses {
				if p.OnSeen != nil && p.OnSeen(t.Persona, s.URI, t0, t1) {
					fresh++
				}
			}
			if !first && len(statuses) >= limit && fresh == len(statuses) {
				sh.st.Overflows++
			}
			first = false
		}
		next = next.Add(period)
		if now := time.Now(); now.After(next) {
			missed := int64(now.Sub(next)/period) + 1
			sh.st.Skipped += missed
			next = next.Add(time.Duration(missed) * period)
		}
		timer.Reset(time.Until(next))
	}
}
