package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
)

// TestMain lets the test binary stand in for the bench binary when the
// bench re-executes itself as a helper (the null sink, a flood).
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode, os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestParseOpensslSpeed reads openssl speed's result line, on one process
// and with -multi (OpenSSL 3.0's output).
func TestParseOpensslSpeed(t *testing.T) {
	for _, c := range []struct {
		name, out    string
		sign, verify float64
		ok           bool
	}{
		{"one process", "Doing 2048 bits private rsa's for 3s: 11509 2048 bits private RSA's in 3.00s\nversion: 3.0.22\n                  sign    verify    sign/s verify/s\nrsa 2048 bits 0.000261s 0.000016s   3836.4  61300.0\n", 3836.4, 61300, true},
		{"-multi 2: the sum", "Got: +F2:2:2048:882.500000:20672.000000 from 0\nGot: +F2:2:2048:652.736318:19275.000000 from 1\n                  sign    verify    sign/s verify/s\nrsa 2048 bits 0.000651s 0.000025s   1535.2  39947.0\n", 1535.2, 39947, true},
		{"another key size only", "rsa 4096 bits 0.003s 0.00005s 330.0 20000.0\n", 0, 0, false},
		{"no output", "", 0, 0, false},
	} {
		sign, verify, err := parseOpensslSpeed(c.out)
		if (err == nil) != c.ok || sign != c.sign || verify != c.verify {
			t.Errorf("%s: %v, %v, %v; want %v, %v, ok=%v", c.name, sign, verify, err, c.sign, c.verify, c.ok)
		}
	}
}

// TestSearch checks the maximum-rate search against generators whose
// sustained maximum is known.
func TestSearch(t *testing.T) {
	for _, c := range []struct {
		name               string
		start, factor, max float64
		bracket, steps     int
		retries, flaky     int     // tries of a failed rate; first tries of each rate that fail whatever the rate
		wantLo, wantHi     float64 // the result must lie in [wantLo, wantHi]
		wantTrialsAtMost   int
		wantNone           bool
	}{
		// Start below the maximum: grow past it, then bisect to within 2 %.
		{name: "grow then bisect", start: 1000, factor: 1.5, max: 2600, bracket: 4, steps: 8, wantLo: 2548, wantHi: 2600, wantTrialsAtMost: 13},
		// Start above: shrink until a pass, then bisect.
		{name: "shrink then bisect", start: 10000, factor: 1.5, max: 2600, bracket: 4, steps: 8, wantLo: 2548, wantHi: 2600, wantTrialsAtMost: 13},
		// No bisection steps: the bracket's pass is the answer.
		{name: "no bisection", start: 1000, factor: 2, max: 3000, bracket: 4, steps: 0, wantLo: 2000, wantHi: 2000, wantTrialsAtMost: 3},
		// The maximum lies beyond what the bracket can grow to: report the last pass.
		{name: "ceiling not reached", start: 100, factor: 2, max: 1e9, bracket: 2, steps: 4, wantLo: 400, wantHi: 400, wantTrialsAtMost: 3},
		// Nothing is sustained, however low the bracket goes.
		{name: "nothing sustained", start: 100, factor: 2, max: 1, bracket: 3, steps: 4, wantNone: true, wantTrialsAtMost: 4},
		// A noisy machine fails each rate's first try: one retry finds the same maximum.
		{name: "retry hides noise", start: 1000, factor: 1.5, max: 2600, bracket: 4, steps: 8, retries: 1, flaky: 1, wantLo: 2548, wantHi: 2600, wantTrialsAtMost: 26},
		// Without retries, the same noise makes every trial fail.
		{name: "noise without retry", start: 1000, factor: 1.5, max: 2600, bracket: 4, steps: 8, flaky: 1, wantNone: true, wantTrialsAtMost: 5},
		// Retries of a rate that really fails are spent, then it counts as failed.
		{name: "retries spent", start: 1000, factor: 2, max: 3000, bracket: 4, steps: 0, retries: 2, wantLo: 2000, wantHi: 2000, wantTrialsAtMost: 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSearch("test", c.start, c.factor, c.bracket, c.steps, c.retries)
			tries := map[float64]int{}
			for rate, ok := s.next(); ok; rate, ok = s.next() {
				tries[rate]++
				pass := rate <= c.max && tries[rate] > c.flaky
				s.report(outcome{Rate: rate, Pass: pass})
				if len(s.trials) > 100 {
					t.Fatal("the search does not end")
				}
			}
			best, bt := s.best()
			if c.wantNone {
				if bt != nil {
					t.Errorf("found %g, want nothing", best)
				}
			} else if bt == nil || best < c.wantLo || best > c.wantHi {
				t.Errorf("found %g, want [%g, %g]", best, c.wantLo, c.wantHi)
			}
			if len(s.trials) > c.wantTrialsAtMost {
				t.Errorf("%d trials, want at most %d", len(s.trials), c.wantTrialsAtMost)
			}
		})
	}
}

