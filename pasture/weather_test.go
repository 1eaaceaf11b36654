package pasture

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/pasture/weather"
)

// weatherCrowd is a pasture with the crowd's inbox behind a real listener, in the weather
// spec over its two origins (flood1.test, flood2.test).
type weatherCrowd struct {
	p        *Pasture
	in       *inbox.Inbox
	srv      *httptest.Server
	hijacked chan struct{} // a connection was hijacked (a black hole took it)
}

func startWeather(t *testing.T, spec string) *weatherCrowd {
	t.Helper()
	world := testWorld(t)
	in, err := inbox.New(inbox.Config{World: world, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Shutdown(context.Background()) })
	s, err := weather.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	wc := &weatherCrowd{p: testPasture(t, Config{World: world, Inbox: in, Weather: s}), in: in, hijacked: make(chan struct{}, 16)}
	wc.srv = httptest.NewUnstartedServer(wc.p.Handler())
	wc.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateHijacked {
			wc.hijacked <- struct{}{}
		}
	}
	wc.srv.Start()
	t.Cleanup(wc.srv.Close)
	return wc
}

// set puts spec in force.
func (wc *weatherCrowd) set(t *testing.T, spec string) {
	t.Helper()
	setWeather(t, wc.p, spec)
}

// setWeather puts spec, as `--weather` takes it, in force over p.
func setWeather(t *testing.T, p *Pasture, spec string) {
	t.Helper()
	s, err := weather.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetWeather(s); err != nil {
		t.Fatal(err)
	}
}

// like is an activity for an inbox, its id named so the log can be searched for it.
func like(id string) string {
	return `{"id":"https://sut.test/likes/` + id + `","type":"Like","actor":"https://sut.test/users/a","object":"https://flood1.test/users/alice"}`
}

