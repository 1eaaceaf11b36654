package flood

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// ReasonCheckpoint is the Reason of a Result that Plan.Checkpoint receives,
// and so the partial_reason of a record written from it: the run was still
// going. A record that says so after the run should have ended is what a
// killed generator left behind.
const ReasonCheckpoint = "in progress (checkpoint)"

// checkpoint is a consistent snapshot of the run at now, taken by the ticker
// while sends go on: the Result that Run would return had the run been
// interrupted now, minus the sends still in flight (Sent counts them,
// Completed and Aborted do not yet).
func (e *engine) checkpoint(now time.Time) *Result {
	window := now.Sub(e.start)
	if e.p.Duration > 0 {
		window = min(window, e.p.Duration)
	}
	r := e.collect(now, window)
	r.Partial, r.Reason = true, ReasonCheckpoint
	// The ticker keeps appending to its timeline; the snapshot keeps its own.
	r.Timeline = slices.Clone(e.timeline)
	return r
}

// collect merges the recorder shards and the dispatcher's counters into a
// Result ending at end, whose measured window ends at windowEnd (an offset
// from the start). It is safe while the run goes on: each shard is merged
// under its own lock (a worker waits that long once, never a send), then the
// counters are copied under the dispatcher's. In that order every completion
// seen in a shard was counted as sent before, so in every type
// Sent >= Completed + Aborted (the difference is in flight) and
// Offered = Sent + Dropped; after the run both are equalities.
func (e *engine) collect(end time.Time, windowEnd time.Duration) *Result {
	r := &Result{
		Start:       e.start,
		End:         end,
		Elapsed:     end.Sub(e.start),
		Overall:     NewStats(),
		Types:       make(map[string]*Stats),
		Dispatch:    newHist(),
		Rate:        e.p.Pacer.Rate(),
		Duration:    e.p.Duration,
		Warmup:      e.p.Warmup,
		MaxSends:    e.p.MaxSends,
		MaxInflight: e.p.MaxInflight,
		Timeout:     e.p.Timeout,
	}
	var lastPicked, lastDone time.Duration
	for _, rec := range e.recs {
		rec.mu.Lock()
		r.Dispatch.Merge(rec.dispatch)
		lastPicked, lastDone = max(lastPicked, rec.lastPicked), max(lastDone, rec.lastDone)
		for typ, s := range rec.types {
			st := r.Types[typ]
			if st == nil {
				st = NewStats()
				r.Types[typ] = st
			}
			// Completed and Aborted come from the recorders, Offered, Sent,
			// Dropped and Starved from the dispatcher: the sum is exact.
			st.Merge(s)
		}
		rec.mu.Unlock()
	}
	e.mu.Lock()
	r.WarmupCounts = e.warm
	lastDue := e.lastDue
	for typ, c := range e.types {
		if c.Offered == 0 {
			continue // only seen in the warm-up
		}
		st := r.Types[typ]
		if st == nil {
			st = NewStats()
			r.Types[typ] = st
		}
		st.Counts.Merge(*c)
	}
	e.mu.Unlock()
	for _, st := range r.Types {
		r.Overall.Merge(st)
	}
	warm := e.p.Warmup
	if r.Overall.Counts.Offered == 0 {
		lastDue = warm
	}
	r.Window = Window{
		FirstDue:    warm.Seconds(),
		LastDue:     max(warm, lastDue).Seconds(),
		LastSent:    max(warm, lastPicked).Seconds(),
		LastAnswer:  max(warm, lastDone).Seconds(),
		ScheduleEnd: max(warm, windowEnd).Seconds(),
	}
	r.Measured = max(0, max(windowEnd, lastDone)-warm)
	return r
}

// RecordFile is the file of one run's record in an out directory, written
// more than once: checkpoints while the run goes, each replacing the last,
// then the final record, which replaces the last checkpoint and adds the
// run's row to runs.md. The file is where WriteRecord would put the final
// record (dir/Record.FileName(), "-2" … when another run took the name), so
// whatever ends the run, killed with SIGKILL included, dir holds one record
// of it, readable with LoadRecord. Every write is atomic and durable: a
// temporary file in dir, fsync, rename over the old version, fsync of dir;
// a reader (or a crash at any moment) sees the previous version or the new
// one, never a torn file. A RecordFile is for one run and one goroutine at a
// time (Plan.Checkpoint runs on the engine's ticker, and the final write
// comes after Run returned).
type RecordFile struct {
	dir  string
	path string // "" until the first write took a name
}

// NewRecordFile returns the record file of a run that writes to dir
// (created at the first write). Nothing is written yet.
func NewRecordFile(dir string) *RecordFile { return &RecordFile{dir: dir} }

// Path is the record's file, or "" before the first write.
func (f *RecordFile) Path() string { return f.path }

// Checkpoint writes r as the run's record so far. The file says partial
// whatever r says (a checkpoint is never the whole run), with r's reason or
// ReasonCheckpoint; r itself is not modified. runs.md is not touched: a run
// gets its row when it ends (Final), so a killed run has a record but no
// row.
func (f *RecordFile) Checkpoint(r *Record) error {
	c := *r
	c.Partial = true
	if c.PartialReason == "" {
		c.PartialReason = ReasonCheckpoint
	}
	_, err := f.write(&c)
	return err
}

// Final writes r, the run's record, replacing the last checkpoint, and
// appends its row to dir/runs.md (writing the table header first when the
// file is new). It returns the record's path. With no checkpoint before, it
// is WriteRecord.
func (f *RecordFile) Final(r *Record) (string, error) {
	if f.path == "" {
		path, err := WriteRecord(f.dir, r)
		f.path = path
		return path, err
	}
	path, err := f.write(r)
	if err != nil {
		return path, err
	}
	return path, appendRunsMD(filepath.Join(f.dir, "runs.md"), r, filepath.Base(path))
}

// write puts r in the file: the first time under a new name, as WriteRecord
// picks it (never replacing another file), later over the file itself.
func (f *RecordFile) write(r *Record) (string, error) {
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	data = append(data, '\n')
	if f.path == "" {
		path, err := atomicfile.CreateNumbered(f.dir, strings.TrimSuffix(r.FileName(), ".json"), ".json", data, 0o644)
		if err != nil {
			return "", fmt.Errorf("record file: %w", err)
		}
		f.path = path
		return path, nil
	}
	return f.path, atomicfile.Write(f.path, data, 0o644)
}
