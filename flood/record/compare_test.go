package record_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"

	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// cmpRun describes a synthetic run for the comparison tests: n sends per
// type over 10 s, latency i*scale for the i-th send, every errEvery-th send
// a 503 (0: none).
type cmpRun struct {
	n        int
	scale    time.Duration
	errEvery int
}

func (c cmpRun) record(t *testing.T, s record.Settings) *record.Record {
	t.Helper()
	cls := recordtest.Always(record.Class202)
	if c.errEvery > 0 {
		cls = recordtest.Every(c.errEvery, record.Class503)
	}
	types := map[string]*record.Stats{}
	for _, typ := range []string{"Create", "Like"} {
		types[typ] = recordtest.Sends(c.n, func(i int) time.Duration { return time.Duration(i+1) * c.scale }, cls)
	}
	if s.Arrivals == "" {
		s.Arrivals = "constant"
	}
	if s.Mix == "" {
		s.Mix = "create=1,like=1"
	}
	return recordtest.RoundTrip(t, recordtest.MustRecord(t, recordtest.Run(t0, 10*time.Second, types), s))
}

// verdicts summarises a comparison as "type metric verdict" lines for the
// rows that moved beyond the threshold.
func verdicts(c *record.Comparison) string {
	var out []string
	for _, r := range c.Rows {
		if r.Verdict == record.VerdictSame {
			continue
		}
		typ := r.Type
		if typ == "" {
			typ = "all"
		}
		out = append(out, typ+" "+r.Metric.Name()+" "+string(r.Verdict))
	}
	return strings.Join(out, ", ")
}

func TestCompareVerdicts(t *testing.T) {
	base := cmpRun{n: 1000, scale: time.Millisecond, errEvery: 100} // 1 % errors
	baseRec := base.record(t, record.Settings{})
	for _, c := range []struct {
		name     string
		head     cmpRun
		metrics  string
		max      float64
		want     string // the rows beyond the threshold
		regessed bool
	}{
		// The same run: nothing moves.
		{"identical", base, "", 0.15, "", false},
		// Latency 10 % up is within 15 %.
		{"small latency rise", cmpRun{1000, 1100 * time.Microsecond, 100}, "p95,p99", 0.15, "", false},
		// Latency 50 % up is a regression, overall and per type.
		{"latency up", cmpRun{1000, 1500 * time.Microsecond, 100}, "p95,p99", 0.15,
			"all p95 REGRESSED, all p99 REGRESSED, Create p95 REGRESSED, Create p99 REGRESSED, Like p95 REGRESSED, Like p99 REGRESSED", true},
		// Latency halved is an improvement, not a regression.
		{"latency down", cmpRun{1000, 500 * time.Microsecond, 100}, "p99", 0.15,
			"all p99 better, Create p99 better, Like p99 better", false},
		// A threshold of 60 % tolerates the 50 % rise.
		{"loose threshold", cmpRun{1000, 1500 * time.Microsecond, 100}, "p99", 0.60, "", false},
		// Errors from 1 % to 3 %: a regression (200 % up, 2 points).
		{"errors up", cmpRun{1000, time.Millisecond, 33}, "errors", 0.15,
			"all errors REGRESSED, Create errors REGRESSED, Like errors REGRESSED", true},
		// Errors from 1 % to 2 %: 20 against 40 of 2000 sends overall is
		// beyond sampling noise (z = 2.6); 10 against 20 of each type's
		// 1000, which sampling alone makes one time in 15, is not.
		{"errors up, types within noise", cmpRun{1000, time.Millisecond, 50}, "errors", 0.15, "all errors REGRESSED", true},
		// Errors from 1 % to 0: better.
		{"errors gone", cmpRun{1000, time.Millisecond, 0}, "errors", 0.15,
			"all errors better, Create errors better, Like errors better", false},
		// Errors from 1 % to 1.1 %: 10 % up, under the threshold.
		{"errors within threshold", cmpRun{1000, time.Millisecond, 88}, "errors", 0.15, "", false},
		// Fewer 2xx per second (800 sends instead of 1000 in the same
		// window): rate and throughput down 20 %.
		{"rate down", cmpRun{800, time.Millisecond, 100}, "rate,throughput", 0.15,
			"all rate REGRESSED, all throughput REGRESSED, Create rate REGRESSED, Create throughput REGRESSED, Like rate REGRESSED, Like throughput REGRESSED", true},
		// More sends per second is not a regression.
		{"rate up", cmpRun{1300, time.Millisecond, 100}, "throughput", 0.15,
			"all throughput better, Create throughput better, Like throughput better", false},
		// The generator's own delay is compared over all types only.
		{"dispatch is overall only", base, "dispatch.p99", 0.15, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // the rows share baseRec, read only
			var ms []record.CompareMetric
			if c.metrics != "" {
				var err error
				if ms, err = record.ParseCompareMetrics(c.metrics); err != nil {
					t.Fatal(err)
				}
			}
			cmp, err := record.Compare(baseRec, c.head.record(t, record.Settings{}),
				record.CompareOptions{Metrics: ms, MaxRegression: c.max, ShareFloor: 0.001})
			if err != nil {
				t.Fatal(err)
			}
			if got := verdicts(cmp); got != c.want {
				t.Errorf("verdicts %q\nwant     %q", got, c.want)
			}
			if cmp.Regressed() != c.regessed {
				t.Errorf("Regressed() = %v", cmp.Regressed())
			}
		})
	}
}

