package record

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Merge combines the records of generators that ran the same settings at the
// same time (a sharded run) into one: counts and tallies add up, histograms
// merge exactly (so merged percentiles are those of one histogram of all the
// values), timelines add up second by second on the wall clock. It refuses,
// wrapping ErrMerge: settings that differ in anything but the shard, a shard
// or record present twice, shards of different totals, sharded with unsharded
// records, records that did not run together (mergeSpans), and histograms of
// another geometry. Timeline percentiles of a merged record are the maximum
// over the generators (an upper bound); all other figures are exact. The
// merged record's MeasuredSeconds is the longest of the inputs (the
// generators ran concurrently).
func Merge(recs ...*Record) (*Record, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no records", ErrMerge)
	}
	first := recs[0]
	out := &Record{
		Schema:   RecordSchema,
		Version:  RecordVersion,
		Settings: first.Settings,
		HistUnit: "us",
		Types:    map[string]*TypeRecord{},
	}
	out.Settings.Shard = ""
	if err := mergeRuns(out, recs); err != nil {
		return nil, err
	}
	if err := mergeHists(out, recs); err != nil {
		return nil, err
	}
	out.Timeline = mergeTimelines(out.Start, recs)
	out.Security = mergeSecurity(recs)
	out.Signatures = mergeSignatures(recs)
	out.Settings.MaxInflight = first.Settings.MaxInflight
	out.finish()
	if err := mergeFetchback(out, recs); err != nil {
		return nil, err
	}
	if err := mergeWeather(out, recs); err != nil {
		return nil, err
	}
	out.Ambient = mergeAmbient(recs)
	if err := mergeDeliveries(out, recs); err != nil {
		return nil, err
	}
	return out, nil
}

// mergeRuns checks that recs may merge (same schema and settings, parts of
// one sharding) and gathers into out what is not a histogram: the parts,
// the span of time, the partial reasons, the warm-up and the deviations.
func mergeRuns(out *Record, recs []*Record) error {
	var reasons []string
	for i, r := range recs {
		if r.Schema != RecordSchema || r.Version != RecordVersion {
			return fmt.Errorf("%w: record %d is %s v%d", ErrMerge, i+1, r.Schema, r.Version)
		}
		if d := recs[0].Settings.diff(r.Settings); len(d) > 0 {
			return fmt.Errorf("%w: record %d's settings differ from record 1's: %s", ErrMerge, i+1, strings.Join(d, ", "))
		}
		for _, p := range r.Parts {
			if err := addPart(out, i+1, p); err != nil {
				return err
			}
		}
		if out.Start.IsZero() || r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		out.Measured = max(out.Measured, r.Measured)
		out.Window = laterWindow(out.Window, r.Window)
		if r.Partial {
			out.Partial = true
			if r.PartialReason != "" && !slices.Contains(reasons, string(r.PartialReason)) {
				reasons = append(reasons, string(r.PartialReason))
			}
		}
		out.Warmup.Merge(r.Warmup)
		out.Deviations.merge(r.Deviations)
		out.Boosters = mergeBoosters(out.Boosters, r.Boosters)
	}
	out.PartialReason = StopReason(strings.Join(reasons, "; "))
	return mergeSpans(recs)
}

// mergeSpans refuses records that did not flood together: every two must
// share at least half of the shorter one's span (start to end). A merged
// record adds their sends over the longest window, so the rate it reports
// is one the SUT met only when they ran at once; two runs one after the
// other would read as twice the rate either sent. Half leaves room for
// generators started by hand, seconds apart; a record of no length must
// lie within the other's span. A record without a span (its start or end
// not kept) is not judged; one that ends before it starts is refused.
func mergeSpans(recs []*Record) error {
	for i, r := range recs {
		if !r.Start.IsZero() && !r.End.IsZero() && r.End.Before(r.Start) {
			return fmt.Errorf("%w: record %d ends (%s) before it starts (%s)", ErrMerge, i+1, r.End.Format(time.RFC3339), r.Start.Format(time.RFC3339))
		}
	}
	for i, a := range recs {
		for j := i + 1; j < len(recs); j++ {
			b := recs[j]
			if a.Start.IsZero() || a.End.IsZero() || b.Start.IsZero() || b.End.IsZero() {
				continue
			}
			start, end := a.Start, a.End
			if b.Start.After(start) {
				start = b.Start
			}
			if b.End.Before(end) {
				end = b.End
			}
			shared := end.Sub(start) // negative when they do not meet
			shorter := min(a.End.Sub(a.Start), b.End.Sub(b.Start))
			if shared < 0 || 2*shared < shorter {
				shared = max(0, shared)
				return fmt.Errorf("%w: records %d and %d did not flood together: record %d ran %s to %s, record %d %s to %s, sharing %v of the shorter's %v (want at least half)",
					ErrMerge, i+1, j+1, i+1, a.Start.Format(time.RFC3339), a.End.Format(time.RFC3339),
					j+1, b.Start.Format(time.RFC3339), b.End.Format(time.RFC3339), shared.Round(time.Millisecond), shorter.Round(time.Millisecond))
			}
		}
	}
	return nil
}

