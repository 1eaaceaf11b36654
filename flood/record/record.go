package record

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/crowdfed/crowd/internal/histgeom"
)

// The run record's schema name and version. A reader refuses another schema,
// and any version it does not know. The format is documented in SCHEMA.md.
// Version 2 keeps sends that got no answer out of latency and service
// (they are in failed), adds accepted, failed and window, and measures
// rates over the elapsed window; version 1 records are still read.
const (
	RecordSchema  = "crowd.flood.record"
	RecordVersion = 2
)

// ErrMerge is wrapped by every error of Merge: records that cannot be
// combined (different settings, the same shard twice, foreign geometry).
var ErrMerge = errors.New("flood: cannot merge records")

// Settings are what a run was asked to do. Records merge only when their
// settings are equal in every field but Shard (each generator of a sharded
// run offers Rate itself, so the merged offered rate is the sum).
type Settings struct {
	Label       string        // --label: names the run's files
	Rate        float64       // sends per second offered by one generator
	Arrivals    string        // "constant" or "poisson"
	Duration    time.Duration // schedule length, warm-up included (0 = by MaxSends)
	Warmup      time.Duration // discarded start of the schedule
	MaxSends    int64         // 0 = by Duration
	MaxInflight int           // worker slots of one generator
	Timeout     time.Duration // per send
	Mix         string        // activity mix, e.g. "create=6,like=3,follow=1"
	Signing     string        // "pipeline", "presign" or "jit"
	Target      string        // what was flooded (personas, inbox mode), free text
	Shard       string        // "i/n" of this generator, "" when not sharded
	// Scenario is the scenario the run was asked for (--scenario): a
	// preset's name or a file's; "" when none.
	Scenario string
}

// settingsJSON is the wire form of Settings: durations as Go duration
// strings ("1m0s"), which round-trip exactly.
type settingsJSON struct {
	Label       string  `json:"label"`
	Rate        float64 `json:"rate"`
	Arrivals    string  `json:"arrivals"`
	Duration    string  `json:"duration"`
	Warmup      string  `json:"warmup"`
	MaxSends    int64   `json:"max_sends"`
	MaxInflight int     `json:"max_inflight"`
	Timeout     string  `json:"timeout"`
	Mix         string  `json:"mix"`
	Signing     string  `json:"signing"`
	Target      string  `json:"target"`
	Shard       string  `json:"shard"`
	Scenario    string  `json:"scenario,omitempty"`
}

