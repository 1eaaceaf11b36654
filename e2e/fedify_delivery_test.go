package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fedifyDelivery is what the Fedify peer's GET /delivery answers.
type fedifyDelivery struct {
	Workers   int `json:"workers"`
	TimeoutMs int `json:"timeoutMs"`
	Policy    struct {
		InitialDelayMs int     `json:"initialDelayMs"`
		Factor         float64 `json:"factor"`
		MaxAttempts    int     `json:"maxAttempts"`
		MaxDelayMs     int     `json:"maxDelayMs"`
		Jitter         bool    `json:"jitter"`
	} `json:"policy"`
	Attempts []deliveryAttempt `json:"attempts"`
}

// deliveryAttempt is one outbound delivery POST the peer made.
type deliveryAttempt struct {
	Activity  string  `json:"activity"`
	Inbox     string  `json:"inbox"`
	Attempt   int     `json:"attempt"`
	StartedAt string  `json:"startedAt"`
	EndedAt   *string `json:"endedAt"`
	Status    *int    `json:"status"`
	Error     *string `json:"error"`
}

// TestFedifyPeerRefusesBadDeliveryFlags: a bad delivery or retry value
// stops the peer before it reads its certificate or listens, with exit
// status 2 and a message naming the flag, so it needs no namespace.
func TestFedifyPeerRefusesBadDeliveryFlags(t *testing.T) {
	t.Parallel()
	peer := filepath.Join(NodePeers(t), "fedify-peer.mjs")
	for _, c := range []struct {
		args []string
		env  string
		flag string
	}{
		// Not a number at all.
		{args: []string{"--retry-factor", "nope"}, flag: "--retry-factor"},
		// A factor below 1 would shrink each wait: not a backoff.
		{args: []string{"--retry-factor", "0.5"}, flag: "--retry-factor"},
		// No worker would ever deliver.
		{args: []string{"--delivery-workers", "0"}, flag: "--delivery-workers"},
		// Digits only: Number("1e3") would quietly read 1000.
		{args: []string{"--retry-initial-ms", "1e3"}, flag: "--retry-initial-ms"},
		// A negative timeout is no timeout the flag can mean.
		{args: []string{"--delivery-timeout-ms=-1"}, flag: "--delivery-timeout-ms"},
		// An empty value is refused, not read as 0.
		{args: []string{"--retry-max-attempts", ""}, flag: "--retry-max-attempts"},
		// The same check holds for a flag given in the environment.
		{env: "PEER_RETRY_MAX_DELAY_MS=soon", flag: "--retry-max-delay-ms"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, "node", append([]string{peer}, c.args...)...)
		if c.env != "" {
			cmd.Env = append(cmd.Environ(), c.env)
		}
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "fedify-peer: "+c.flag+":") {
			t.Errorf("%v %s: %v, want exit status 2 and a message naming %s:\n%s", c.args, c.env, err, c.flag, out)
		}
	}
}