// addPart appends part p of record n (1-based) to out's parts. It refuses
// a run already there, a shard of another total than the first part's (or
// a shard among unsharded parts), and a shard already there.
func addPart(out *Record, n int, p Part) error {
	if slices.ContainsFunc(out.Parts, func(q Part) bool { return q.ID == p.ID }) {
		return fmt.Errorf("%w: record %d contains run %s a second time", ErrMerge, n, p.ID)
	}
	if len(out.Parts) > 0 && shardTotal(p.Shard) != shardTotal(out.Parts[0].Shard) {
		return fmt.Errorf("%w: record %d is shard %q, others are %q", ErrMerge, n, p.Shard, out.Parts[0].Shard)
	}
	if p.Shard != "" && slices.ContainsFunc(out.Parts, func(q Part) bool { return q.Shard == p.Shard }) {
		return fmt.Errorf("%w: shard %s appears twice (record %d)", ErrMerge, p.Shard, n)
	}
	out.Parts = append(out.Parts, p)
	return nil
}

// shardTotal is the N of shard "i/N"; "" when unsharded.
func shardTotal(shard string) string {
	_, n, ok := strings.Cut(shard, "/")
	if !ok {
		return ""
	}
	return n
}

// mergeHists merges the histograms of recs into out (decode, merge,
// re-encode): overall, per type, and the dispatch delay.
func mergeHists(out *Record, recs []*Record) error {
	overall, err := mergeTypes(recs, "")
	if err != nil {
		return err
	}
	if out.Overall, err = typeRecord(overall); err != nil {
		return err
	}
	names := map[string]bool{}
	for _, r := range recs {
		for k := range r.Types {
			names[k] = true
		}
	}
	for name := range names {
		st, err := mergeTypes(recs, name)
		if err != nil {
			return err
		}
		tr, err := typeRecord(st)
		if err != nil {
			return err
		}
		out.Types[name] = &tr
	}
	disp := NewHist()
	for i, r := range recs {
		h, err := r.Dispatch.Decode()
		if err != nil {
			return fmt.Errorf("%w: record %d dispatch: %v", ErrMerge, i+1, err)
		}
		disp.Merge(h)
	}
	out.Dispatch, err = encodeHist(disp)
	return err
}

// mergeTypes merges type name ("" = overall) of every record.
func mergeTypes(recs []*Record, name string) (*Stats, error) {
	st := NewStats()
	for i, r := range recs {
		var tr *TypeRecord
		if name == "" {
			tr = &r.Overall
		} else if tr = r.Types[name]; tr == nil {
			continue
		}
		st.Counts.Merge(tr.Counts)
		st.Tally.Merge(tr.Tally)
		st.RateLimits.Merge(tr.RateLimits)
		st.Unanswered.Merge(tr.WhyUnanswered())
		for _, p := range []struct {
			dst *hdr.Histogram
			src HistRecord
		}{{st.Latency, tr.Latency}, {st.Service, tr.Service}, {st.Lateness, tr.Lateness}, {st.Accepted, tr.Accepted}, {st.Failed, tr.Failed}} {
			h, err := p.src.Decode()
			if err != nil {
				return nil, fmt.Errorf("%w: record %d type %q: %v", ErrMerge, i+1, name, err)
			}
			if dropped := p.dst.Merge(h); dropped != 0 {
				return nil, fmt.Errorf("%w: record %d type %q: %d values out of range", ErrMerge, i+1, name, dropped)
			}
		}
	}
	return st, nil
}

// laterWindow is the window of generators that ran together: each offset
// the latest of the two (they share a schedule, started within a second).
func laterWindow(a, b Window) Window {
	return Window{FirstDue: max(a.FirstDue, b.FirstDue), LastDue: max(a.LastDue, b.LastDue), LastSent: max(a.LastSent, b.LastSent),
		LastAnswer: max(a.LastAnswer, b.LastAnswer), ScheduleEnd: max(a.ScheduleEnd, b.ScheduleEnd)}
}

// mergeTimelines adds the ticks that end in the same wall-clock second.
func mergeTimelines(start time.Time, recs []*Record) []Tick {
	var out []Tick
	for _, r := range recs {
		shift := int(math.Round(r.Start.Sub(start).Seconds()))
		for _, t := range r.Timeline {
			i := t.T + shift - 1
			for len(out) <= i {
				out = append(out, Tick{T: len(out) + 1, Warmup: true})
			}
			m := &out[i]
			m.Span = max(m.Span, t.Span)
			m.Warmup = m.Warmup && t.Warmup
			m.Inflight += t.Inflight
			m.Absorb(t)
		}
	}
	for i := range out {
		if out[i].Span == 0 { // a second no generator covered
			out[i].Warmup = false
		}
	}
	return out
}