// TestCompareShareFloor: an error share rising from nothing is infinitely
// larger, but under the floor it is noise.
func TestCompareShareFloor(t *testing.T) {
	ms, _ := record.ParseCompareMetrics("errors")
	clean := cmpRun{n: 5000, scale: time.Millisecond}
	for _, c := range []struct {
		name  string
		head  cmpRun
		floor float64
		want  record.Verdict
	}{
		// 1 error in 5000 (0.02 %) under a 0.1-point floor: not a verdict.
		{"under the floor", cmpRun{5000, time.Millisecond, 5000}, 0.001, record.VerdictSame},
		// The same rise with no floor: one error is within sampling noise.
		{"no floor", cmpRun{5000, time.Millisecond, 5000}, 0, record.VerdictSame},
		// 1 % errors from nothing: a regression whatever the floor.
		{"over the floor", cmpRun{5000, time.Millisecond, 100}, 0.001, record.VerdictRegressed},
	} {
		cmp, err := record.Compare(clean.record(t, record.Settings{}), c.head.record(t, record.Settings{}),
			record.CompareOptions{Metrics: ms, MaxRegression: 0.15, ShareFloor: c.floor})
		if err != nil {
			t.Fatal(err)
		}
		if r := cmp.Rows[0]; r.Verdict != c.want || !math.IsInf(r.Change, 1) {
			t.Errorf("%s: verdict %q change %v, want %q and +Inf", c.name, r.Verdict, r.Change, c.want)
		}
	}
}