// TestFedifyDeliveryQueue: the peer's GET /delivery reports the queue its
// flags set up, and logs every delivery attempt: the Accepts of the
// crowd's Follows, then a post's Create to followers on origins in bad
// weather, retried on Fedify's schedule (never sooner than the policy's
// base wait, attempts 0..maxAttempts) and then given up.
func TestFedifyDeliveryQueue(t *testing.T) {
	t.Parallel()
	f := startFederationWith(t, 2, "--delivery-workers", "4", "--retry-initial-ms", "200", "--retry-factor", "1.5",
		"--retry-max-attempts", "3", "--retry-max-delay-ms", "1000", "--delivery-timeout-ms", "1500")
	var d fedifyDelivery
	f.call(t, "GET", fedifyCtl+"/delivery", nil, &d)
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"--delivery-workers", d.Workers, 4},
		{"--delivery-timeout-ms", d.TimeoutMs, 1500},
		{"--retry-initial-ms", d.Policy.InitialDelayMs, 200},
		{"--retry-factor", d.Policy.Factor, 1.5},
		{"--retry-max-attempts", d.Policy.MaxAttempts, 3},
		{"--retry-max-delay-ms", d.Policy.MaxDelayMs, 1000},
		// Fedify's policy always adds jitter; the report says so.
		{"jitter", d.Policy.Jitter, true},
	} {
		if c.got != c.want {
			t.Errorf("GET /delivery %s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// Three crowd actors follow load1; each Follow's Accept is a delivery.
	followers := map[string]string{"flood2.test": "bob", "flood3.test": "carol", "flood4.test": "frank"}
	for host, user := range followers {
		out := f.ns.Run(t, BuildCrowd(t), "send", "--admin", "127.0.0.1:9180", "--from", user+"@"+host,
			"--type", "Follow", "--to", "acct:load1@sut.test")
		if !strings.Contains(out, "202") {
			t.Fatalf("crowd send Follow from %s@%s: %s", user, host, out)
		}
	}
	eventually(t, 30*time.Second, "an Accept delivered to each follower", func() bool {
		accepted := map[string]bool{}
		for _, a := range attemptsWhere(t, f, func(a deliveryAttempt) bool { return strings.Contains(a.Activity, "/accepts/") }) {
			accepted[inboxHost(a.Inbox)] = a.Status != nil && *a.Status == 202
		}
		return len(accepted) == len(followers) && accepted["flood2.test"] && accepted["flood3.test"] && accepted["flood4.test"]
	})
	for _, a := range attemptsWhere(t, f, func(deliveryAttempt) bool { return true }) {
		if a.Attempt != 0 || a.Status == nil || *a.Status != 202 || a.Error != nil || a.EndedAt == nil {
			t.Errorf("a delivery to a healthy follower: %+v, want attempt 0 answered 202", a)
		}
	}

	f.ns.Run(t, BuildCrowd(t), "weather", "set", "gone=flood2.test,down=flood3.test,blackhole=flood4.test", "--admin", "127.0.0.1:9180")
	create := postAs(t, f, "load1", "into the storm") + "/activity"
	maxAttempts := d.Policy.MaxAttempts
	toHost := func(host string) func(deliveryAttempt) bool {
		return func(a deliveryAttempt) bool { return a.Activity == create && inboxHost(a.Inbox) == host }
	}
	for host := range followers {
		eventually(t, 60*time.Second, "the Create's last attempt to "+host+" over", func() bool {
			got := attemptsWhere(t, f, toHost(host))
			return len(got) > maxAttempts || len(got) == maxAttempts+1 && got[maxAttempts].EndedAt != nil
		})
	}
	// Given up after the last: no attempt more, however long the longest wait.
	time.Sleep(2*time.Duration(d.Policy.MaxDelayMs)*time.Millisecond + 500*time.Millisecond)
	// The workers: a black hole holds one for the whole timeout while the others go on, and
	// never more than --delivery-workers are in flight.
	if n := mostInFlight(t, attemptsWhere(t, f, func(a deliveryAttempt) bool { return a.Activity == create })); n < 2 || n > d.Workers {
		t.Errorf("at most %d of the Create's attempts in flight at once, want 2 to %d (the workers)", n, d.Workers)
	}
	for _, c := range []struct {
		host     string
		status   int    // the answer every attempt gets, 0 for none
		errorHas string // what a failed fetch says, "" for none
	}{
		// gone answers 410; Fedify retries it like any failure.
		{"flood2.test", 410, ""},
		// down resets the connection: no status, fetch's error.
		{"flood3.test", 0, "fetch failed"},
		// A black hole never answers: only --delivery-timeout-ms ends each attempt.
		{"flood4.test", 0, "timeout"},
	} {
		got := attemptsWhere(t, f, toHost(c.host))
		if len(got) != maxAttempts+1 {
			t.Errorf("%s: %d attempts of the Create, want %d (maxAttempts + 1): %+v", c.host, len(got), maxAttempts+1, got)
			continue
		}
		base := float64(d.Policy.InitialDelayMs)
		for k, a := range got {
			if a.Attempt != k || a.EndedAt == nil {
				t.Errorf("%s: attempt %d is %+v, want attempt number %d, ended", c.host, k, a, k)
				continue
			}
			if c.status != 0 && (a.Status == nil || *a.Status != c.status) || c.status == 0 && a.Status != nil {
				t.Errorf("%s: attempt %d status %v, want %d (0: none)", c.host, k, a.Status, c.status)
			}
			if c.errorHas == "" && a.Error != nil || c.errorHas != "" && (a.Error == nil || !strings.Contains(strings.ToLower(*a.Error), c.errorHas)) {
				t.Errorf("%s: attempt %d error %v, want one saying %q", c.host, k, a.Error, c.errorHas)
			}
			if k > 0 {
				// The wait after attempt k-1 is at least initialDelay·factor^(k-1), capped; timestamps have ms.
				want := min(base*math.Pow(d.Policy.Factor, float64(k-1)), float64(d.Policy.MaxDelayMs))
				if gap := msBetween(t, *got[k-1].EndedAt, a.StartedAt); gap < want-2 {
					t.Errorf("%s: attempt %d started %.0f ms after attempt %d ended, want at least %.0f", c.host, k, gap, k-1, want)
				}
			}
		}
	}
}

// attemptsWhere returns the peer's logged delivery attempts that keep holds for, oldest first.
func attemptsWhere(t *testing.T, f *federation, keep func(deliveryAttempt) bool) []deliveryAttempt {
	t.Helper()
	var d fedifyDelivery
	f.call(t, "GET", fedifyCtl+"/delivery", nil, &d)
	var out []deliveryAttempt
	for _, a := range d.Attempts {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out
}

// postAs posts a public status as persona through the peer's client API
// (its token is "token-" + persona) and returns the note's id.
func postAs(t *testing.T, f *federation, persona, text string) string {
	t.Helper()
	form := url.Values{"status": {text}, "visibility": {"public"}}
	req, _ := http.NewRequest("POST", "https://sut.test/api/v1/statuses", strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer token-"+persona)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := f.web.Do(req)
	if err != nil {
		t.Fatalf("POST /api/v1/statuses as %s: %v", persona, err)
	}
	defer resp.Body.Close()
	var status struct {
		URI string `json:"uri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil || resp.StatusCode != 200 || status.URI == "" {
		t.Fatalf("POST /api/v1/statuses as %s: %d %v %+v", persona, resp.StatusCode, err, status)
	}
	return status.URI
}

// inboxHost is the host of an inbox URL, "" when it is not one.
func inboxHost(inbox string) string {
	u, err := url.Parse(inbox)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// msBetween is the time from one ISO 8601 timestamp to another, in ms.
func msBetween(t *testing.T, from, to string) float64 {
	t.Helper()
	a, err1 := time.Parse(time.RFC3339Nano, from)
	b, err2 := time.Parse(time.RFC3339Nano, to)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("timestamps %q, %q: %v", from, to, err)
	}
	return float64(b.Sub(a)) / float64(time.Millisecond)
}

// mostInFlight is the most attempts in flight at once. The most overlap
// at the start of one of them, so it counts, at each start, the attempts
// started by then and not yet ended (one ending the millisecond another
// starts does not overlap it).
func mostInFlight(t *testing.T, attempts []deliveryAttempt) int {
	t.Helper()
	type span struct{ start, end time.Time }
	spans := make([]span, len(attempts))
	for i, a := range attempts {
		if a.EndedAt == nil {
			t.Fatalf("attempt still in flight: %+v", a)
		}
		start, err1 := time.Parse(time.RFC3339Nano, a.StartedAt)
		end, err2 := time.Parse(time.RFC3339Nano, *a.EndedAt)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("attempt %+v: %v", a, err)
		}
		spans[i] = span{start, end}
	}
	most := 0
	for _, at := range spans {
		n := 0
		for _, s := range spans {
			if !s.start.After(at.start) && s.end.After(at.start) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}
