package main

import (
	"bytes"
	"context"
	"flag"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestCombinedCeiling: stages sharing one machine add their time per
// send, so the pipeline's ceiling is 1 / Σ 1/rate.
func TestCombinedCeiling(t *testing.T) {
	tests := []struct {
		name    string
		rates   []float64
		want    float64
		wantErr bool
	}{
		// Two equal stages: each takes half the machine, half the rate.
		{"equal stages", []float64{2000, 2000}, 1000, false},
		// Signing at 3 000/s and sending at 6 000/s: 1/3000 + 1/6000 = 1/2000.
		{"signing slower than sending", []float64{3000, 6000}, 2000, false},
		// A stage far faster than the other barely lowers the slow one's rate.
		{"a cheap stage", []float64{1000, 1e9}, 1 / (1.0/1000 + 1/1e9), false},
		// One stage alone is its own ceiling.
		{"one stage", []float64{1234}, 1234, false},
		// A stage that was not measured gives no ceiling.
		{"zero rate", []float64{3000, 0}, 0, true},
		// A negative rate is nonsense, not a ceiling.
		{"negative rate", []float64{-1, 3000}, 0, true},
		// Neither is an infinite or NaN rate.
		{"infinite rate", []float64{math.Inf(1), 3000}, 0, true},
		{"NaN rate", []float64{math.NaN(), 3000}, 0, true},
		// No stages at all.
		{"no stages", nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := combinedCeiling(tt.rates...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if math.Abs(got-tt.want) > 1e-9*math.Max(1, tt.want) {
				t.Errorf("combinedCeiling(%v) = %v, want %v", tt.rates, got, tt.want)
			}
		})
	}
}

// TestSendBudget: each rate as µs of all cores per send, and what the
// pipeline spends beyond its two stages.
func TestSendBudget(t *testing.T) {
	tests := []struct {
		name                  string
		cores                 int
		sign, send, pipeline  float64
		want                  sendBudget
		wantErr               bool
		wantInString, wantNot string
	}{
		// 2 cores: signing 4 000/s is 500 µs, sending 20 000/s 100 µs, a
		// pipeline at 1 000/s 2 000 µs, of which 1 400 µs are neither.
		{name: "slower than its stages", cores: 2, sign: 4000, send: 20000, pipeline: 1000,
			want: sendBudget{Sign: 500, Send: 100, Pipeline: 2000, Coordination: 1400}, wantInString: "coordination (pipeline − both) 1400.0"},
		// A pipeline exactly at the combined ceiling coordinates for free.
		{name: "at the combined ceiling", cores: 1, sign: 3000, send: 6000, pipeline: 2000,
			want: sendBudget{Sign: 1e6 / 3000, Send: 1e6 / 6000, Pipeline: 500, Coordination: 0}, wantInString: "pipeline 500.0"},
		// A pipeline above it overlaps its stages: coordination is negative.
		{name: "overlapping stages", cores: 1, sign: 1000, send: 1000, pipeline: 1000,
			want: sendBudget{Sign: 1000, Send: 1000, Pipeline: 1000, Coordination: -1000}, wantInString: "-1000.0"},
		// An unmeasured stage: no budget.
		{name: "unmeasured sending", cores: 2, sign: 4000, send: 0, pipeline: 1000, wantErr: true},
		// No cores: no budget.
		{name: "no cores", cores: 0, sign: 4000, send: 20000, pipeline: 1000, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newSendBudget(tt.cores, tt.sign, tt.send, tt.pipeline)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"sign", got.Sign, tt.want.Sign}, {"send", got.Send, tt.want.Send}, {"pipeline", got.Pipeline, tt.want.Pipeline}, {"coordination", got.Coordination, tt.want.Coordination}} {
				if math.Abs(f.got-f.want) > 1e-9 {
					t.Errorf("%s = %v µs, want %v", f.name, f.got, f.want)
				}
			}
			if s := got.String(); !strings.Contains(s, tt.wantInString) {
				t.Errorf("String() = %q, want it to contain %q", s, tt.wantInString)
			}
		})
	}
}