// TestCompareNotesWhyNoAnswer: when base and head got no answer for
// different reasons, the comparison notes both (not judged: the error
// share is); the same reasons, nothing.
func TestCompareNotesWhyNoAnswer(t *testing.T) {
	ms, _ := record.ParseCompareMetrics("errors")
	run := cmpRun{n: 1000, scale: time.Millisecond}
	for _, c := range []struct {
		name       string
		base, head record.Unanswered
		timeouts   int64  // in both runs' tallies
		note       string // "" = none about it
	}{
		// A new cause in head: both said.
		{"new cause", nil, record.Unanswered{record.NoAnswerUnknownCA: 5}, 0, "no answer: base none named; head " + record.NoAnswerUnknownCA + " 5"},
		// The same reasons: no note.
		{"same", record.Unanswered{record.NoAnswerRefused: 2}, record.Unanswered{record.NoAnswerRefused: 2}, 0, ""},
		// A record from before the reasons were kept, its timeouts told by
		// class, against a newer one's: the same, no note.
		{"older base", nil, record.Unanswered{record.NoAnswerTimeout: 3}, 3, ""},
	} {
		base, head := run.record(t, record.Settings{}), run.record(t, record.Settings{})
		base.Overall.Unanswered, head.Overall.Unanswered = c.base, c.head
		base.Overall.Tally.Classes[record.ClassTimeout] += c.timeouts
		head.Overall.Tally.Classes[record.ClassTimeout] += c.timeouts
		cmp, err := record.Compare(base, head, record.CompareOptions{Metrics: ms, MaxRegression: 0.15})
		if err != nil {
			t.Fatal(err)
		}
		var said []string
		for _, n := range cmp.Notes {
			if strings.HasPrefix(n, "no answer:") {
				said = append(said, n)
			}
		}
		if got := strings.Join(said, "\n"); got != c.note {
			t.Errorf("%s: noted %q, want %q", c.name, got, c.note)
		}
	}
}

// TestCompareMarksFewSends: a quantile that fewer than 10 sends lie beyond
// is marked, overall and per type, whatever its verdict.
func TestCompareMarksFewSends(t *testing.T) {
	ms, err := record.ParseCompareMetrics("p50,p99,p99.9,max,errors")
	if err != nil {
		t.Fatal(err)
	}
	run := cmpRun{n: 1000, scale: time.Millisecond}
	cmp, err := record.Compare(run.record(t, record.Settings{}), run.record(t, record.Settings{}), record.CompareOptions{Metrics: ms, MaxRegression: 0.15})
	if err != nil {
		t.Fatal(err)
	}
	var few []string
	for _, r := range cmp.Rows {
		if r.Few {
			few = append(few, r.Type+"."+r.Metric.Name())
		}
	}
	// 2000 sends overall: p99.9 has 2 beyond it. 1000 per type: p99 has
	// exactly 10 (enough), p99.9 one. A max is one send. p50 and shares
	// are never marked.
	if got := strings.Join(few, " "); got != ".p99.9 .max Create.p99.9 Create.max Like.p99.9 Like.max" {
		t.Errorf("marked %q", got)
	}
	var b bytes.Buffer
	cmp.WriteTable(&b)
	if !strings.Contains(b.String(), "6 figures marked (few sends)") {
		t.Errorf("the table does not explain the mark:\n%s", b.String())
	}
}