// TestInterleaveAllTakesTurns: searches interleaved run one trial each in
// turn, so the machine's minutes fall on all of them alike; a search
// that is over gives up its turns to the others, and each still finds what
// it would alone.
func TestInterleaveAllTakesTurns(t *testing.T) {
	tests := []struct {
		name      string
		limits    []float64 // each search passes a rate up to its limit: 350 passes 100 and 200 and fails 400 (3 trials), 150 passes 100 and fails 200 (2)
		wantOrder string    // the sides' letters in the order their trials ran
	}{
		// Two searches of one length alternate A, B, A, B to the end.
		{"two alike", []float64{350, 350}, "ABABAB"},
		// Three take turns A, B, C.
		{"three alike", []float64{350, 350, 350}, "ABCABCABC"},
		// One that ends after two trials leaves the others to go on in turn.
		{"one ends first", []float64{350, 350, 150}, "ABCABCAB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var order strings.Builder
			var turns []turn
			var alone []float64
			for i, limit := range tt.limits {
				side := string(rune('A' + i))
				s := newSearch(side, 100, 2, 4, 0, 0)
				turns = append(turns, turn{s, func(_ context.Context, rate float64) outcome {
					order.WriteString(side)
					return outcome{Side: side, Rate: rate, Pass: rate <= limit}
				}})
				// The same search run alone, for its answer.
				a := newSearch(side, 100, 2, 4, 0, 0)
				for rate, ok := a.next(); ok; rate, ok = a.next() {
					a.report(outcome{Rate: rate, Pass: rate <= limit})
				}
				best, _ := a.best()
				alone = append(alone, best)
			}
			interleaveAll(context.Background(), turns...)
			if got := order.String(); got != tt.wantOrder {
				t.Errorf("trials ran %s, want %s", got, tt.wantOrder)
			}
			for i, tr := range turns {
				if best, _ := tr.s.best(); best != alone[i] {
					t.Errorf("search %s found %g interleaved, %g alone", tr.s.side, best, alone[i])
				}
			}
		})
	}
}

// TestInterleaveAllStopsWithItsContext: a done context stops the turns
// between two trials, within a round too.
func TestInterleaveAllStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	trial := func(_ context.Context, rate float64) outcome {
		ran++
		cancel() // during the round's first trial
		return outcome{Rate: rate, Pass: true}
	}
	interleaveAll(ctx, turn{newSearch("A", 100, 2, 9, 0, 0), trial}, turn{newSearch("B", 100, 2, 9, 0, 0), trial},
		turn{newSearch("C", 100, 2, 9, 0, 0), trial})
	if ran != 1 {
		t.Fatalf("%d trials ran, want 1 (the context ended during the first)", ran)
	}
}

// TestSearchTriesSlowFailuresAgain: a failed trial its section measured
// the machine slow around is the machine's, not the generator's, so the
// search tries its rate again without counting it, a bounded number of
// times; a pass counts however slow the machine was.
func TestSearchTriesSlowFailuresAgain(t *testing.T) {
	tests := []struct {
		name       string
		slowFails  int     // the first trials fail, marked Slow, whatever their rate
		slowPasses bool    // every pass is marked Slow too
		wantBest   float64 // max 350: 100 and 200 pass, 400 fails
		wantTrials int
		wantUncnt  int
	}{
		// No slow spell: the search as ever.
		{"clear machine", 0, false, 200, 3, 0},
		// A slow spell fails the first two trials: each is tried again, and
		// the search finds what it finds on a clear machine.
		{"two slow failures", 2, false, 200, 5, 2},
		// A pass in a slow spell is still a pass.
		{"slow passes count", 0, true, 200, 3, 0},
		// The slow tries run out: the fourth slow failure (at 100/s) counts
		// as a failure, and the search shrinks below it, to 50/s.
		{"slow tries run out", 4, false, 50, 5, maxSlowRetries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSearch("test", 100, 2, 2, 0, 0)
			n := 0
			for rate, ok := s.next(); ok; rate, ok = s.next() {
				n++
				o := outcome{Rate: rate, Pass: rate <= 350 && n > tt.slowFails}
				if n <= tt.slowFails || (o.Pass && tt.slowPasses) {
					o.Slow = "the ceiling sampled beside it was low"
				}
				s.report(o)
				if len(s.trials) > 100 {
					t.Fatal("the search does not end")
				}
			}
			best, _ := s.best()
			uncounted := 0
			for _, tr := range s.trials {
				if tr.Uncounted {
					uncounted++
				}
			}
			if best != tt.wantBest || len(s.trials) != tt.wantTrials || uncounted != tt.wantUncnt {
				t.Errorf("best %g after %d trials, %d uncounted; want %g, %d, %d", best, len(s.trials), uncounted, tt.wantBest, tt.wantTrials, tt.wantUncnt)
			}
			if note := slowNote(s.trials); (note != "") != (tt.wantUncnt > 0) {
				t.Errorf("slowNote %q with %d uncounted", note, uncounted)
			}
		})
	}
}

