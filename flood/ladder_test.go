package flood

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/report"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

func TestParseRates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64 // nil = a usage error
	}{
		{"300", []float64{300}},                              // one rate, no ladder
		{"100,300,600,1000", []float64{100, 300, 600, 1000}}, // the DESIGN's ladder
		{" 100 , 0.5 ", []float64{100, 0.5}},                 // spaces, fractions
		{"", nil},                                            // nothing
		{"100,,300", nil},                                    // empty rung
		{"100,0", nil},                                       // zero rate
		{"-5", nil},                                          // negative
		{"fast", nil},                                        // not a number
		{"1e999", nil},                                       // infinite
	} {
		got, err := ParseRates(tc.in)
		if tc.want == nil {
			var ue *record.UsageError
			if !errors.As(err, &ue) {
				t.Errorf("ParseRates(%q) = %v, %v; want a usage error", tc.in, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseRates(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseRamp(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float64
	}{
		{"100:500:100", []float64{100, 200, 300, 400, 500}},       // inclusive end
		{"100:450:100", []float64{100, 200, 300, 400}},            // end not on a step
		{"0.1:0.3:0.1", []float64{0.1, 0.2, 0.30000000000000004}}, // fractional steps do not lose the last rung
		{"50:50:10", []float64{50}},                               // a single rung
		{"100:1000", nil},                                         // no step
		{"500:100:100", nil},                                      // downwards
		{"100:1000:0", nil},                                       // zero step
		{"1:100000:1", nil},                                       // too many rungs
		{"a:b:c", nil},                                            // not numbers
	} {
		got, err := ParseRamp(tc.in)
		if tc.want == nil {
			var ue *record.UsageError
			if !errors.As(err, &ue) {
				t.Errorf("ParseRamp(%q) = %v, %v; want a usage error", tc.in, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseRamp(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// fakeRung returns a RungFunc whose SUT has a shoulder near knee sends/s:
// latency 2 ms below it, growing fast above; it records the calls.
func fakeRung(knee float64, calls *[]float64) RungFunc {
	return func(ctx context.Context, rate float64, d time.Duration) (*record.Record, error) {
		*calls = append(*calls, rate)
		lat := 2 * time.Millisecond
		if rate > knee {
			lat = time.Duration(rate / knee * rate / knee * float64(time.Second))
		}
		n := int(rate * d.Seconds())
		res := recordtest.Run(t0, d, map[string]*record.Stats{
			"Create": recordtest.Sends(n, func(int) time.Duration { return lat }, recordtest.Always(record.Class202)),
		})
		res.Rate = rate
		return res.Record(record.Settings{Label: "ladder"})
	}
}

func TestLadderStopsAtShoulder(t *testing.T) {
	stop, err := record.ParseGates([]string{"p95>2s"})
	if err != nil {
		t.Fatal(err)
	}
	var calls []float64
	var rows []record.RungRow
	l := &Ladder{Rates: []float64{100, 300, 600, 1000, 2000}, Step: 2 * time.Second, Warmup: time.Second, StopWhen: stop}
	res, err := l.Run(context.Background(), fakeRung(500, &calls), func(r record.RungRow) error { rows = append(rows, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	// 600/s: 1.44 s, under 2 s; 1000/s: 4 s, the shoulder; 2000/s never runs.
	if !reflect.DeepEqual(calls, []float64{100, 300, 600, 1000}) {
		t.Errorf("rungs run %v", calls)
	}
	if len(res.Rows) != 4 || len(rows) != 4 || res.Shoulder != 3 || !res.Rows[3].Shoulder || res.Rows[2].Shoulder {
		t.Errorf("rows %d (callback %d), shoulder %d", len(res.Rows), len(rows), res.Shoulder)
	}
	for i, r := range res.Rows {
		if r.Index != i || r.Record.Rates.Sent != r.Rate {
			t.Errorf("row %d: index %d rate %v sent/s %v", i, r.Index, r.Rate, r.Record.Rates.Sent)
		}
	}
	// Without a stop condition every rung runs.
	calls = nil
	l.StopWhen = nil
	if res, _ := l.Run(context.Background(), fakeRung(500, &calls), nil); len(res.Rows) != 5 || res.Shoulder != -1 {
		t.Errorf("no stop condition: %d rows, shoulder %d", len(res.Rows), res.Shoulder)
	}
}

func TestLadderEarlyEnds(t *testing.T) {
	l := &Ladder{Rates: []float64{100, 200, 300}, Step: time.Second}
	// Cancelled between rungs: the rows so far, marked partial.
	ctx, cancel := context.WithCancel(context.Background())
	var calls []float64
	inner := fakeRung(1000, &calls)
	res, err := l.Run(ctx, func(ctx context.Context, rate float64, d time.Duration) (*record.Record, error) {
		defer cancel()
		return inner(ctx, rate, d)
	}, nil)
	if err != nil || !res.Partial || len(res.Rows) != 1 {
		t.Errorf("cancelled: %d rows partial %v err %v", len(res.Rows), res.Partial, err)
	}
	// A rung that fails stops the ladder with its error.
	boom := errors.New("boom")
	res, err = l.Run(context.Background(), func(context.Context, float64, time.Duration) (*record.Record, error) { return nil, boom }, nil)
	if !errors.Is(err, boom) || len(res.Rows) != 0 {
		t.Errorf("failing rung: err %v rows %d", err, len(res.Rows))
	}
	// A rung with no completed sends cannot be below the shoulder.
	stop, _ := record.ParseGates([]string{"p95>2s"})
	l.StopWhen = stop
	res, _ = l.Run(context.Background(), func(context.Context, float64, time.Duration) (*record.Record, error) {
		return recordtest.Run(t0, time.Second, map[string]*record.Stats{}).Record(record.Settings{})
	}, nil)
	if res.Shoulder != 0 {
		t.Errorf("empty rung: shoulder %d, want 0", res.Shoulder)
	}
	if _, err := (&Ladder{}).Run(context.Background(), nil, nil); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("empty ladder: %v", err)
	}
}

func TestRungPlan(t *testing.T) {
	l := &Ladder{Step: 20 * time.Second, Warmup: 5 * time.Second}
	p := l.RungPlan(Plan{Limits: Limits{MaxSends: 7, MaxInflight: 9}}, mustConstant(t, 300))
	if p.Duration != 25*time.Second || p.Warmup != 5*time.Second || p.MaxSends != 0 || p.MaxInflight != 9 || p.Pacer.Rate() != 300 {
		t.Errorf("rung plan %+v", p)
	}
}

func FuzzParseRamp(f *testing.F) {
	for _, s := range []string{"100:1000:100", "1:2:0.5", "0:0:0", "1e3:1e4:1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rates, err := ParseRamp(s)
		if err != nil {
			var ue *record.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: %v is not a usage error", s, err)
			}
			return
		}
		if len(rates) == 0 || len(rates) > maxRungs {
			t.Fatalf("%q: %d rungs", s, len(rates))
		}
		for i, r := range rates {
			if !(r > 0) || (i > 0 && r <= rates[i-1]) {
				t.Fatalf("%q: rung %d is %v", s, i, r)
			}
		}
	})
}

func FuzzParseRates(f *testing.F) {
	for _, s := range []string{"100,300,600", "5", "0.5, 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rates, err := ParseRates(s)
		if err != nil {
			var ue *record.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: %v is not a usage error", s, err)
			}
			return
		}
		for _, r := range rates {
			if !(r > 0) {
				t.Fatalf("%q: rate %v", s, r)
			}
		}
	})
}

func TestWriteLadderGolden(t *testing.T) {
	stop, _ := record.ParseGates([]string{"p95>2s"})
	var calls []float64
	l := &Ladder{Rates: []float64{100, 300, 600, 1000, 2000}, Step: 2 * time.Second, StopWhen: stop}
	res, err := l.Run(context.Background(), fakeRung(500, &calls), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteLadder(&b, res); err != nil {
		t.Fatal(err)
	}
	recordtest.Golden(t, "ladder.golden", b.Bytes(), *update)
}