func TestComparableRefuses(t *testing.T) {
	run := cmpRun{n: 100, scale: time.Millisecond}
	base := run.record(t, record.Settings{Mix: "create=2,like=1"})
	for _, c := range []struct {
		name string
		edit func(*record.Settings)
		gens int               // generators of head (merged shards)
		dev  record.Deviations // what head changed from what it was asked
		want string            // named in the error; "" = comparable
	}{
		// Another offered rate is another unit of work.
		{"rate", func(s *record.Settings) { s.Rate = 200 }, 1, record.Deviations{}, "offered rate 100/s ≠ 200/s"},
		// Two generators at 100/s offer 200/s.
		{"more generators", nil, 2, record.Deviations{}, "offered rate 100/s ≠ 200/s"},
		// Another mix.
		{"mix", func(s *record.Settings) { s.Mix = "create=1,like=1" }, 1, record.Deviations{}, `mix "create=2,like=1" ≠ "create=1,like=1"`},
		// The same proportions written otherwise are the same mix.
		{"same mix scaled", func(s *record.Settings) { s.Mix = "like=2, create=4" }, 1, record.Deviations{}, ""},
		// A kind beyond Create, Like and Follow added: another mix, though
		// the first three keep their proportions among themselves.
		{"a kind added", func(s *record.Settings) { s.Mix = "create=2,like=1,delete=3" }, 1, record.Deviations{},
			`mix "create=2,like=1" ≠ "create=2,like=1,delete=3"`},
		// One kind beyond the first three for another: another mix.
		{"a kind for another", func(s *record.Settings) { s.Mix = "create=2,announce=1" }, 1, record.Deviations{},
			`mix "create=2,like=1" ≠ "create=2,announce=1"`},
		// Poisson arrivals load a server otherwise than a constant rate.
		{"arrivals", func(s *record.Settings) { s.Arrivals = "poisson" }, 1, record.Deviations{}, "arrivals constant ≠ poisson"},
		// Signing, target and duration may differ: noted, not refused.
		{"signing", func(s *record.Settings) { s.Signing = "jit"; s.Target = "other" }, 1, record.Deviations{}, ""},
		// 10 of 200 sends were Creates in place of Follows: another mix.
		{"follows diverted", nil, 1, record.Deviations{FollowsDiverted: 10},
			"effective mix: Follows sent as Creates 0 (0.00% of sends) ≠ 10 (5.00%)"},
		// One in 200 (0.5 %) is within a percentage point: the same mix.
		{"one follow diverted", nil, 1, record.Deviations{FollowsDiverted: 1}, ""},
		// A persona without posts got no Likes.
		{"persona without posts", nil, 1, record.Deviations{PersonasWithoutPosts: []string{"a@sut.test"}},
			"effective mix: personas without posts (no Likes) 0 ≠ 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // the rows share base, read only
			head := run.record(t, record.Settings{Mix: "create=2,like=1"})
			if c.edit != nil {
				c.edit(&head.Settings)
			}
			head.Deviations = c.dev
			for i := 1; i < c.gens; i++ {
				head.Parts = append(head.Parts, record.Part{ID: "X"})
			}
			err := record.Comparable(base, head)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, record.ErrIncomparable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrIncomparable naming %q", err, c.want)
			}
			if _, err := record.Compare(base, head, record.CompareOptions{MaxRegression: 0.15}); !errors.Is(err, record.ErrIncomparable) {
				t.Errorf("Compare without Force: %v", err)
			}
			cmp, err := record.Compare(base, head, record.CompareOptions{MaxRegression: 0.15, Force: true})
			if err != nil {
				t.Fatalf("Compare with Force: %v", err)
			}
			if !strings.Contains(strings.Join(cmp.Notes, "\n"), "forced: "+c.want) {
				t.Errorf("a forced comparison does not say so: %q", cmp.Notes)
			}
		})
	}
}

// TestCompareRefusesUnmeasured: a record that measured nothing (a run
// stopped in its warm-up, one whose every send was lost) gives no verdict,
// as base or as head, forced or not: its empty figures would pass as "no
// regression".
func TestCompareRefusesUnmeasured(t *testing.T) {
	run := cmpRun{n: 100, scale: time.Millisecond}
	for _, c := range []struct {
		name string
		side string               // which record is emptied
		edit func(*record.Record) // how
		want string               // named in the error; "" = compared
	}{
		// A partial run stopped before its window opened.
		{"head without a window", "head", func(r *record.Record) {
			r.Measured, r.Partial, r.PartialReason = 0, true, "results /dev/full: no space left"
		}, "head: nothing measured to compare: it has no measured window (0s measured); a partial run (results /dev/full: no space left)"},
		// The same of base.
		{"base without a window", "base", func(r *record.Record) { r.Measured = 0 }, "base: nothing measured to compare: it has no measured window"},
		// A window, and not one send in it completed.
		{"head without a completed send", "head", func(r *record.Record) { r.Overall.Counts.Completed = 0 },
			"head: nothing measured to compare: no measured send of it completed (10.00s measured)"},
		// A partial run that stopped 40 ms in, after a send or two: a
		// window, yet nothing measured.
		{"partial head of 40ms", "head", func(r *record.Record) {
			r.Measured, r.Partial, r.PartialReason = 0.04, true, "results /dev/full: no space left"
		}, "head: nothing measured to compare: it stopped 0.04s into its measured window, 200 sends completed; a partial run"},
		// A complete run asked to be that short is what it was asked: compared.
		{"a short complete run", "head", func(r *record.Record) { r.Measured = 0.1 }, ""},
		// A partial run of a second or more is compared (the table notes it).
		{"a partial run of 2s", "head", func(r *record.Record) { r.Measured, r.Partial = 2, true }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base, head := run.record(t, record.Settings{}), run.record(t, record.Settings{})
			c.edit(map[string]*record.Record{"base": base, "head": head}[c.side])
			for _, force := range []bool{false, true} {
				_, err := record.Compare(base, head, record.CompareOptions{MaxRegression: 0.15, Force: force})
				if c.want == "" {
					if err != nil {
						t.Fatalf("force=%v: %v", force, err)
					}
					continue
				}
				if !errors.Is(err, record.ErrUnmeasured) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("force=%v: err = %v, want ErrUnmeasured naming %q", force, err, c.want)
				}
			}
		})
	}
}