// TestSlowAround: a trial is slow when the ceiling sampled before and
// after it both fell under slowBelow × the median of the section's samples.
func TestSlowAround(t *testing.T) {
	normal := []float64{3600, 3500, 3700, 3650}
	tests := []struct {
		name          string
		before, after float64
		samples       []float64
		wantSlow      bool
	}{
		// Both samples near the median: a clear machine.
		{"clear", 3550, 3620, normal, false},
		// Both fell to 0.7-0.75 × the median: the spell spans the trial.
		{"slow before and after", 2700, 2518, append(normal, 2700, 2518), true},
		// Only the sample after it fell: the spell's edge, or the trial's own
		// tail; excused, it would excuse the trial by itself.
		{"slow after only", 3600, 2518, append(normal, 2518), false},
		// Only the one before it: the spell ended before the trial did.
		{"slow before only", 2700, 3600, append(normal, 2700), false},
		// 0.9 × the median is the noise of a clear machine, not a spell.
		{"within the noise", 3250, 3300, normal, false},
		// Two samples give no median to stand for the machine.
		{"too few samples", 1000, 1000, []float64{3600, 1000}, false},
		// A sample that measured nothing says nothing, the other low or not.
		{"no sample", 0, 2518, append(normal, 2518), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slowAround(tt.before, tt.after, tt.samples)
			if (got != "") != tt.wantSlow {
				t.Fatalf("slowAround(%g, %g) = %q, want slow %v", tt.before, tt.after, got, tt.wantSlow)
			}
		})
	}
}

// TestJudge checks the common rule for a sustained rate.
func TestJudge(t *testing.T) {
	for _, c := range []struct {
		name string
		o    outcome
		pass bool
	}{
		// Everything answered 2xx, on time: sustained.
		{"sustained", outcome{Rate: 1000, Completed: 1000, OK: 1000, Achieved: 1000, Success: 1, LatencyP99MS: 1}, true},
		// 1.5 % errors: not sustained even at full rate.
		{"errors", outcome{Rate: 1000, Completed: 1000, OK: 985, Achieved: 1000, Success: 0.985, LatencyP99MS: 1}, false},
		// Fell behind: achieved under 0.99 × offered.
		{"behind", outcome{Rate: 1000, Completed: 900, OK: 900, Achieved: 900, Success: 1, LatencyP99MS: 1}, false},
		// On rate but queueing: p99 latency over the bound.
		{"slow", outcome{Rate: 1000, Completed: 1000, OK: 1000, Achieved: 1000, Success: 1, LatencyP99MS: 30}, false},
		// Nothing came back at all.
		{"nothing", outcome{Rate: 1000}, false},
		// The trial itself failed (its Why is kept).
		{"trial failed", outcome{Rate: 1000, Completed: 1000, OK: 1000, Achieved: 1000, Success: 1, Why: "partial: interrupted"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.judge(25*time.Millisecond, nil, nil)
			if o.Pass != c.pass {
				t.Errorf("pass = %v (%s), want %v", o.Pass, o.Why, c.pass)
			}
		})
	}
}

// TestParseFlags checks the command line's validation.
func TestParseFlags(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		ok   bool
	}{
		// The defaults are runnable.
		{"defaults", nil, true},
		// A warm-up as long as the trial leaves nothing to measure.
		{"warmup too long", []string{"-trial", "1s", "-warmup", "1s"}, false},
		// -cpu-rates needs two positive rates.
		{"one cpu rate", []string{"-cpu-rates", "500"}, false},
		{"bad cpu rate", []string{"-cpu-rates", "500,x"}, false},
		{"good cpu rates", []string{"-cpu-rates", "100, 200"}, true},
		// The origins ×scale world is bounded like any world.
		{"too many origins", []string{"-origins", "2000", "-scale", "10"}, false},
		// Positional arguments are a mistake.
		{"stray argument", []string{"now"}, false},
		// The flood rows' client is one of the flood's.
		{"flood client", []string{"-flood-client", "nethttp"}, true},
		{"unknown flood client", []string{"-flood-client", "curl"}, false},
		// The signers' nice value is crowd flood --signer-nice's: auto, or 0 to 19.
		{"signer nice auto", []string{"-signer-nice", "auto"}, true},
		{"signer nice above 19", []string{"-signer-nice", "20"}, false},
		{"signer nice below 0", []string{"-signer-nice", "-1"}, false},
		{"signer nice a word", []string{"-signer-nice", "low"}, false},
		// Paired trials of the with/without rows: 0 (none) to 10.
		{"no cost pairs", []string{"-cost-pairs", "0"}, true},
		{"negative cost pairs", []string{"-cost-pairs", "-1"}, false},
		{"too many cost pairs", []string{"-cost-pairs", "11"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseFlags(c.args, &bytes.Buffer{})
			if (err == nil) != c.ok {
				t.Errorf("err = %v, want ok = %v", err, c.ok)
			}
		})
	}
}