// MarshalJSON writes durations as Go duration strings.
func (s Settings) MarshalJSON() ([]byte, error) {
	return json.Marshal(settingsJSON{
		Label: s.Label, Rate: s.Rate, Arrivals: s.Arrivals,
		Duration: s.Duration.String(), Warmup: s.Warmup.String(),
		MaxSends: s.MaxSends, MaxInflight: s.MaxInflight, Timeout: s.Timeout.String(),
		Mix: s.Mix, Signing: s.Signing, Target: s.Target, Shard: s.Shard, Scenario: s.Scenario,
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Settings) UnmarshalJSON(b []byte) error {
	var j settingsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var ds [3]time.Duration
	for i, v := range []string{j.Duration, j.Warmup, j.Timeout} {
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("settings: %w", err)
		}
		ds[i] = d
	}
	*s = Settings{
		Label: j.Label, Rate: j.Rate, Arrivals: j.Arrivals,
		Duration: ds[0], Warmup: ds[1], MaxSends: j.MaxSends, MaxInflight: j.MaxInflight,
		Timeout: ds[2], Mix: j.Mix, Signing: j.Signing, Target: j.Target, Shard: j.Shard, Scenario: j.Scenario,
	}
	return nil
}

// diff lists the fields other than Shard in which s and o differ.
func (s Settings) diff(o Settings) []string {
	var d []string
	add := func(name string, a, b any) {
		if a != b {
			d = append(d, fmt.Sprintf("%s %v ≠ %v", name, a, b))
		}
	}
	add("label", s.Label, o.Label)
	add("rate", s.Rate, o.Rate)
	add("arrivals", s.Arrivals, o.Arrivals)
	add("duration", s.Duration, o.Duration)
	add("warmup", s.Warmup, o.Warmup)
	add("max_sends", s.MaxSends, o.MaxSends)
	add("max_inflight", s.MaxInflight, o.MaxInflight)
	add("timeout", s.Timeout, o.Timeout)
	add("mix", s.Mix, o.Mix)
	add("signing", s.Signing, o.Signing)
	add("target", s.Target, o.Target)
	add("scenario", s.Scenario, o.Scenario)
	return d
}

// Part identifies one generator's run inside a (possibly merged) record.
type Part struct {
	ID    string    `json:"id"`    // random, unique per run: a record is never merged twice
	Shard string    `json:"shard"` // "i/n" or ""
	Start time.Time `json:"start"`
	// Seed seeded the generator's draws (--seed): the same seed, settings
	// and state draw the same activities again. 0 in records made before it
	// was kept.
	Seed uint64 `json:"seed"`
	// SigningBackend is the backend whose key operations signed this
	// generator's requests: "go" (crypto/rsa) or "libcrypto" (OpenSSL);
	// empty in records made before it was kept.
	SigningBackend string `json:"signing_backend,omitempty"`
	// Client is the HTTP client that sent this generator's requests
	// (--client): "fast" or "nethttp"; empty in records made before it was
	// kept.
	Client string `json:"client,omitempty"`
	// Dispatcher is how this generator's dispatcher thread ran the
	// schedule, which sets how late its sends left; nil in records made
	// before it was kept and for a schedule run on a test's fake clock.
	Dispatcher *Dispatcher `json:"dispatcher,omitempty"`
	// SignerNice is the nice value this generator's pipeline signers were
	// asked to sign at during the schedule (--signer-nice; auto resolved
	// by Dispatcher's policy); nil where no pipeline signed (presign, jit)
	// and in records made before it was kept.
	SignerNice *int `json:"signer_nice,omitempty"`
}

// Dispatcher is how a generator's dispatcher thread ran its schedule.
type Dispatcher struct {
	// Priority is what was asked for (--dispatcher-priority): "auto"
	// (real-time up to 5 000/s, normal above), "realtime" or "normal".
	Priority string `json:"priority"`
	// TimerSlackNs is the timer slack set for its last-stretch sleeps, in
	// ns: how late the kernel may wake it. 0 when the thread kept its own
	// (above 10 000/s, where several shared the schedule, off Linux, or
	// under any policy but the normal one that the crowd was started
	// under). Under a real-time policy the
	// kernel wakes the thread with no slack at all, whatever this says.
	TimerSlackNs int64 `json:"timer_slack_ns"`
	// Policy is the thread's scheduling policy of sched(7) during the
	// schedule: "other" (the normal one), "deadline" (real-time), "fifo"
	// (real-time, where the deadline policy was refused), or another
	// the crowd was started under; empty where the dispatcher had no
	// thread of its own (above 10 000/s, or off Linux), and where
	// several shared the schedule (Threads).
	Policy string `json:"policy,omitempty"`
	// Refused says why a real-time policy asked for (realtime, or auto)
	// was not set, or, with "fifo", why "deadline" was not; under auto
	// above 5 000/s, that auto chose the normal policy ("auto: …"). Empty
	// when that was set or nothing was asked for.
	Refused string `json:"refused,omitempty"`
	// Threads is how many dispatchers shared the schedule, each on a
	// thread of its own (under the policy the crowd was started under:
	// the normal one, as a rule), each reading the answers to what it
	// wrote: one a core, above 5 000/s (10 000/s with "realtime") with a
	// presigned source over plain HTTP with the fast client on Linux,
	// where the crowd may use two cores or more. 0 where one dispatcher
	// ran it.
	Threads int `json:"threads,omitempty"`
	// CPUs is how many CPUs the dispatcher's thread could run on (its
	// affinity: taskset, a cpuset, the machine) when the schedule began;
	// 0 where that was not read (no thread of its own, off Linux, records
	// made before it was kept). On one CPU a pipeline signs in the
	// dispatcher's waits: see the traffic package's Pipeline.
	CPUs int `json:"cpus,omitempty"`
}

// RealTime reports whether the thread ran under a real-time policy of
// sched(7) ("deadline", "fifo" or "rr"), which the kernel runs the moment
// it wakes, ahead of every thread of the normal policies.
func (d Dispatcher) RealTime() bool {
	switch d.Policy {
	case "deadline", "fifo", "rr":
		return true
	}
	return false
}

// HistRecord is one histogram: its summary (µs) and its HdrHistogram V2
// compressed, base64 encoding, from which records merge exactly.
type HistRecord struct {
	Quantiles
	HDR string `json:"hdr"`
}

// TypeRecord holds the measurements of one activity type (or all of them).
type TypeRecord struct {
	Counts Counts `json:"counts"`
	Tally  Tally  `json:"tally"`
	// RateLimits: the rate-limit fields the answers carried, per class
	// (absent when none did).
	RateLimits RateLimits `json:"rate_limits,omitzero"`
	Latency    HistRecord `json:"latency"`  // answered sends, from the intended send time (CO-corrected)
	Service    HistRecord `json:"service"`  // answered sends, from the actual send
	Lateness   HistRecord `json:"lateness"` // actual - intended, every completed send
	Accepted   HistRecord `json:"accepted"` // 2xx answers' latency
	Failed     HistRecord `json:"failed"`   // latency of the sends that got no answer (timeouts, connection errors)
	// Unanswered is why those sends got no answer, by reason (absent when
	// every send was answered, and in records written before it was kept).
	Unanswered Unanswered `json:"unanswered,omitempty"`
}

// Rates are per second over the measured window (Record.Measured: the
// elapsed window, see SCHEMA.md).
type Rates struct {
	Offered    float64 `json:"offered"`    // sends due
	Sent       float64 `json:"sent"`       // sends made (offered - dropped)
	Completed  float64 `json:"completed"`  // answers, timeouts and errors
	Throughput float64 `json:"throughput"` // 2xx answers
}

// Record is the JSON run record (see SCHEMA.md): settings, counts, status
// tally, encoded histograms per activity type and overall, the per-second
// timeline and the bottleneck verdict. Records of several generators combine
// with Merge.
type Record struct {
	Schema        string                 `json:"schema"`
	Version       int                    `json:"version"`
	Settings      Settings               `json:"settings"`
	Parts         []Part                 `json:"parts"`
	Start         time.Time              `json:"start"`
	End           time.Time              `json:"end"`
	Measured      float64                `json:"measured_s"`
	Window        Window                 `json:"window"`
	Partial       bool                   `json:"partial"`
	PartialReason StopReason             `json:"partial_reason,omitempty"`
	HistUnit      string                 `json:"hist_unit"`
	Rates         Rates                  `json:"rates"`
	Warmup        Counts                 `json:"warmup"`
	Overall       TypeRecord             `json:"overall"`
	Types         map[string]*TypeRecord `json:"types"`
	Dispatch      HistRecord             `json:"dispatch"`
	Timeline      []Tick                 `json:"timeline"`
	Bottleneck    Diagnosis              `json:"bottleneck"`
	// Capacity is the verdict of the ladder this rung belongs to, over the
	// rungs up to and including it (so the last rung's is the ladder's);
	// nil for a single run.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Deviations are what the run changed from what it was asked.
	Deviations Deviations `json:"deviations"`
	// Boosters is the set-up that had the personas follow the crowd's
	// boosters before a flood with Announces (nil: none was made).
	Boosters *Boosters `json:"boosters,omitempty"`
	// Fetchback is what the SUT fetched back from the crowd's origins
	// during the run (fetchback.go); nil when the crowd could not count
	// them (a crowd without the fetch-back routes, or none asked).
	Fetchback *Fetchback `json:"fetchback,omitempty"`
	// Security counts the forged requests of the run by tamper kind and
	// lists those the SUT accepted (security.go); nil when it sent none.
	Security *Security `json:"security,omitempty"`
	// Signatures is the HTTP signature scheme the run sent (--signature)
	// and how many sends fell back to the other one; nil in records made
	// before it was kept.
	Signatures *Signatures `json:"signatures,omitempty"`
	// Weather is the weather timeline the run put in force on the crowd
	// (weather.go); nil without one.
	Weather *Weather `json:"weather,omitempty"`
	// Ambient is the weather on the crowd the run did not put in force
	// itself: what was in force at the flood's start, and a change another
	// hand made during it (weather.go); nil when every origin was clear
	// and no one else changed the weather, or the crowd could not say.
	Ambient *AmbientWeather `json:"ambient_weather,omitempty"`
	// Deliveries is what the SUT's own deliveries to the crowd did under
	// the weather (deliveries.go): a `crowd run` with posting personas
	// and weather fills it; nil otherwise.
	Deliveries *Deliveries `json:"deliveries,omitempty"`
}

// Record turns a Result into a run record. The engine's own facts (rate,
// duration, warm-up, max sends, max in-flight, timeout) come from the result
// and overwrite those fields of s; the caller supplies the rest (label,
// arrivals, mix, signing, target, shard).
func (res *Result) Record(s Settings) (*Record, error) {
	s.Rate, s.Duration, s.Warmup = res.Rate, res.Duration, res.Warmup
	s.MaxSends, s.MaxInflight, s.Timeout = res.MaxSends, res.MaxInflight, res.Timeout
	if s.Arrivals == "" {
		s.Arrivals = "constant"
	}
	part := Part{ID: rand.Text(), Shard: s.Shard, Start: res.Start.UTC()}
	if thread := res.Dispatcher; thread != (Dispatcher{}) {
		part.Dispatcher = &thread
	}
	r := &Record{
		Schema:        RecordSchema,
		Version:       RecordVersion,
		Settings:      s,
		Parts:         []Part{part},
		Start:         res.Start.UTC().Round(0),
		End:           res.End.UTC().Round(0),
		Measured:      res.Measured.Seconds(),
		Window:        res.Window,
		Partial:       res.Partial,
		PartialReason: res.Reason,
		HistUnit:      "us",
		Warmup:        res.WarmupCounts,
		Types:         make(map[string]*TypeRecord, len(res.Types)),
		Timeline:      res.Timeline,
	}
	var err error
	if r.Overall, err = typeRecord(res.Overall); err != nil {
		return nil, err
	}
	for name, st := range res.Types {
		tr, err := typeRecord(st)
		if err != nil {
			return nil, err
		}
		r.Types[name] = &tr
	}
	if r.Dispatch, err = encodeHist(res.Dispatch); err != nil {
		return nil, err
	}
	r.finish()
	return r, nil
}

// finish computes what derives from the rest: rates and the verdict.
func (r *Record) finish() {
	c := r.Overall.Counts
	if r.Measured > 0 {
		r.Rates = Rates{
			Offered:    float64(c.Offered) / r.Measured,
			Sent:       float64(c.Sent) / r.Measured,
			Completed:  float64(c.Completed) / r.Measured,
			Throughput: float64(r.Overall.Tally.OK()) / r.Measured,
		}
	}
	r.Bottleneck = DefaultBottleneckRule().Diagnose(r)
}

func typeRecord(st *Stats) (TypeRecord, error) {
	tr := TypeRecord{Counts: st.Counts, Tally: st.Tally, RateLimits: st.RateLimits, Unanswered: st.Unanswered.Kept()}
	var err error
	if tr.Latency, err = encodeHist(st.Latency); err != nil {
		return tr, err
	}
	if tr.Service, err = encodeHist(st.Service); err != nil {
		return tr, err
	}
	if tr.Lateness, err = encodeHist(st.Lateness); err != nil {
		return tr, err
	}
	if tr.Accepted, err = encodeHist(st.Accepted); err != nil {
		return tr, err
	}
	tr.Failed, err = encodeHist(st.Failed)
	return tr, err
}

func encodeHist(h *hdr.Histogram) (HistRecord, error) {
	enc, err := histgeom.Encode(h)
	if err != nil {
		return HistRecord{}, err
	}
	return HistRecord{Quantiles: Summarize(h), HDR: enc}, nil
}

// Decode returns the histogram (µs). An empty encoding is an empty histogram.
// It refuses a geometry other than the flood's, which would not merge
// exactly.
func (h HistRecord) Decode() (*hdr.Histogram, error) {
	return histgeom.Decode(h.HDR)
}

// Type returns the measurements of activity type name (matched ignoring
// case), or the overall ones for name "". ok is false for an unknown type.
func (r *Record) Type(name string) (*TypeRecord, bool) {
	if name == "" {
		return &r.Overall, true
	}
	if t, ok := r.Types[name]; ok {
		return t, true
	}
	for k, t := range r.Types {
		if strings.EqualFold(k, name) {
			return t, true
		}
	}
	return nil, false
}

// TypeNames returns the record's activity types, sorted.
func (r *Record) TypeNames() []string {
	names := make([]string, 0, len(r.Types))
	for k := range r.Types {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Generators is the number of generator runs combined in the record.
func (r *Record) Generators() int { return max(1, len(r.Parts)) }