func TestParseCompareMetrics(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // canonical names, or the error's text
		ok   bool
	}{
		{"p95,p99,errors,rate", "p95 p99 errors rate", true},                                     // the usual
		{" p99.9 , max,throughput ", "p99.9 max throughput", true},                               // spaces, p99.9 kept whole
		{"service.p99,lateness.p99,dispatch.p99", "service.p99 lateness.p99 dispatch.p99", true}, // families
		{"status429,timeouts,dropped", "status429 timeout dropped", true},                        // counters, canonical
		{"", "no metric", false},                        // nothing
		{"p95,p95", "p95 appears twice", false},         // twice
		{"latency.p95,p95", "p95 appears twice", false}, // twice, once spelled out
		{"Create.p99", "drop \"Create.\"", false},       // types are all compared anyway
		{"visibility.p95", "visibility is a part of crowd run's run section, which compare judges after the flood's verdict, each of its figures, whatever --metric says", false}, // not a flood figure
		{"offered", "comparable runs offer the same rate", false},                                                              // always equal
		{"never_seen", "never_seen is crowd run's, of its run section, which compare judges after the flood's verdict", false}, // no flood's count
		{"unreached", "unreached is crowd run's, of its run section", false},                                                   // nor this
		{"ambient_weather", "compare refuses runs that met different weather", false},                                          // one run's gate
		{"p101", "quantile", false},        // out of range
		{"speed", "unknown metric", false}, // unknown
	} {
		ms, err := record.ParseCompareMetrics(c.in)
		if !c.ok {
			var ue *record.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: err = %v, want a UsageError naming %q", c.in, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		var names []string
		for _, m := range ms {
			names = append(names, m.Name())
		}
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseThreshold(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
		say  string // in the error
	}{
		{"15%", 0.15, true, ""},     // the usual form
		{" 2.5 %", 0.025, true, ""}, // fractions of a percent, spaced
		{"0%", 0, true, ""},         // any change the wrong way
		{"0", 0, true, ""},          // 0 is 0 in any unit
		{"150%", 1.5, true, ""},     // latency up half as much again
		// A bare number could be a fraction or a percentage: refused,
		// offering both.
		{"0.15", 0, false, `"0.15": give a percentage: 15% (0.15 as a fraction) or 0.15%`},
		{"15", 0, false, `"15": give a percentage, e.g. 15%`},
		{"-5%", 0, false, "0 or more"},  // negative
		{"fast", 0, false, "0 or more"}, // not a number
		{"NaN", 0, false, "0 or more"},  // not a number either
		{"Inf%", 0, false, "0 or more"}, // no threshold at all: leave the flag out instead
	} {
		got, err := record.ParseThreshold(c.in)
		if (err == nil) != c.ok || math.Abs(got-c.want) > 1e-12 || (err != nil && !strings.Contains(err.Error(), c.say)) {
			t.Errorf("%q: %v, %v; want %v ok=%v saying %q", c.in, got, err, c.want, c.ok, c.say)
		}
	}
}

func FuzzParseCompareMetrics(f *testing.F) {
	for _, s := range []string{"p95,p99,errors,rate", "service.p99.9", "Create.p99", ",,", "p", "status5xx,ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := record.ParseCompareMetrics(s)
		if err != nil {
			return
		}
		// A parsed list reparses from its canonical names to the same list.
		var names []string
		for _, m := range ms {
			names = append(names, m.Name())
		}
		again, err := record.ParseCompareMetrics(strings.Join(names, ","))
		if err != nil || len(again) != len(ms) {
			t.Fatalf("%q → %q does not reparse: %v", s, names, err)
		}
	})
}