// do sends method path to host through the listener with a fresh connection and client timeout.
func (wc *weatherCrowd) do(method, host, path, body string, timeout time.Duration) (*http.Response, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, wc.srv.URL+path, rd)
	req.Host = host
	req.Header.Set("Accept", "application/activity+json")
	if body != "" {
		req.Header.Set("Content-Type", "application/activity+json")
	}
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// logged waits for the activity log's line of the activity id, failing after 10 s.
func (wc *weatherCrowd) logged(t *testing.T, id string) inbox.Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range wc.in.Log().Latest(0, inbox.Filter{}) {
			if e.ID == "https://sut.test/likes/"+id {
				return e
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no log line for %s within 10 s", id)
	return inbox.Entry{}
}

// TestWeatherOnTheHTTPPath: each condition as a client sees it over a real connection, for a
// document and for a delivery, and the activity log's line of each delivery the weather
// answered; the other origin, in clear weather, answers as usual throughout.
func TestWeatherOnTheHTTPPath(t *testing.T) {
	wc := startWeather(t, "")
	for _, c := range []struct {
		name, spec, method, path string
		// check judges what the client got.
		check func(t *testing.T, resp *http.Response, body string, err error)
		// status and weather are the log line's, for a delivery ("": not logged by weather).
		status  int
		weather string
	}{
		// down: the connection is reset, no answer, for a fetch and for a delivery alike.
		{"down document", "down=flood1.test", "GET", "/users/alice", wantReset, 0, ""},
		{"down delivery", "down=flood1.test", "POST", "/inbox", wantReset, 0, "down"},
		// blackhole: nothing ever comes; the client's own timeout ends it.
		{"blackhole document", "blackhole=flood1.test", "GET", "/users/alice", wantTimeout, 0, ""},
		{"blackhole delivery", "blackhole=flood1.test", "POST", "/users/alice/inbox", wantTimeout, 0, "blackhole"},
		// flaky with P = 1: every answer a proxy's 5xx page.
		{"flaky document", "flaky=flood1.test:1", "GET", "/users/alice", want5xx, 0, ""},
		{"flaky delivery", "flaky=flood1.test:1", "POST", "/inbox", want5xx, -1, "flaky:1"},
		// limited: 429 with Retry-After and Mastodon's X-RateLimit-*.
		{"limited delivery", "limited=flood1.test:120s", "POST", "/inbox", want429(120), 429, "limited:2m0s"},
		// gone: a Tombstone for a document, plain 410 for an inbox and WebFinger.
		{"gone actor", "gone=flood1.test", "GET", "/users/alice", wantTombstone("https://flood1.test/users/alice"), 0, ""},
		{"gone note", "gone=flood1.test", "GET", "/users/alice/notes/1", wantTombstone("https://flood1.test/users/alice/notes/1"), 0, ""},
		{"gone webfinger", "gone=flood1.test", "GET", "/.well-known/webfinger?resource=acct:alice@flood1.test", wantPlain410, 0, ""},
		{"gone delivery", "gone=flood1.test", "POST", "/inbox", wantPlain410, 410, "gone"},
		// nxdomain and the certificates change nothing on the HTTP path.
		{"nxdomain", "nxdomain=flood1.test", "GET", "/users/alice", wantServed, 0, ""},
		{"tls-expired", "tls-expired=flood1.test", "GET", "/users/alice", wantServed, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			wc.set(t, c.spec)
			id := strings.ReplaceAll(c.name, " ", "-")
			body := ""
			if c.method == "POST" {
				body = like(id)
			}
			// A black hole is judged by the client's own timeout, so that one is short; every
			// other row gets an answer (or a reset), and a loaded machine must not fail it.
			timeout := 30 * time.Second
			if strings.HasPrefix(c.spec, "blackhole") {
				timeout = 500 * time.Millisecond
			}
			resp, got, err := wc.do(c.method, "flood1.test", c.path, body, timeout)
			c.check(t, resp, got, err)
			if c.weather != "" {
				e := wc.logged(t, id)
				if e.Weather != c.weather || e.Type != "Like" || e.Verdict != inbox.VerdictRejected || e.Reason == "" {
					t.Errorf("log line: weather %q type %q verdict %q reason %q; want weather %q, the Like, rejected with a reason",
						e.Weather, e.Type, e.Verdict, e.Reason, c.weather)
				}
				if c.status >= 0 && e.Status != c.status || c.status < 0 && e.Status < 502 {
					t.Errorf("log line: status %d, want %d", e.Status, c.status)
				}
			}
			resp, got, err = wc.do("GET", "flood2.test", "/users/alice", "", 5*time.Second)
			wantServed(t, resp, got, err)
		})
	}
}

func wantReset(t *testing.T, resp *http.Response, _ string, err error) {
	t.Helper()
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("got %v, %v; want a connection reset", resp, err)
	}
}

func wantTimeout(t *testing.T, resp *http.Response, _ string, err error) {
	t.Helper()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("got %v, %v; want the client's timeout", resp, err)
	}
}

func want5xx(t *testing.T, resp *http.Response, body string, err error) {
	t.Helper()
	if err != nil || resp.StatusCode < 502 || resp.StatusCode > 504 || !strings.Contains(body, "<center>nginx</center>") {
		t.Fatalf("got %v %q, %v; want 502, 503 or 504 with nginx's page", resp, body, err)
	}
}

func want429(secs int) func(*testing.T, *http.Response, string, error) {
	return func(t *testing.T, resp *http.Response, body string, err error) {
		t.Helper()
		if err != nil || resp.StatusCode != 429 {
			t.Fatalf("got %v, %v; want 429", resp, err)
		}
		h := resp.Header
		reset, perr := time.Parse(time.RFC3339, h.Get("X-RateLimit-Reset"))
		if h.Get("Retry-After") != strconv.Itoa(secs) || h.Get("X-RateLimit-Remaining") != "0" || h.Get("X-RateLimit-Limit") == "" ||
			perr != nil || reset.Before(time.Now().Add(time.Duration(secs-5)*time.Second)) {
			t.Errorf("headers %v; want Retry-After %d, X-RateLimit-Remaining 0, a limit and a reset %d s ahead", h, secs, secs)
		}
		var e struct{ Error string }
		if json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
			t.Errorf("body %q is not Mastodon's JSON error", body)
		}
	}
}

