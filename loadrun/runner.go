package loadrun

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// runner carries a run from its environment to its records; its ledger
// keeps the crowd's bookkeeping.
type runner struct {
	c   Config
	p   *plan
	log *zap.Logger
	env *Environment
	sending
	ledger
	obs      Observer // nil: none
	settings record.Settings
	file     *record.RecordFile // the current run's record: checkpoints, then the final write
	live     *live              // the live metrics (nil: neither served nor pushed)
	weather  *timeline          // the weather watch and timeline (nil: none)
	results  *resultsFile       // --results
}

// sending is how the flood reaches the SUT: the guard on its dials, the
// TLS it trusts, the signer, the transport, and the source every run
// shares.
type sending struct {
	guard     *flood.Guard
	tls       *tls.Config
	signer    *signing.Signer
	transport http.RoundTripper
	shared    flood.Source // pipeline or jit; nil for presign (a source per run)
}

// source returns the run's Source: the shared one, or n freshly presigned
// requests for a window of w.
func (r *runner) source(ctx context.Context, n int64, w time.Duration) (flood.Source, error) {
	if r.shared != nil {
		return r.shared, nil
	}
	ps, err := traffic.Presign(ctx, r.gen, r.signer, n, traffic.PresignOptions{Window: w, MaxBytes: r.c.PresignMaxBytes, Knocker: r.knock})
	if err != nil {
		if errors.Is(err, flood.ErrInvalidPlan) {
			return nil, usage(err)
		}
		return nil, err
	}
	r.c.Show.note(r.c.Stderr, "presigned %d requests in %v (%.0f/s, about %.0f MiB)", ps.Len(), ps.Took.Round(time.Millisecond),
		float64(ps.Len())/ps.Took.Seconds(), float64(ps.Bytes)/(1<<20))
	return ps, nil
}

// closeSource gives back what a run's own source drew and never sent (a
// presigned run's tail); the shared pipeline is closed when the flood ends.
func closeSource(src flood.Source) {
	if ps, ok := src.(*traffic.Presigned); ok {
		ps.Close()
	}
}

// run runs one plan with a live line and returns its record. Checkpoints
// (every record.DefaultCheckpointEvery) go where the final record will, so
// a flood killed with SIGKILL leaves a partial record.
func (r *runner) run(ctx context.Context, plan flood.Plan, s record.Settings) (*record.Record, error) {
	line := r.c.Show.live(r.c.Stderr)
	var watch flood.Collector
	progress := line.Update
	if r.live != nil {
		watch, progress = r.live.watch(plan.Pacer.Rate(), line.Update)
	}
	if r.p.forging() {
		plan.Source = r.forg.Source(plan.Source)
	}
	defer r.forg.Reset() // a ladder's next rung counts its own
	plan.Transport = r.transport
	plan.Priority = r.p.priority
	plan.MaxInflight = r.c.MaxInflight
	plan.Timeout = r.c.Timeout
	r.file = record.NewRecordFile(r.c.Out)
	recorder := record.NewRecorder(record.RecorderOptions{Progress: progress, Checkpoint: r.checkpointer(s)})
	fetch := r.openFetchback(ctx, s.Label)
	if r.live != nil {
		r.live.fetchback(fetch)
	}
	fctx, sends, stop := r.results.run(ctx, s, r.seed)
	r.weather.beforeFlood(ctx)
	err := flood.Run(fctx, plan, flood.Collectors(recorder, watch, &r.ledger, r.weatherCollector(), sends))
	stop()
	ended := time.Now()
	r.weather.afterFlood(ctx)
	line.Done()
	if err != nil {
		fetch.finish(ctx, nil)
		return nil, usage(err)
	}
	res := recorder.Result()
	r.results.stopped(res)
	if res.Err != nil {
		r.log.Error("the source failed", zap.Error(res.Err))
	}
	rec, err := r.record(res, s)
	fetch.finish(ctx, rec)
	r.judgeForgeries(ctx, rec, ended)

	if err == nil && r.live != nil {
		r.live.final(rec, res.Elapsed)
	}
	return rec, err
}

// checkpointer writes each checkpoint of the current run where its
// record will go, and gives the live metrics its verdict.
func (r *runner) checkpointer(s record.Settings) func(*record.Result) {
	file := r.file
	return func(res *record.Result) {
		rec, err := r.record(res, s)
		if err == nil {
			if r.live != nil {
				r.live.checkpoint(rec, res.Elapsed)
			}
			err = file.Checkpoint(rec)
		}
		if err != nil {
			r.log.Warn("checkpoint of the record", zap.String("out", r.c.Out), zap.Error(err))
		}
	}
}