func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"15%", "0", "1e3%", "-0", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := record.ParseThreshold(s)
		if err == nil && (v < 0 || math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%q → %v", s, v)
		}
	})
}

// TestCompareTableGolden: the printed comparison of a run with one whose
// Creates got slower and failed more often, its Likes unchanged; as a
// table, as Markdown for a pull request, and as the JSON document tools
// read (every row's values in its unit, null where the table has "-").
func TestCompareTableGolden(t *testing.T) {
	mk := func(createScale time.Duration, createErrEvery int, signing string) *record.Record {
		types := map[string]*record.Stats{
			"Create": recordtest.Sends(1000, func(i int) time.Duration { return time.Duration(i+1) * createScale }, recordtest.Every(createErrEvery, record.Class503)),
			"Like":   recordtest.Sends(500, func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }, recordtest.Every(100, record.Class429)),
		}
		s := record.Settings{Label: "golden", Arrivals: "constant", Mix: "create=2,like=1", Signing: signing}
		return recordtest.RoundTrip(t, recordtest.MustRecord(t, recordtest.Run(t0, 10*time.Second, types), s))
	}
	base, head := mk(time.Millisecond, 200, "pipeline"), mk(1400*time.Microsecond, 40, "jit")
	cmp, err := record.Compare(base, head, record.CompareOptions{MaxRegression: 0.15, ShareFloor: 0.001, LatencyFloor: record.DefaultLatencyFloor})
	if err != nil {
		t.Fatal(err)
	}
	cmp.BaseName, cmp.HeadName = "base.json", "head.json"
	var b bytes.Buffer
	if err := cmp.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	recordtest.Golden(t, "compare.golden", b.Bytes(), *update)
	b.Reset()
	if err := cmp.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	recordtest.Golden(t, "compare.md.golden", b.Bytes(), *update)
	doc, err := json.MarshalIndent(cmp.Doc(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	recordtest.Golden(t, "compare.json.golden", append(doc, '\n'), *update)
	// The JSON says what the table says: the same regressions.
	var back record.CompareDoc
	if err := json.Unmarshal(doc, &back); err != nil {
		t.Fatal(err)
	}
	var regressed []string
	for _, r := range back.Rows {
		if r.Verdict == string(record.VerdictRegressed) {
			regressed = append(regressed, r.Type+" "+r.Metric)
		}
	}
	if got, want := len(regressed), len(cmp.Regressions()); got != want || back.Regressed != cmp.Regressed() || back.Schema != record.CompareSchema {
		t.Errorf("the JSON has %d regressions %q (regressed %v), the comparison %d", got, regressed, back.Regressed, want)
	}
}

// TestCompareCrashingSUTIsNotFaster: the head's SUT answered its first 300
// sends and then refused every connection in half a millisecond. Its p95
// over the answered sends is lower than the base's (its answers came before
// the load built up), yet it is not scored better: it answered fewer of its
// sends, and the comparison says so; its errors regress.
func TestCompareCrashingSUTIsNotFaster(t *testing.T) {
	lat := func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }
	run := func(crashAt int) *record.Record {
		st := recordtest.Sends(1000, func(i int) time.Duration {
			if i >= crashAt {
				return 500 * time.Microsecond
			}
			return lat(i)
		}, func(i int) record.Class {
			if i >= crashAt {
				return record.ClassConnError
			}
			return record.Class202
		})
		return recordtest.RoundTrip(t, recordtest.MustRecord(t, recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{"Create": st}),
			record.Settings{Arrivals: "constant", Mix: "create=1"}))
	}
	base, head := run(1000), run(300)
	ms, err := record.ParseCompareMetrics("p95,errors")
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := record.Compare(base, head, record.CompareOptions{Metrics: ms, MaxRegression: 0.15, ShareFloor: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := verdicts(cmp), "all errors REGRESSED, Create errors REGRESSED"; got != want {
		t.Errorf("verdicts %q, want %q", got, want)
	}
	if !strings.Contains(strings.Join(cmp.Notes, "\n"), "head answered 30.00% of its sends") {
		t.Errorf("no note on the unanswered sends: %q", cmp.Notes)
	}
}

// TestCompareBatchNoise: sends are not independent. A run whose p95 rose
// because of one stalled second (its per-second p99 jumps once) moved
// within its second-to-second spread; a run slower in every second did not.
func TestCompareBatchNoise(t *testing.T) {
	ms, err := record.ParseCompareMetrics("p95")
	if err != nil {
		t.Fatal(err)
	}
	opts := record.CompareOptions{Metrics: ms, MaxRegression: 0.15, LatencyFloor: record.DefaultLatencyFloor}
	// run is 10 s of 100 sends a second; second stall (1-based, 0 = none)
	// is slow× slower, and so are all seconds when stall is -1.
	run := func(slow float64, stall int) *record.Record {
		lat := func(i int) time.Duration {
			d := time.Duration(2+i%7) * time.Millisecond
			if sec := i/100 + 1; stall == -1 || sec == stall {
				d = time.Duration(slow * float64(d))
			}
			return d
		}
		res := recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{"Create": recordtest.Sends(1000, lat, recordtest.Always(record.Class202))})
		for i := range res.Timeline {
			tk := &res.Timeline[i]
			if stall == -1 || tk.T == stall {
				tk.LatencyP99 = int64(slow * float64(tk.LatencyP99))
			}
		}
		return recordtest.RoundTrip(t, recordtest.MustRecord(t, res, record.Settings{Arrivals: "constant", Mix: "create=1"}))
	}
	base := run(1, 0)
	for _, c := range []struct {
		name string
		head *record.Record
		want record.Verdict
	}{
		// One second 20× slower: p95 jumps, but so does that second alone.
		{"one stalled second", run(20, 4), record.VerdictSame},
		// Every second 3× slower: a regression.
		{"slower throughout", run(3, -1), record.VerdictRegressed},
	} {
		cmp, err := record.Compare(base, c.head, opts)
		if err != nil {
			t.Fatal(err)
		}
		if r := cmp.Rows[0]; r.Verdict != c.want || r.Change < 0.15 {
			t.Errorf("%s: p95 %v → %v (%+.0f%%), verdict %q; want %q", c.name, r.Base, r.Head, 100*r.Change, r.Verdict, c.want)
		}
	}
}