func wantTombstone(id string) func(*testing.T, *http.Response, string, error) {
	return func(t *testing.T, resp *http.Response, body string, err error) {
		t.Helper()
		var doc struct{ ID, Type string }
		if err != nil || resp.StatusCode != 410 || resp.Header.Get("Content-Type") != "application/activity+json" ||
			json.Unmarshal([]byte(body), &doc) != nil || doc.ID != id || doc.Type != "Tombstone" {
			t.Fatalf("got %v %q, %v; want 410 with the Tombstone of %s", resp, body, err, id)
		}
	}
}

func wantPlain410(t *testing.T, resp *http.Response, body string, err error) {
	t.Helper()
	if err != nil || resp.StatusCode != 410 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("got %v %q, %v; want a plain 410", resp, body, err)
	}
}

func wantServed(t *testing.T, resp *http.Response, body string, err error) {
	t.Helper()
	if err != nil || resp.StatusCode != 200 || !strings.Contains(body, `"type": "Person"`) {
		t.Fatalf("got %v %q, %v; want the actor's document", resp, body, err)
	}
}

// TestSlowWeather: a slow origin answers a delivery no sooner than its delay (the inbox's own
// log line carries the wait), a document at its share, and the other origin at once.
func TestSlowWeather(t *testing.T) {
	const delay = 300 * time.Millisecond
	wc := startWeather(t, "slow=flood1.test:300ms:1")
	var deliverySent time.Time
	for _, c := range []struct {
		name, method, host, path, body string
		slow                           bool
	}{
		// A delivery waits, then the inbox answers it (401: it is unsigned).
		{"delivery", "POST", "flood1.test", "/inbox", like("slow"), true},
		// A document waits too at share 1.
		{"document", "GET", "flood1.test", "/users/alice", "", true},
		// The clear origin is served as usual (no upper bound on its time: on a loaded machine
		// that would judge the machine; the slow ones' lower bound is the claim).
		{"clear origin", "GET", "flood2.test", "/users/alice", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			if c.name == "delivery" {
				deliverySent = start
			}
			resp, _, err := wc.do(c.method, c.host, c.path, c.body, 10*time.Second)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if c.slow && took < delay {
				t.Errorf("answered %d after %s, before the delay of %s", resp.StatusCode, took, delay)
			}
			if !c.slow && resp.StatusCode != http.StatusOK {
				t.Errorf("the clear origin answered %d", resp.StatusCode)
			}
		})
	}
	e := wc.logged(t, "slow")
	// The line is dated at the delivery's arrival, before the wait, not when the inbox took it.
	if e.Time.After(deliverySent.Add(delay)) {
		t.Errorf("the held delivery is logged at %s, %s after it was sent: after its wait began", e.Time, e.Time.Sub(deliverySent))
	}
	if e.Weather != "slow:300ms:1" || e.WeatherHeldMS < float64(delay.Milliseconds()) || e.DurationMS < e.WeatherHeldMS || e.Status != 401 {
		t.Errorf("the inbox's line: weather %q held %vms duration %vms status %d; want slow:300ms:1, held ≥ 300 ms, the inbox's 401",
			e.Weather, e.WeatherHeldMS, e.DurationMS, e.Status)
	}
	// A client that gives up during the wait is noticed (its body was read ahead) and its
	// delivery logged with no answer, long before the minute is out.
	wc.set(t, "slow=flood1.test:1m:1")
	gaveUpSent := time.Now()
	if _, _, err := wc.do("POST", "flood1.test", "/inbox", like("gave-up"), 300*time.Millisecond); err == nil {
		t.Fatal("a minute's wait answered")
	}
	if e := wc.logged(t, "gave-up"); e.Weather != "slow:1m0s:1" || e.Status != 0 || !strings.Contains(e.Reason, "went away") ||
		e.Time.After(gaveUpSent.Add(300*time.Millisecond)) {
		t.Errorf("the given-up delivery's line: weather %q status %d reason %q at +%s; want it dated at its arrival",
			e.Weather, e.Status, e.Reason, e.Time.Sub(gaveUpSent))
	}
	// A slow document share of 0.5: roughly half wait (the draw is per request). The wait is
	// long beside an unheld answer even on a loaded machine, so the time tells them apart.
	const shareDelay = 400 * time.Millisecond
	wc.set(t, "slow=flood1.test:400ms:0.5")
	waited := 0
	const n = 40
	for range n {
		start := time.Now()
		if _, _, err := wc.do("GET", "flood1.test", "/users/alice", "", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) >= shareDelay {
			waited++
		}
	}
	// Binomial(40, 0.5): 4 sigma is ±12.6 around 20.
	if waited < 7 || waited > 33 {
		t.Errorf("%d of %d documents waited at share 0.5", waited, n)
	}
}