// TestSignerNice: every pipeline row runs the shipped default (auto) unless
// -signer-nice sets a value, and the rules the rows print say which.
func TestSignerNice(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want int
		rule string
	}{
		// The default: crowd flood's.
		{"default", nil, traffic.NiceAuto, "signers at crowd flood --signer-nice auto (nice 0 beside a real-time dispatcher, 19 beside any other)"},
		// A value of its own, in every row.
		{"set", []string{"-signer-nice", "19"}, 19, "signers at nice 19 (crowd flood --signer-nice 19)"},
		{"unchanged", []string{"-signer-nice", "0"}, 0, "signers at nice 0 (crowd flood --signer-nice 0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseFlags(c.args, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.SignerNice != c.want {
				t.Errorf("signer nice %d, want %d", cfg.SignerNice, c.want)
			}
			if got := (&bench{cfg: cfg}).signersRule(); got != c.rule {
				t.Errorf("rule %q, want %q", got, c.rule)
			}
		})
	}
}

// TestFormat checks how figures are printed in the table.
func TestFormat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{20480, "/s", "20 480/s"},        // thousands separated
		{999, "/s", "999/s"},             // no separator under a thousand
		{1234567.4, "/s", "1 234 567/s"}, // rounded
		{0.4567, "ms", "0.46 ms"},        // short times keep two decimals
		{412.3, "ms", "412 ms"},          // long ones none
		{43.21, "MiB", "43.2 MiB"},
		{0.7412, "ms/activity", "0.741 ms/activity"},
	} {
		if got := formatValue(c.v, c.unit); got != c.want {
			t.Errorf("formatValue(%g, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

// FuzzParseFlags: any -cpu-rates value either parses into two positive
// rates or is refused; never a panic.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"500,1000", "1,2", "", ",", "x,1", "1e309,1", "-1,2", "NaN,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseFlags([]string{"-cpu-rates", s}, &bytes.Buffer{})
		if err == nil && !(c.CPURates[0] > 0 && c.CPURates[1] > 0) {
			t.Errorf("-cpu-rates %q accepted as %v", s, c.CPURates)
		}
	})
}

// TestPooledTrialsJudgeLatenessOverAllSends: a pipeline rate is judged by
// the p99 lateness of its trials' sends pooled, so one trial's stall no
// longer decides it, while a stall in every trial still does.
func TestPooledTrialsJudgeLatenessOverAllSends(t *testing.T) {
	// trial is 1 000 sends answered 202, 0.2 ms late, of which late
	// sends were stalled 5 ms: 2 % of one trial is past its p99.
	trial := func(late int) *record.Stats {
		st := record.NewStats()
		for i := range 1000 {
			lateness := 200 * time.Microsecond
			if i < late {
				lateness = 5 * time.Millisecond
			}
			st.Counts.Offered++
			st.Counts.Completed++
			st.Tally.Add(record.ClassOfStatus(202), false)
			st.Observe(record.ClassOfStatus(202), 2*time.Millisecond, time.Millisecond, lateness)
		}
		return st
	}
	for _, c := range []struct {
		name   string
		stalls []int // stalled sends in each trial
		pass   bool
	}{
		// One trial alone with a stall fails the 1 ms bound at p99.
		{"one stalled trial alone", []int{20}, false},
		// The same trial pooled with two clean ones: 20 of 3 000 is under 1 %.
		{"one stall in three trials", []int{20, 0, 0}, true},
		// A stall in every trial is the generator's, and fails pooled too.
		{"a stall in every trial", []int{20, 20, 20}, false},
	} {
		pooled := record.NewStats()
		for _, n := range c.stalls {
			pooled.Merge(trial(n))
		}
		o := outcome{Rate: 1000}
		o.take(pooled, time.Duration(len(c.stalls))*time.Second)
		if o.Offered != int64(1000*len(c.stalls)) || o.OK != o.Offered || o.Achieved != 1000 {
			t.Errorf("%s: offered %d, ok %d, achieved %.0f/s; want every send counted at 1000/s", c.name, o.Offered, o.OK, o.Achieved)
		}
		if pass := o.LatenessP99MS <= 1; pass != c.pass {
			t.Errorf("%s: pooled p99 lateness %.2f ms, within 1 ms = %v; want %v", c.name, o.LatenessP99MS, pass, c.pass)
		}
	}
}