// record is res's record with what the ledger adds.
func (r *runner) record(res *record.Result, s record.Settings) (*record.Record, error) {
	rec, err := res.Record(s)
	if err != nil {
		return nil, err
	}
	var signerNice *int
	if pl, ok := r.shared.(*traffic.Pipeline); ok {
		n := pl.SignerNice()
		signerNice = &n
	}
	r.fill(rec, r.env.World.Backend().Name(), r.p.client, signerNice)
	rec.Weather, rec.Ambient = r.weather.section(), r.weather.ambient()
	return rec, nil
}

// write writes rec (or doc, which carries it) as the current run's final
// record, once.
func (r *runner) write(rec *record.Record, doc any) (string, error) {
	if doc == nil {
		doc = rec
	}
	path, err := r.file.FinalWith(rec, doc)
	if err != nil {
		return path, fmt.Errorf("writing the record to %s (--out): %w", r.c.Out, err)
	}
	return path, nil
}

// single is a flood at one rate, watched by the observer if any.
func (r *runner) single(ctx context.Context) error {
	c, p := r.c, r.p
	pacer, err := flood.NewPacer(p.arrivals, p.rates[0], r.seed)
	if err != nil {
		return usage(err)
	}
	var window time.Duration
	if p.duration > 0 {
		window = c.Warmup + p.duration
	}
	n := traffic.PresignCount(p.arrivals, p.rates[0], window, c.MaxSends)
	// How long presigned requests wait: the window, or the time max-sends
	// take at the rate when no window bounds the run.
	wait := window
	if wait == 0 {
		wait = time.Duration(float64(n) / p.rates[0] * float64(time.Second))
	}
	src, err := r.source(ctx, n, wait)
	if err != nil {
		return r.interrupted(ctx, err)
	}
	defer closeSource(src)
	rec, add, err := r.observed(ctx, flood.Plan{Limits: flood.Limits{Duration: window, MaxSends: c.MaxSends, Warmup: c.Warmup}, Pacer: pacer, Source: src})
	if rec == nil {
		return err
	}
	path, werr := r.write(rec, add.Doc)
	if werr == nil {
		fmt.Fprintf(r.c.Stdout, "record: %s\n", path)
		if add.Written != nil {
			werr = add.Written(path)
		}
	}
	if werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		return err
	}
	return r.finish(ctx, rec, []*record.Record{rec}, add.Judge)
}

// observed runs plan with the observer around it: started just before the
// flood, finished (its drain) after it, its addition returned for the
// record's one write. The table is printed as soon as the flood ends.
func (r *runner) observed(ctx context.Context, plan flood.Plan) (*record.Record, Addition, error) {
	if r.obs != nil {
		tr, err := r.obs.Start(ctx, r.transport)
		if err != nil {
			return nil, Addition{}, err
		}
		r.transport = tr
	}
	rec, err := r.run(ctx, plan, r.settings)
	if rec != nil {
		if terr := r.c.Show.table(r.c.Stdout, rec); terr != nil {
			err = errors.Join(err, terr)
		}
	}
	if r.obs == nil {
		return rec, Addition{}, err
	}
	// The name is claimed with a checkpoint, so the observer's files sit
	// beside the record, and a run killed while it drains keeps the flood's.
	path := ""
	if rec != nil {
		if cerr := r.file.Checkpoint(rec); cerr != nil {
			r.log.Warn("checkpoint of the record", zap.String("out", r.c.Out), zap.Error(cerr))
		}
		path = r.file.Path()
	}
	add, ferr := r.obs.Finish(ctx, rec, path)
	return rec, add, errors.Join(err, ferr)
}