// TestFlakyShare: a flaky origin's 5xx share is P within sampling error (2 000 requests,
// P = 0.3: 600 ± 4σ of the binomial), split evenly among 502, 503 and 504.
func TestFlakyShare(t *testing.T) {
	const n, p = 2000, 0.3
	wc := startWeather(t, "flaky=flood1.test:0.3")
	client := wc.srv.Client()
	counts := map[int]int{}
	for range n {
		req, _ := http.NewRequest("GET", wc.srv.URL+"/users/alice", nil)
		req.Host = "flood1.test"
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
	}
	failed := counts[502] + counts[503] + counts[504]
	if failed+counts[200] != n {
		t.Fatalf("answers %v: only 200 and 502-504 expected", counts)
	}
	sigma := math.Sqrt(n * p * (1 - p))
	if math.Abs(float64(failed)-n*p) > 4*sigma {
		t.Errorf("%d of %d failed, want %v ± %.0f", failed, n, n*p, 4*sigma)
	}
	third := float64(failed) / 3
	for _, s := range []int{502, 503, 504} {
		if d := math.Abs(float64(counts[s]) - third); d > 4*math.Sqrt(float64(failed)*2/9) {
			t.Errorf("%d answered %d times of %d failures, want about a third", s, counts[s], failed)
		}
	}
}

// TestWeatherChangesAtRunTime: the weather is set and cleared while requests to the clear
// origin run, and none of them fails; a delivery held by a black hole is let go by the
// change (the client sees the connection end, long before its own timeout) and logged then.
func TestWeatherChangesAtRunTime(t *testing.T) {
	wc := startWeather(t, "")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			client := wc.srv.Client()
			for i := 0; i < 2000; i++ { // bounded, and ended by stop well before
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", wc.srv.URL+"/users/alice", nil)
				req.Host = "flood2.test"
				resp, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = errors.New(resp.Status)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, spec := range []string{"flaky=flood1.test:1", "down=flood1.test", "gone=flood1.test", "", "blackhole=flood1.test"} {
		wc.set(t, spec)
	}
	// Sent once the black hole is in force, so no earlier weather answers it.
	held := make(chan error, 1)
	go func() {
		_, _, err := wc.do("POST", "flood1.test", "/inbox", like("held"), 30*time.Second)
		held <- err
	}()
	select {
	case <-wc.hijacked: // the black hole holds the delivery
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery was not taken by the black hole")
	}
	for _, spec := range []string{"limited=flood1.test", "slow=flood1.test:1s"} {
		wc.set(t, spec)
	}
	err := <-held
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the held delivery ended with %v; want its connection closed by the change", err)
	}
	if e := wc.logged(t, "held"); e.Weather != "blackhole" || e.Status != 0 || !strings.Contains(e.Reason, "the weather changed") {
		t.Errorf("the held delivery's line: weather %q status %d reason %q", e.Weather, e.Status, e.Reason)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a request to the clear origin failed while the weather changed: %v", err)
	}
}

