package e2e

import (
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// deliveryPolicy is the Fedify SUT's outbound queue as it was configured
// (GET /ctl/delivery): the numbers the observed schedule is held to.
type deliveryPolicy struct {
	Workers   int `json:"workers"`
	TimeoutMs int `json:"timeoutMs"`
	Policy    struct {
		InitialDelayMs float64 `json:"initialDelayMs"`
		Factor         float64 `json:"factor"`
		MaxAttempts    int     `json:"maxAttempts"`
		MaxDelayMs     float64 `json:"maxDelayMs"`
	} `json:"policy"`
}

// retryWindow is the wait Fedify's exponential backoff makes after the
// failure of attempt k (from 0): initial·factor^k × (1 + U[0, 1)), capped
// at the maximum delay.
func (p deliveryPolicy) retryWindow(k int) (lo, hi time.Duration) {
	base := p.Policy.InitialDelayMs * math.Pow(p.Policy.Factor, float64(k))
	ms := func(v float64) time.Duration {
		return time.Duration(math.Min(v, p.Policy.MaxDelayMs) * float64(time.Millisecond))
	}
	return ms(base), ms(2 * base)
}

// sutAttempt is one delivery attempt in the SUT's own log (GET /delivery).
type sutAttempt struct {
	Activity, Inbox, StartedAt, EndedAt, Error string
	Attempt, Status                            int
}

// weatherRun is a `crowd run` of one posting persona on a crowd of
// origins, each followed by one crowd actor, against a Fedify SUT with
// peerArgs, under the weather timeline given as --weather-at values; it
// returns the record, the SUT's configured delivery policy and its own log
// of the attempts it made.
func weatherRun(t *testing.T, origins int, peerArgs []string, seconds, postEvery string, at ...string) (*record.Record, deliveryPolicy, []sutAttempt) {
	t.Helper()
	// One actor an origin, each following the persona: the SUT has every
	// crowd actor's key from the set-up, so in the weather it has no key
	// to fetch, and a refused connection or lookup is a delivery attempt
	// (the crowd cannot tell a document fetch from a delivery before a
	// request is read).
	f := startFederationServing(t, 1, []string{"--origins", fmt.Sprint(origins), "--actors", "1"}, peerArgs...)
	var policy deliveryPolicy
	f.call(t, "GET", fedifyCtl+"/delivery", nil, &policy)
	out := t.TempDir()
	args := []string{"--rate", "2", "--seconds", seconds, "--mix", "create=1", "--timeout", "60s",
		"--count", "1", "--sut-host", "sut.test", "--tokens-file", f.tokensFile(t),
		"--follows", "2", "--followers", fmt.Sprint(origins), "--post-every", postEvery, "--probe-hz", "1",
		"--setup-timeout", "90s", "--drain-timeout", "10s", "--label", "weather"}
	for _, a := range at {
		args = append(args, "--weather-at", a)
	}
	output, err := f.crowdRun(t, out, args...)
	t.Logf("crowd run:\n%s", tail(output, 40))
	attempts := sutAttempts(t, f)
	if err != nil {
		t.Fatalf("crowd run: %v", err)
	}
	paths, _ := filepath.Glob(filepath.Join(out, "*-weather.json"))
	if len(paths) != 1 {
		t.Fatalf("want one record in %s, got %v", out, paths)
	}
	rec, err := record.LoadRecord(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if rec.Deliveries == nil {
		t.Fatalf("the record has no deliveries section")
	}
	return rec, policy, attempts
}

// sutAttempts is the SUT's own log of its delivery attempts, logged when
// the test is verbose or already failed.
func sutAttempts(t *testing.T, f *federation) []sutAttempt {
	t.Helper()
	var log struct {
		Attempts []sutAttempt `json:"attempts"`
	}
	f.call(t, "GET", fedifyCtl+"/delivery", nil, &log)
	if testing.Verbose() || t.Failed() {
		var b strings.Builder
		for _, a := range log.Attempts {
			fmt.Fprintf(&b, "%s → %s %s #%d %d %s %s\n", a.StartedAt, a.EndedAt, a.Inbox, a.Attempt, a.Status, a.Error, a.Activity)
		}
		t.Logf("the SUT's %d delivery attempts:\n%s", len(log.Attempts), b.String())
	}
	return log.Attempts
}

// madeTo counts the attempts of the SUT's log that carried the post's
// activity (Fedify names a Create by its note's id + "/activity") to an
// inbox at host.
func madeTo(log []sutAttempt, post, host string) int {
	n := 0
	for _, a := range log {
		if u, err := url.Parse(a.Inbox); err == nil && u.Hostname() == host && a.Activity == post+"/activity" {
			n++
		}
	}
	return n
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// originOf is the record's account of host.
func originOf(t *testing.T, d *record.Deliveries, host string) record.OriginDeliveries {
	t.Helper()
	for _, o := range d.Origins {
		if o.Host == host {
			return o
		}
	}
	t.Fatalf("no account of %s in %+v", host, d.Origins)
	return record.OriginDeliveries{}
}

// TestWeatherDeliveriesRealFedify runs a real Fedify SUT's outbound queue
// (4 workers, a 1 s delivery timeout, exponential backoff from 200 ms,
// 4 retries) through every kind of bad weather, one origin each, the rest
// clear, with an outage of a tenth origin from +2 s to +7 s. The
// record's observed retry schedule is held to the policy Fedify says it
// was given: every origin that failed throughout got maxAttempts + 1
// attempts of the first post (of the second, where a lapsed domain's or a
// bad certificate's first went over a connection kept from before the
// weather), each wait within the policy's jitter window
// (plus the timeout for the attempts that had to time out); the slow
// origin took it on the first attempt; every clear origin got every post;
// the outage origin got its backlog after it came back, and the record
// says when. It runs alone: its windows (the slow origin's 300 ms under a
// 1 s timeout, 1.5 s of slack on each wait, the recovery dated within a
// second) would read a busy machine as Fedify's own lateness.
func TestWeatherDeliveriesRealFedify(t *testing.T) {
	failing := []struct {
		host, condition string
		timesOut        bool // the SUT's own timeout ends each attempt
		belowHTTP       bool // acts on new lookups and handshakes only
	}{
		{"flood1.test", "down", false, false},
		{"flood2.test", "blackhole", true, false},
		{"flood4.test", "flaky:1", false, false},
		{"flood5.test", "limited:5s", false, false},
		{"flood6.test", "gone", false, false},
		{"flood7.test", "nxdomain", false, true},
		{"flood8.test", "tls-expired", false, true},
	}
	var during []string
	for _, f := range failing {
		kind, param, _ := strings.Cut(f.condition, ":")
		rule := kind + "=" + f.host
		if param != "" {
			rule += ":" + param
		}
		during = append(during, rule)
	}
	during = append(during, "slow=flood3.test:300ms")
	spec := strings.Join(during, ",")
	// Posts at +5 s and +15 s; the first one's last retry comes by +21 s
	// at most, before the run ends and puts the clear weather back (the
	// second's, where it is judged, fail at once: by +19 s).
	rec, policy, sutLog := weatherRun(t, 12, []string{"--delivery-workers", "4", "--delivery-timeout-ms", "1000",
		"--retry-initial-ms", "200", "--retry-factor", "2", "--retry-max-attempts", "4"},
		"25", "10s", "+2s "+spec+",down=flood9.test", "+7s "+spec)
	d := rec.Deliveries
	t.Logf("deliveries:\n%s", strings.Join(d.Lines(), "\n"))
	if policy.Workers != 4 || policy.TimeoutMs != 1000 || policy.Policy.MaxAttempts != 4 {
		t.Fatalf("the SUT's delivery set-up %+v is not the one asked", policy)
	}
	timeout := time.Duration(policy.TimeoutMs) * time.Millisecond
	// Slack over the policy's window: the queue's and the event loop's
	// delays on a loaded machine. None is allowed under it.
	const slack = 1500 * time.Millisecond
	for _, f := range failing {
		t.Run(f.condition, func(t *testing.T) {
			o := originOf(t, d, f.host)
			if len(o.Activities) == 0 {
				t.Fatalf("%s: no activity owed: %+v", f.host, o)
			}
			first := o.Activities[0]
			// A lapsed domain or a bad certificate meets a new lookup or
			// handshake: a connection the SUT kept alive from before the
			// weather (undici keeps one about 4 s) still carries a post,
			// answered as usual, as the origin's server would. The next
			// post, ten seconds on, needs a new one.
			if f.belowHTTP && len(o.Activities) > 1 && first.Outcome == record.OutcomeDelivered &&
				len(first.Attempts) == 1 && first.Attempts[0].Weather == "" {
				t.Logf("%s: the first post went over a connection kept from before the weather; judging the second", f.host)
				first = o.Activities[1]
			}
			if first.Outcome != record.OutcomeUndelivered || len(first.Attempts) != policy.Policy.MaxAttempts+1 {
				t.Errorf("%s: first post %s after %d attempts, want undelivered after maxAttempts + 1 = %d: %+v",
					f.host, first.Outcome, len(first.Attempts), policy.Policy.MaxAttempts+1, first)
			}
			// The SUT's own log is the judge of what the crowd counted.
			if made := madeTo(sutLog, first.ID, f.host); made != len(first.Attempts) {
				t.Errorf("%s: the crowd counted %d attempts of the first post, the SUT logged %d", f.host, len(first.Attempts), made)
			}
			for _, a := range o.Activities {
				for k, s := range a.IntervalsS {
					lo, hi := policy.retryWindow(k)
					if f.timesOut {
						lo, hi = lo+timeout-200*time.Millisecond, hi+timeout
					}
					got := time.Duration(s * float64(time.Second))
					if got < lo-5*time.Millisecond || got > hi+slack {
						t.Errorf("%s: %s: wait %d was %v, the policy allows [%v, %v) (+%v slack)", f.host, a.ID, k+1, got, lo, hi, slack)
					}
				}
			}
		})
	}
	// The limited origin's Retry-After (5 s) is longer than every wait of
	// the policy's: Fedify, which does not read it, came early.
	if o := originOf(t, d, "flood5.test"); o.EarlyRetries < 3 {
		t.Errorf("flood5.test: %d retries before the Retry-After, want at least 3 (the policy's waits are all under 5 s)", o.EarlyRetries)
	}
	// The lapsed domain's lookups are counted: at least one an attempt.
	if o := originOf(t, d, "flood7.test"); o.Lookups < int64(o.Attempts) {
		t.Errorf("flood7.test (nxdomain): %d lookups answered NXDOMAIN for %d attempts, want at least one each", o.Lookups, o.Attempts)
	}
	// A slow origin within the SUT's timeout takes each post at once.
	slow := originOf(t, d, "flood3.test")
	if slow.Undelivered != 0 || slow.Delivered == 0 {
		t.Errorf("flood3.test (slow 300 ms): %+v: want every post delivered", slow)
	}
	for _, a := range slow.Activities {
		if a.DeliveredOn != 1 || !strings.HasPrefix(a.Attempts[0].Weather, "slow:300ms") {
			t.Errorf("flood3.test (slow 300 ms): %+v: want it delivered on the first attempt, in the slow weather", a)
		}
	}
	// The outage: down from +2 s to +7 s, its backlog delivered after.
	out := originOf(t, d, "flood9.test")
	// The recovery is dated when the crowd had the change in force: at +7 s
	// or a little after.
	if len(out.Recoveries) != 1 || out.Recoveries[0].AtS < 7 || out.Recoveries[0].AtS > 8 || out.DeliveredAfterRecovery == 0 ||
		out.Recoveries[0].Backlog != out.DeliveredAfterRecovery {
		t.Errorf("flood9.test (outage): %+v: want its backlog delivered after it came back at +7 s", out)
	} else if a := out.Activities[0]; a.Outcome != record.OutcomeAfterRecovery || a.AfterRecoveryS <= 0 || len(a.Attempts) < 2 {
		t.Errorf("flood9.test's first post %+v: want refused during the outage, then delivered after it, with when", a)
	}
	// Every post reached every clear origin.
	if h := d.Healthy; h.Expected == 0 || h.Reached != h.Expected {
		t.Errorf("healthy origins: %d of %d deliveries arrived, want all", h.Reached, h.Expected)
	}
}

// TestWeatherIsolationRealFedify gives the same Fedify SUT two queue
// set-ups whose difference is known, and the same black hole from +10 s:
// with one delivery worker each post's attempts at the black hole hold
// the queue for the timeout, so deliveries to the healthy origins wait
// behind them (head-of-line blocking); with sixteen they do not. The
// isolation verdicts must say so.
func TestWeatherIsolationRealFedify(t *testing.T) {
	t.Parallel()
	var verdicts [2]record.Isolation // one worker, sixteen
	t.Run("runs", func(t *testing.T) {
		for i, workers := range []int{1, 16} {
			t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
				t.Parallel()
				rec, _, _ := weatherRun(t, 8, []string{"--delivery-workers", fmt.Sprint(workers), "--delivery-timeout-ms", "1000",
					"--retry-initial-ms", "200", "--retry-max-attempts", "3"}, "24", "2s", "+10s blackhole=flood2.test")
				t.Logf("deliveries:\n%s", strings.Join(rec.Deliveries.Lines(), "\n"))
				verdicts[i] = rec.Deliveries.Isolation // each run its own element
			})
		}
	})
	if t.Failed() {
		return
	}
	one, many := verdicts[0], verdicts[1]
	if one.Verdict != record.VerdictBlocking {
		t.Errorf("one worker: %+v: want head-of-line blocking", one)
	}
	if many.Verdict != record.VerdictIsolated {
		t.Errorf("sixteen workers: %+v: want isolated", many)
	}
	// The flood's own answers, compared phase to phase beside the verdict.
	if one.SUTSlowdown == 0 || many.SUTSlowdown == 0 {
		t.Errorf("the SUT's answers were not compared: slowdown %g with one worker, %g with sixteen", one.SUTSlowdown, many.SUTSlowdown)
	}
	if one.WeatherP95US <= many.WeatherP95US {
		t.Errorf("healthy p95 under the weather: %d µs with one worker, %d µs with sixteen: want more with one", one.WeatherP95US, many.WeatherP95US)
	}
}