// TestCompareRefusesOtherWeather: two runs measured under different
// weather on the crowd (one begun with an origin down, which the other was
// not) are not the same work: refused, naming both, or with --force
// compared with the forced note; the same weather compares as usual.
func TestCompareRefusesOtherWeather(t *testing.T) {
	run := func(a *record.AmbientWeather) *record.Record { return weatheredRun(t, nil, a) }
	down := &record.AmbientWeather{Start: &record.WeatherState{SinceS: -30, Spec: "down=flood3.test",
		Counts: map[string]int{"down": 1, "clear": 19}, Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "down"}}}}
	slow := func(delay string) *record.AmbientWeather {
		return &record.AmbientWeather{Start: &record.WeatherState{SinceS: -30, Spec: "slow=flood3.test:" + delay + ":0.5",
			Counts: map[string]int{"slow": 1, "clear": 19}, Origins: []record.WeatherOrigin{{Host: "flood3.test", Condition: "slow:" + delay + ":0.5"}}}}
	}
	for _, c := range []struct {
		name       string
		base, head *record.AmbientWeather
		refusal    string // "" for comparable
	}{
		// The head began with flood3.test down; the base met none.
		{"head under weather", nil, down, "weather clear ≠ at the start down=flood3.test"},
		// Both began with an origin slow, but not as slow: other weather.
		{"other parameters", slow("30s"), slow("1s"), "weather at the start slow=flood3.test:30s:0.5 ≠ at the start slow=flood3.test:1s:0.5"},
		// Both began in the same weather.
		{"same weather", down, down, ""},
		// A crowd that did not say, and one that said clear: both clear.
		{"unsaid and clear", nil, &record.AmbientWeather{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := record.CompareOptions{MaxRegression: 0.15, ShareFloor: 0.001}
			_, err := record.Compare(run(c.base), run(c.head), opts)
			if c.refusal == "" && err != nil || c.refusal != "" && (!errors.Is(err, record.ErrIncomparable) || !strings.Contains(err.Error(), c.refusal)) {
				t.Fatalf("Compare: %v; want refused naming %q (\"\": compared)", err, c.refusal)
			}
			if c.refusal == "" {
				return
			}
			opts.Force = true
			cmp, err := record.Compare(run(c.base), run(c.head), opts)
			if err != nil || !strings.Contains(strings.Join(cmp.Notes, "\n"), "forced: "+c.refusal) {
				t.Errorf("--force: %v, notes %q; want the forced note naming the weather", err, cmp.Notes)
			}
		})
	}
}