// TestFloodConns: wrk gets the connections the flood dialled at its
// maximum.
func TestFloodConns(t *testing.T) {
	trials := []outcome{{Rate: 1000, Conns: 3}, {Rate: 2000, Conns: 9}, {Rate: 1500, Conns: 5}}
	tests := []struct {
		name   string
		trials []outcome
		best   *outcome
		want   int
	}{
		// The best trial's count, not the most any trial dialled.
		{"best trial", trials, &trials[2], 5},
		// No rate sustained: the most any trial dialled.
		{"no best", trials, nil, 9},
		// A best trial that counted none (it dialled before the count existed): the most of any.
		{"best counted none", trials, &outcome{Rate: 1500}, 9},
		// No trial at all: one connection, never zero.
		{"nothing", nil, nil, 1},
	}
	for _, tt := range tests {
		if got := floodConns(tt.trials, tt.best); got != tt.want {
			t.Errorf("%s: floodConns = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// goldenPool is a small presigned pool as the flood holds it: a shared
// URL, the signed headers and the exact bodies (one with a CRLF and
// bytes beyond ASCII, which the dump must carry untouched).
func goldenPool() []*flood.Prepared {
	u := &url.URL{Scheme: "http", Host: "127.0.0.1:8080", Path: "/inbox"}
	h := func(date, digest, sig string) http.Header {
		return http.Header{"Content-Type": {"application/activity+json"}, "Date": {date}, "Digest": {digest},
			"Signature": {sig}, "User-Agent": {"crowd/bench"}}
	}
	return []*flood.Prepared{
		{Method: http.MethodPost, URL: u, Header: h("Wed, 02 Dec 2026 14:00:00 GMT", "SHA-256=AAAA",
			`keyId="https://flood1.test/users/a#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest content-type",signature="c2ln"`),
			Body: []byte(`{"type":"Create","object":{"content":"é\r\n"}}`)},
		{Method: http.MethodPost, URL: u, Host: "flood2.test", Header: h("Wed, 02 Dec 2026 14:00:01 GMT", "SHA-256=BBBB",
			`keyId="https://flood2.test/users/b#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest content-type",signature="c2ln"`),
			Body: []byte(`{"type":"Like"}`)},
	}
}

// TestWrkDumpGolden: the presigned pool's dump, the data file the bench
// writes for wrk's script. Rewrite with -update.
func TestWrkDumpGolden(t *testing.T) {
	var reqs [][]byte
	for _, p := range goldenPool() {
		reqs = append(reqs, rawPost(p))
	}
	data, err := wrkData(reqs)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  []byte
	}{
		// Each request as "<length>\n<bytes>": request line, Host (the Prepared's, else the URL's), sorted headers, Content-Length, body.
		// (The script that reads it is TestWrkReplay's: wrk itself runs it.)
		{"presigned.requests", data},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("testdata", tt.name)
			if *update {
				if err := os.WriteFile(path, tt.got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(tt.got, want) {
				t.Errorf("%s differs from %s:\ngot  %q\nwant %q", tt.name, path, tt.got, want)
			}
		})
	}
	// An empty pool is refused: wrk would have nothing to send.
	if _, err := wrkData(nil); err == nil {
		t.Error("wrkData(nil): no error")
	}
}

// TestWrkReplaysPresigned: wrk replaying the dump of a really presigned
// pool sends requests whose signatures, digests and dates still verify:
// a bare verifier holding the world's keys answers every one 202.
func TestWrkReplaysPresigned(t *testing.T) {
	w := needWrk(t)
	world, err := openWorld(t.TempDir(), 1, 2, signing.GoBackend())
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	gen, err := newGenerator(world, "create=6,like=3", sharedInboxTarget)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pool, _, err := presignPool(ctx, gen, 8)
	if err != nil {
		t.Fatal(err)
	}
	addr, stop, err := startBareVerifier(world, signing.GoBackend())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var reqs [][]byte
	for _, p := range pool {
		reqs = append(reqs, rawPost(p))
	}
	script, err := writeWrkScript(t.TempDir(), "presigned", reqs)
	if err != nil {
		t.Fatal(err)
	}
	r := w.run(ctx, script, addr, 2, time.Second)
	if r.Bad != 0 || r.OK < int64(len(pool)) {
		t.Fatalf("wrk replaying %d presigned requests to a verifier: %+v", len(pool), r)
	}
}

// TestCPUPerSend: a flood trial's client CPU is divided by every send of
// its timeline, warm-up ticks included, and split into the kernel's share.
func TestCPUPerSend(t *testing.T) {
	ticks := func(sent ...int64) []record.Tick {
		var tl []record.Tick
		for i, n := range sent {
			tl = append(tl, record.Tick{T: i + 1, Sent: n, Warmup: i == 0})
		}
		return tl
	}
	for _, tc := range []struct {
		name           string
		before, after  cpuTimes
		timeline       []record.Tick
		wantUS, wantKS float64
	}{
		// 0.3 s user + 0.9 s system over 40 000 sends: 30 µs each, 3/4 kernel.
		{"warm-up counted", cpuTimes{1, 2}, cpuTimes{1.3, 2.9}, ticks(10000, 30000), 30, 0.75},
		// nothing sent: no figure rather than a division by zero.
		{"no sends", cpuTimes{1, 2}, cpuTimes{1.3, 2.9}, ticks(0, 0), 0, 0},
		// getrusage failed (zero after): no figure.
		{"no CPU reading", cpuTimes{1, 2}, cpuTimes{}, ticks(100), 0, 0},
	} {
		us, ks := tc.after.perSend(tc.before, tc.timeline)
		if math.Abs(us-tc.wantUS) > 1e-9 || math.Abs(ks-tc.wantKS) > 1e-9 {
			t.Errorf("%s: %.3f µs/send, kernel %.3f; want %.3f, %.3f", tc.name, us, ks, tc.wantUS, tc.wantKS)
		}
	}
}

// TestEntriesPerSend: faults and switches are counted per send of the
// whole timeline, as the CPU is.
func TestEntriesPerSend(t *testing.T) {
	tl := []record.Tick{{T: 1, Sent: 1000, Warmup: true}, {T: 2, Sent: 3000}}
	for _, tc := range []struct {
		name                 string
		before, after        kernelEntries
		wantFaults, wantSwit float64
	}{
		// 2 000 faults and 8 000 switches over 4 000 sends.
		{"counted", kernelEntries{100, 50}, kernelEntries{2100, 8050}, 0.5, 2},
		// getrusage failed after (zero): no figure, not a negative one.
		{"no reading after", kernelEntries{100, 50}, kernelEntries{}, 0, 0},
		// It failed before: no figure, not the process's whole life's.
		{"no reading before", kernelEntries{}, kernelEntries{2100, 8050}, 0, 0},
	} {
		f, s := tc.after.perSend(tc.before, tl)
		if f != tc.wantFaults || s != tc.wantSwit {
			t.Errorf("%s: %v faults, %v switches a send; want %v, %v", tc.name, f, s, tc.wantFaults, tc.wantSwit)
		}
	}
	if got := perSent(1, 11, nil); got != 0 {
		t.Errorf("no sends: %v a send, want 0", got)
	}
}

// TestTrialAt: the CPU budget reads the pipeline's last trial at the rate
// that kept pace, never a failed try of the same rate.
func TestTrialAt(t *testing.T) {
	trials := []outcome{
		{Rate: 1000, KeptPace: true, CPUPerSend: 1},
		{Rate: 2000, KeptPace: false, CPUPerSend: 2},
		{Rate: 2000, KeptPace: true, CPUPerSend: 3},
		{Rate: 2000, KeptPace: false, CPUPerSend: 4},
	}
	for _, tc := range []struct {
		name string
		rate float64
		want float64 // CPUPerSend of the trial found; 0 = none
	}{
		{"the only trial at the rate", 1000, 1},
		{"the one that kept pace, not the failed retries around it", 2000, 3},
		{"no trial at the rate", 1500, 0},
	} {
		got := 0.0
		if o := trialAt(trials, tc.rate); o != nil {
			got = o.CPUPerSend
		}
		if got != tc.want {
			t.Errorf("%s: trial with CPU %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSameRateCeiling: the combined ceiling priced at the pipeline's own
// rate, and where each send's share of the machine went there.
func TestSameRateCeiling(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       cpuBudget
		want    float64 // sends/s; 0 = none
		inNotes string
	}{
		// 2 cores; a signature 300 µs, the presigned flood's process 140
		// and the sink 60 at the same rate: 2e6/500 = 4 000/s; the
		// pipeline at 3 000/s is 0.75 × it, and of its 666.7 µs the
		// process took 480, the sink 100, idle 20: 66.7 are the rest.
		{"measured", cpuBudget{Cores: 2, Rate: 3000, Pipeline: 480, Send: 140, Sign: 300, PipelineSink: 100, SendSink: 60, PipelineIdle: 20, SendIdle: 400},
			4000, "the rest (other processes, interrupts) 66.7; the presigned flood's to its process 140.0, the sink 60.0, idle 400.0; at these same-rate costs the combined ceiling is 4 000/s (2 × 10⁶ ÷ (signature + presigned process + sink)), the pipeline 0.75 × it"},
		// The trial was timed: its span (700 µs of the cores a send, the
		// trial having run past its sends' last intended time) is what
		// the parts share, not 2 × 10⁶ ÷ 3 000.
		{"timed span", cpuBudget{Cores: 2, Rate: 3000, Pipeline: 480, Send: 140, Sign: 300, PipelineSink: 100, SendSink: 60, PipelineIdle: 20, SendIdle: 400, PipelineCores: 700},
			4000, "of the 700.0 µs of all cores a send had at that rate, the pipeline's went to its process 480.0, the null sink 100.0, idle 20.0, the rest (other processes, interrupts) 100.0; the presigned flood's to its process 140.0, the sink 60.0, idle 400.0; at these same-rate costs the combined ceiling is 4 000/s (2 × 10⁶ ÷ (signature + presigned process + sink)), the pipeline 0.75 × it"},
		// The sink's CPU was not read (not Linux): no same-rate ceiling,
		// and the notes stop at the process's own budget.
		{"no sink reading", cpuBudget{Cores: 2, Rate: 3000, Pipeline: 480, Send: 140, Sign: 300}, 0, "the rest 40.0 µs"},
		// The kernel entries were counted and the machine's costs
		// measured: the pipeline's 0.9 faults a send at 10 µs each are
		// 9 µs of its CPU.
		{"kernel entries priced", cpuBudget{Cores: 2, Rate: 3000, Pipeline: 480, Send: 140, Sign: 300,
			PipelineFaults: 0.9, PipelineSwitches: 4.1, SendFaults: 0.2, SendSwitches: 2, Kernel: kernelCosts{Fault: 10, Syscall: 1, Wake: 12}},
			0, "the rest 40.0 µs; its kernel entries per send: the pipeline 0.90 page faults and 4.10 context switches, the presigned flood at the same rate 0.20 and 2.00 (here a page fault 10.0 µs, a system call 1.0 µs, a thread woken through a pipe 12.0 µs: the pipeline's faults 9.0 µs of its 480.0 a send)"},
		// The sink's switches were read too: they stand beside the flood's.
		{"the sink's switches", cpuBudget{Cores: 2, Rate: 3000, Pipeline: 480, Send: 140, Sign: 300, PipelineFaults: 0.9, PipelineSwitches: 4.1,
			SendFaults: 0.2, SendSwitches: 2, PipelineSinkSwitches: 3.5, SendSinkSwitches: 2.5},
			0, "the presigned flood at the same rate 0.20 and 2.00, the sink's context switches 3.50 beside the pipeline and 2.50 beside the presigned flood"},
		// Only the fault's cost was measured: the faults are still priced.
		{"faults priced alone", cpuBudget{Cores: 2, Rate: 3000, Pipeline: 480, Send: 140, Sign: 300, PipelineFaults: 0.5, Kernel: kernelCosts{Fault: 10}},
			0, "(here a page fault 10.0 µs: the pipeline's faults 5.0 µs of its 480.0 a send)"},
		// Counted, but the machine's costs were not measured: counts only.
		{"kernel entries unpriced", cpuBudget{Cores: 2, Rate: 3000, Pipeline: 480, Send: 140, Sign: 300, PipelineFaults: 0.9, PipelineSwitches: 4.1},
			0, "the presigned flood at the same rate 0.00 and 0.00"},
	} {
		if got := tc.b.SameRateCeiling(); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: SameRateCeiling = %v, want %v", tc.name, got, tc.want)
		}
		s := tc.b.String()
		if !strings.HasSuffix(s, tc.inNotes) {
			t.Errorf("%s: String() = %q, want it to end %q", tc.name, s, tc.inNotes)
		}
	}
}

// TestHeldToJudgesTheDefaultClientOnly: the speed targets are the shipped
// client's; any other client's row is a reference, shown, never judged.
func TestHeldToJudgesTheDefaultClientOnly(t *testing.T) {
	tests := []struct {
		name    string
		client  flood.Client
		ok      bool
		wantMet *bool
		wantRef bool
	}{
		// The default client meeting its target is met.
		{"default client, target met", flood.DefaultClient, true, met(true), false},
		// The default client missing it is not met.
		{"default client, target missed", flood.DefaultClient, false, met(false), false},
		// net/http is a reference whatever its ratio: no goal either way.
		{"nethttp above the target", flood.ClientNetHTTP, true, nil, true},
		{"nethttp below the target", flood.ClientNetHTTP, false, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, held := heldTo(tt.client, "≥ 0.7 × wrk")
			got := judged(held, tt.ok)
			switch {
			case (got == nil) != (tt.wantMet == nil):
				t.Fatalf("Met = %v, want %v", got, tt.wantMet)
			case got != nil && *got != *tt.wantMet:
				t.Fatalf("Met = %v, want %v", *got, *tt.wantMet)
			}
			if ref := strings.HasPrefix(target, "reference"); ref != tt.wantRef {
				t.Fatalf("target %q: reference %v, want %v", target, ref, tt.wantRef)
			}
			if !strings.Contains(target, "≥ 0.7 × wrk") {
				t.Fatalf("target %q does not name the target it stands beside", target)
			}
		})
	}
}