// TestShutdownEndsBlackholes: a pasture shutting down closes the connections its black holes
// hold (net/http's Shutdown leaves hijacked ones alone).
func TestShutdownEndsBlackholes(t *testing.T) {
	wc := startWeather(t, "blackhole=flood1.test")
	held := make(chan error, 1)
	go func() {
		_, _, err := wc.do("GET", "flood1.test", "/users/alice", "", 30*time.Second)
		held <- err
	}()
	select {
	case <-wc.hijacked:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not taken by the black hole")
	}
	if err := wc.p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := <-held
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the held request ended with %v; want its connection closed by the shutdown", err)
	}
}

// TestWeatherAnswersAreCounted: the origins' metrics and the fetch-back windows see what the
// weather answered, with its status: 0 ("none") for a reset, the proxy's 5xx for flaky.
func TestWeatherAnswersAreCounted(t *testing.T) {
	wc := startWeather(t, "down=flood1.test,flaky=flood2.test:1")
	win, err := wc.p.Fetchbacks().Open("weather")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wc.do("GET", "flood1.test", "/users/alice", "", 5*time.Second); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("down answered %v", err)
	}
	// The client sees the reset before the server's handler returns and counts it: wait for the
	// count (bounded) before the window closes.
	scrape := func() string {
		rec := httptest.NewRecorder()
		wc.p.AdminHandler().ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/metrics", nil))
		return rec.Body.String()
	}
	counted := func(origin string) {
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(scrape(), `origin="`+origin+`",route="unmatched"`); {
			if time.Now().After(deadline) {
				t.Fatalf("the answer of %s was never counted", origin)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	counted("flood1.test")
	resp, _, err := wc.do("GET", "flood2.test", "/users/alice", "", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	counted("flood2.test")
	tally, _ := wc.p.Fetchbacks().Close(win.ID)
	if got := tally.Kinds["actor"].Status; got["none"] != 1 || got[strconv.Itoa(resp.StatusCode)[:1]+"xx"] != 1 {
		t.Errorf("fetch-back tally %v; want one with no answer and one %dxx", got, resp.StatusCode/100)
	}
	metrics := scrape()
	for _, want := range []string{
		`crowd_http_requests_total{origin="flood1.test",route="unmatched",status="0"} 1`,
		`crowd_http_requests_total{origin="flood2.test",route="unmatched",status="` + strconv.Itoa(resp.StatusCode) + `"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
}

// TestWeatherOverTLS: over TLS a down origin still resets the TCP connection (no TLS alert
// first) and a black hole still answers nothing.
func TestWeatherOverTLS(t *testing.T) {
	wc := startWeather(t, "down=flood1.test,blackhole=flood2.test")
	srv := httptest.NewTLSServer(wc.p.Handler())
	defer srv.Close()
	for _, c := range []struct {
		name, host string
		check      func(*testing.T, *http.Response, string, error)
		timeout    time.Duration
	}{
		// down: a reset, not a close_notify and an EOF (the handshake's time is the machine's).
		{"down", "flood1.test", wantReset, 30 * time.Second},
		// blackhole: the client's timeout.
		{"blackhole", "flood2.test", wantTimeout, 500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := srv.Client()
			client.Timeout = c.timeout
			client.Transport.(*http.Transport).DisableKeepAlives = true
			req, _ := http.NewRequest("GET", srv.URL+"/users/alice", nil)
			req.Host = c.host
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			c.check(t, resp, "", err)
		})
	}
}