// TestCompareTimelinesAsGiven: two runs of one repeating weather timeline
// are the same work whatever number of turns their lengths made; a
// timeline with its change at another offset is other weather.
func TestCompareTimelinesAsGiven(t *testing.T) {
	run := func(w *record.Weather) *record.Record { return weatheredRun(t, w, nil) }
	turns := func(n int, at float64) *record.Weather {
		w := &record.Weather{RepeatS: 10}
		for i := range n {
			w.Changes = append(w.Changes, record.WeatherChange{AtS: 10*float64(i) + at, Spec: "down=@followers"}, record.WeatherChange{AtS: 10*float64(i) + at + 2, Spec: "clear"})
		}
		return w
	}
	opts := record.CompareOptions{MaxRegression: 0.15, ShareFloor: 0.001}
	if _, err := record.Compare(run(turns(2, 1)), run(turns(3, 1)), opts); err != nil {
		t.Errorf("two and three turns of one timeline: %v; want them compared", err)
	}
	if _, err := record.Compare(run(turns(2, 1)), run(turns(2, 5)), opts); !errors.Is(err, record.ErrIncomparable) ||
		!strings.Contains(err.Error(), "+1s down=@followers then +3s clear (every 10s) ≠ timeline +5s down=@followers then +7s clear (every 10s)") {
		t.Errorf("an outage at +1s and at +5s: %v; want them refused, naming both", err)
	}
}

// weatheredRun is a run of 100 Creates over 10 s, all answered 202 in 1 ms,
// with the weather timeline w and the weather a it met and did not set.
func weatheredRun(t *testing.T, w *record.Weather, a *record.AmbientWeather) *record.Record {
	t.Helper()
	r := recordtest.MustRecord(t, recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{
		"Create": recordtest.Sends(100, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))}),
		record.Settings{Arrivals: "constant", Mix: "create=1"})
	r.Weather, r.Ambient = w, a
	return recordtest.RoundTrip(t, r)
}
