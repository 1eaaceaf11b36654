package record_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"

	"github.com/crowdfed/crowd/flood/record/recordtest"
)

func TestParseGate(t *testing.T) {
	for _, tc := range []struct {
		expr  string
		canon string // "" = a usage error
	}{
		{"p95<100ms", "latency.p95<100ms"},                       // the README's example
		{" p99 <= 2s ", "latency.p99<=2s"},                       // spaces are fine
		{"p99.9<1s", "latency.p99.9<1s"},                         // a dotted quantile
		{"max<10s", "latency.max<10s"},                           // max, min, mean
		{"Create.p95<1s", "Create.latency.p95<1s"},               // per type
		{"Create.service.p99<500ms", "Create.service.p99<500ms"}, // per type and family
		{"lateness.p99<1ms", "lateness.p99<1ms"},                 // the generator's schedule
		{"dispatch.p99<1ms", "dispatch.p99<1ms"},                 // the generator's own delay
		{"errors<1%", "errors<1%"},                               // a share
		{"errors==0", "errors==0"},                               // a count
		{"dropped==0", "dropped==0"},                             // no drops
		{"status429<5%", "status429<5%"},                         // a class
		{"status4xx<=2.5%", "status4xx<=2.5%"},                   // a range
		{"Like.timeouts==0", "Like.timeout==0"},                  // aliases canonicalise
		{"rate>=0.95*offered", "rate>=0.95*offered"},             // relative rate
		{"throughput>280", "throughput>280"},                     // absolute rate
		{"rate>=offered", "rate>=1*offered"},                     // implicit coefficient
		{"P95<100ms", "latency.p95<100ms"},                       // case of the metric
		{"p95", ""},                                              // no operator
		{"p95=100ms", "latency.p95==100ms"},                      // single '=' is '=='
		{"p95<", ""},                                             // no value
		{"<100ms", ""},                                           // no metric
		{"p95<5%", ""},                                           // a latency is not a share
		{"p95<fast", ""},                                         // not a duration
		{"p95<-1s", ""},                                          // negative
		{"p101<1s", ""},                                          // quantile over 100
		{"errors<1s", ""},                                        // a count is not a duration
		{"errors<101%", ""},                                      // share over 100
		{"errors<0x10", ""},                                      // no hex
		{"errors<NaN", ""},                                       // not finite
		{"status400<1%", ""},                                     // not a class of its own
		{"latency.errors<1%", ""},                                // a count has no family
		{"Create.rate>10", ""},                                   // rates are overall
		{"rate>=0.9*p95", ""},                                    // not a rate
		{"Create.dispatch.p99<1ms", ""},                          // dispatch is overall
		{"a.b.c.p95<1s", ""},                                     // too deep
		{"Crea-te.p95<1s", ""},                                   // bad type name
		{"bogus<1", ""},                                          // unknown metric
		{".p95<1s", ""},                                          // empty type
		{"ambient_weather==0", "ambient_weather==0"},             // the weather the run met and did not set
		{"ambient_weather<=2", "ambient_weather<=2"},             // a count of origins
		{"ambient_weather<5%", ""},                               // a share of origins the record may not know
		{"Create.ambient_weather==0", ""},                        // over the whole crowd, not a type
		{"ambient_weather==0.5", ""},                             // a count of origins is whole
		{"ambient_weather<1s", ""},                               // and no duration
	} {
		g, err := record.ParseGate(tc.expr)
		if tc.canon == "" {
			var ue *record.UsageError
			if !errors.As(err, &ue) {
				t.Errorf("%q: err = %v, want a *UsageError", tc.expr, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if record.CanonicalGate(g) != tc.canon {
			t.Errorf("%q: canonical %q, want %q", tc.expr, record.CanonicalGate(g), tc.canon)
		}
	}
}

func TestGateEval(t *testing.T) {
	r := recordtest.Gated(t)
	for _, tc := range []struct {
		expr  string
		holds bool
		known bool
	}{
		{"p50<100ms", false, true},         // Creates dominate: p50 ≈ 668 ms
		{"Like.p95<3ms", true, true},       // Likes are 2 ms
		{"Create.p95<=1s", true, true},     // Creates top out at 1 s
		{"Create.p95<900ms", false, true},  // but p95 ≈ 950 ms
		{"p97.5>900ms", true, true},        // a quantile outside the summary
		{"service.max<600ms", true, true},  // service is half of latency
		{"lateness.p99<100ms", true, true}, // lateness is a tenth
		{"dispatch.p99<1ms", true, true},   // 50 µs
		{"errors<1%", false, true},         // 50 of 1500 = 3.3 %
		{"errors<5%", true, true},
		{"status429==50", true, true},      // a count
		{"Like.status429==0", true, true},  // per type
		{"dropped==0", false, true},        // 25 dropped
		{"dropped<2%", true, true},         // of 1525 offered = 1.6 %
		{"rate>=0.95*offered", true, true}, // 1500 of 1525 = 0.98
		{"rate>=0.99*offered", false, true},
		{"throughput>140", true, true},  // 1450 2xx in 10 s
		{"Follow.p95<1s", false, false}, // no Follows: no data, not met
		{"Follow.errors==0", false, false},
	} {
		g, err := record.ParseGate(tc.expr)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		res := g.Eval(r)
		if res.Holds != tc.holds || res.Known != tc.known {
			t.Errorf("%s: holds %v known %v, want %v %v (%s)", tc.expr, res.Holds, res.Known, tc.holds, tc.known, res)
		}
	}
}

// TestGatesOverAllTypesLeaveForgeriesOut: a gate on the answers over all
// types counts the honest requests only (a forgery refused is the right
// answer); the sends themselves count every one, and the Forged row is
// gated by name.
func TestGatesOverAllTypesLeaveForgeriesOut(t *testing.T) {
	r := recordtest.Gated(t) // 1500 completed, 50 of them 429
	forged := &record.TypeRecord{Counts: record.Counts{Offered: 300, Sent: 300, Completed: 300}}
	forged.Tally.Classes[record.Class401] = 300
	r.Types[string(record.TypeForged)] = forged
	r.Overall.Counts.Offered += 300
	r.Overall.Counts.Sent += 300
	r.Overall.Counts.Completed += 300
	r.Overall.Tally.Classes[record.Class401] += 300
	for _, tc := range []struct {
		expr   string
		actual float64
	}{
		{"errors<5%", 50.0 / 1500}, // the honest 429s, of the honest answers
		{"status4xx==0", 50},       // 401s to forgeries are not counted
		{"Forged.errors==0", 300},  // the Forged row, by name
		{"Forged.status401<1%", 1}, // all of them
		{"completed==0", 1800},     // sends count every one
		{"sent<1%", 1800.0 / 1825}, // of every offered
		{"Like.errors==0", 0},      // a type's own row is unchanged
	} {
		g, err := record.ParseGate(tc.expr)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		res := g.Eval(r)
		if !res.Known || res.Actual != tc.actual {
			t.Errorf("%s: %s, want the actual value %g", tc.expr, res, tc.actual)
		}
		// Beside a table whose "all" row counts the forgeries, the line says they were left out.
		if apart := strings.Contains(res.String(), "(forged requests apart)"); apart != (tc.expr == "errors<5%" || tc.expr == "status4xx==0") {
			t.Errorf("%s: %q says the forged requests apart %v", tc.expr, res, apart)
		}
	}
}

// FuzzParseGate: the parser never panics, fails only with *UsageError, and
// what it accepts prints to a canonical form that parses back to the same
// gate and evaluates without panicking.
func FuzzParseGate(f *testing.F) {
	for _, s := range []string{"p95<100ms", "p99.9<=2s", "errors<1%", "rate>=0.95*offered", "dropped==0",
		"status429<5%", "Create.service.p99>1ms", "throughput!=0", "p0>=0s", "mean<1h"} {
		f.Add(s)
	}
	r := recordtest.Gated(f)
	f.Fuzz(func(t *testing.T, s string) {
		g, err := record.ParseGate(s)
		if err != nil {
			var ue *record.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: error %v is not a *UsageError", s, err)
			}
			return
		}
		g2, err := record.ParseGate(record.CanonicalGate(g))
		if err != nil {
			t.Fatalf("%q: canonical %q does not parse: %v", s, record.CanonicalGate(g), err)
		}
		g.Expr, g2.Expr = "", ""
		if g != g2 {
			t.Fatalf("%q: canonical %q parses to %+v, want %+v", s, record.CanonicalGate(g), g2, g)
		}
		_ = g.Eval(r).String()
	})
}

// TestGateErrorsNameTheFix: a metric the gates do not know is refused with
// what they do know, and a family of quantiles with the quantile to name.
func TestGateErrorsNameTheFix(t *testing.T) {
	for _, c := range []struct{ expr, says string }{
		// A family where a quantile goes: its p99 is offered.
		{"latency<5ms", "name one, as latency.p99"},
		{"Service<5ms", "name one, as service.p99"},
		// An unknown word: the kinds of metric are listed.
		{"bogus<1", "want a quantile (p95, p99"},
		// The weather met is counted in origins, over the whole crowd.
		{"ambient_weather<5%", "e.g. 'ambient_weather==0'"},
		{"Like.ambient_weather==0", `drop "Like."`},
		{"ambient_weather<1s", "want a whole number such as 0"},
	} {
		_, err := record.ParseGate(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v; want it to say %q", c.expr, err, c.says)
		}
	}
}

// TestJudgeOnAnotherMeasurement: a gate judged on a summary or a count
// another measurement of the run made (crowd run's run section) compares
// as Eval does, any quantile from its histogram, and has no data where it
// holds none, or keeps neither the quantile nor a histogram.
func TestJudgeOnAnotherMeasurement(t *testing.T) {
	q := record.HistRecord{Quantiles: record.Quantiles{Count: 10, Min: 1_000, Mean: 2_500, P50: 2_000, P90: 4_000, P95: 5_000, P99: 9_000, P999: 9_900, Max: 10_000}}
	kept := recordtest.Latency(t, 1000, 2_000, 5_000, 9_000) // its histogram kept
	gate := func(expr string) record.Gate {
		g, err := record.ParseGates([]string{expr})
		if err != nil {
			t.Fatal(err)
		}
		return g[0]
	}
	for _, tc := range []struct {
		expr         string
		q            record.HistRecord
		n, of        int64 // for a count
		known, holds bool
		say          string // String's start
	}{
		{"visibility.p95<6ms", q, 0, 0, true, true, "visibility.latency.p95 = 5.00ms (want < 6.00ms): met"},         // under
		{"visibility.p99<6ms", q, 0, 0, true, false, "visibility.latency.p99 = 9.00ms (want < 6.00ms): missed"},     // over
		{"visibility.p99.9<=9.9ms", q, 0, 0, true, true, "visibility.latency.p99.9 = 9.90ms (want <= 9.90ms): met"}, // a kept quantile with a dot
		{"home.max<20ms", q, 0, 0, true, true, "home.latency.max = 10.0ms"},                                         // max
		{"visibility.p75<1s", q, 0, 0, false, false, "visibility.latency.p75: no data"},                             // a quantile the summary keeps not, and no histogram
		{"visibility.p75<4ms", kept, 0, 0, true, true, "visibility.latency.p75 = 3.66ms"},                           // the histogram has it
		{"visibility.p95<1s", record.HistRecord{}, 0, 0, false, false, "visibility.latency.p95: no data"},           // nothing measured
		{"visibility.never_seen==0", q, 0, 40, true, true, "visibility.never_seen = 0 (want == 0): met"},            // a count
		{"visibility.never_seen<1%", q, 2, 40, true, false, "visibility.never_seen = 5% (want < 1%): missed"},       // a share of what it counts
		{"delivery.unreached<1%", q, 0, 0, false, false, "delivery.unreached: no data"},                             // a share of nothing
	} {
		g := gate(tc.expr)
		var res record.GateResult
		if g.IsCount() {
			res = g.JudgeCount(tc.n, tc.of)
		} else {
			res = g.JudgeLatency(tc.q)
		}
		if res.Known != tc.known || res.Holds != tc.holds || !strings.HasPrefix(res.String(), tc.say) {
			t.Errorf("%s: known %v holds %v %q; want %v %v %q", tc.expr, res.Known, res.Holds, res.String(), tc.known, tc.holds, tc.say)
		}
	}
}