// ladder runs the rungs, writing each rung's record as it ends.
func (r *runner) ladder(ctx context.Context) error {
	c, p := r.c, r.p
	lad := flood.Ladder{Rates: p.rates, Step: c.Step, Warmup: c.Warmup, StopWhen: p.stops}
	var paths []string
	header := false
	run := func(ctx context.Context, rate float64, d time.Duration) (*record.Record, error) {
		pacer, err := flood.NewPacer(p.arrivals, rate, r.seed)
		if err != nil {
			return nil, usage(err)
		}
		plan := lad.RungPlan(flood.Plan{}, pacer)
		src, err := r.source(ctx, traffic.PresignCount(p.arrivals, rate, plan.Duration, 0), plan.Duration)
		if err != nil {
			return nil, err
		}
		defer closeSource(src)
		plan.Source = src
		s := r.settings
		s.Label = fmt.Sprintf("%s-%g", cmp.Or(c.Label, "ladder"), rate)
		return r.run(ctx, plan, s)
	}
	// A rung's record is written once the ladder has put its capacity
	// verdict so far in it (and, at the shoulder, the rungs it skips).
	onRow := func(row record.RungRow) error {
		if row.Shoulder {
			row.Record.Deviations.RungsSkipped = p.rates[row.Index+1:]
		}
		path, err := r.write(row.Record, nil)
		if err != nil {
			return err
		}
		paths = append(paths, path)
		c.Show.rung(c.Stderr, row, !header)
		header = true
		return nil
	}
	res, err := lad.Run(ctx, run, onRow)
	if len(res.Rows) > 0 {
		fmt.Fprintln(c.Stdout)
		if werr := c.Show.ladder(c.Stdout, res); werr != nil {
			return werr
		}
		for _, l := range res.WeatherNote() {
			fmt.Fprintln(c.Stdout, l)
		}
		for _, path := range paths {
			fmt.Fprintf(c.Stdout, "record: %s\n", path)
		}
	}
	if err != nil {
		return r.interrupted(ctx, err)
	}
	if res.Shoulder >= 0 {
		fmt.Fprintf(c.Stdout, "shoulder at %g/s (rung %d)\n", res.Rows[res.Shoulder].Rate, res.Shoulder+1)
	}
	return r.finish(ctx, lastRecord(res), judged(res), nil)
}

// judged are the rungs the gates judge: those below the shoulder (load
// broke there by definition), or the shoulder itself when it is the first.
func judged(res record.LadderResult) []*record.Record {
	var recs []*record.Record
	for i, row := range res.Rows {
		if i == res.Shoulder && i > 0 {
			break
		}
		recs = append(recs, row.Record)
	}
	return recs
}

// lastRecord is the ladder's last rung's record, nil with none.
func lastRecord(res record.LadderResult) *record.Record {
	if len(res.Rows) == 0 {
		return nil
	}
	return res.Rows[len(res.Rows)-1].Record
}

// finish evaluates the gates on recs, and crowd run's on its run section
// with judge (nil: none measured, each missed for want of data), and says
// how the run ended; last is the last record written.
func (r *runner) finish(ctx context.Context, last *record.Record, recs []*record.Record, judge func([]record.Gate) []record.GateResult) error {
	var all []record.GateResult
	for _, rec := range recs {
		results, _ := record.CheckGates(rec, r.p.gates)
		for _, res := range results {
			prefix := "expect "
			if len(recs) > 1 {
				prefix = fmt.Sprintf("expect at %g/s: ", rec.Settings.Rate)
			}
			fmt.Fprintln(r.c.Stdout, prefix+res.String())
		}
		all = append(all, results...)
	}
	if len(r.p.runGates) > 0 {
		var results []record.GateResult
		if judge != nil {
			results = judge(r.p.runGates)
		} else {
			for _, g := range r.p.runGates {
				results = append(results, record.GateResult{Gate: g})
			}
		}
		for _, res := range results {
			fmt.Fprintln(r.c.Stdout, "expect "+res.String())
		}
		all = append(all, results...)
	}
	if ctx.Err() != nil || last != nil && last.Partial && last.PartialReason == record.ReasonInterrupted {
		return fmt.Errorf("%w: the partial record is written", ErrInterrupted)
	}
	if last != nil && last.Partial {
		return fmt.Errorf("the run stopped early: %s", last.PartialReason)
	}
	if flood.ExitCode(nil, all) != 0 {
		return missedGates(all)
	}
	return nil
}

// missedGates names the gates that did not hold, each once however many
// rungs missed it: a line on stderr a script's log shows, where the
// results are on stdout.
func missedGates(results []record.GateResult) error {
	var missed []string
	for _, res := range results {
		if name := res.Gate.Canonical(); !res.Holds && !slices.Contains(missed, name) {
			missed = append(missed, name)
		}
	}
	return fmt.Errorf("%d %s missed: %s (its result line on stdout says by how much)",
		len(missed), record.Plural(len(missed), "expectation", "expectations"), strings.Join(missed, ", "))
}

// interrupted turns an error that came from an interruption into
// ErrInterrupted.
func (r *runner) interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w before the run", ErrInterrupted)
	}
	return err
}
