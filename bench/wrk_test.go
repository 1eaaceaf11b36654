package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestParseWrk reads wrk 4's report as it prints it.
func TestParseWrk(t *testing.T) {
	const clean = `Running 2s test @ http://127.0.0.1:40405/
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.52ms    2.01ms  35.07ms   88.94%
    Req/Sec     9.06k   502.33     9.74k    75.00%
  Latency Distribution
     50%    3.50ms
     75%    4.12ms
     90%    5.01ms
     99%   15.67ms
  18034 requests in 2.00s, 1.41MB read
Requests/sec:   9013.12
Transfer/sec:    720.35KB
`
	tests := []struct {
		name    string
		out     string
		want    wrkOutput
		wantErr bool
	}{
		// Every request answered below 400: no error lines at all.
		{"clean", clean, wrkOutput{requests: 18034, seconds: 2, rate: 9013.12, p50: 3.5, p99: 15.67}, false},
		// Answers ≥ 400 and socket errors are counted; latencies in µs and s are converted to ms.
		{"errors", strings.NewReplacer("     50%    3.50ms", "     50%  812.00us", "     99%   15.67ms", "     99%    1.20s",
			"  18034 requests in 2.00s, 1.41MB read\n", "  18034 requests in 2.00s, 1.41MB read\n  Socket errors: connect 1, read 2, write 3, timeout 4\n  Non-2xx or 3xx responses: 17\n").Replace(clean),
			wrkOutput{requests: 18034, seconds: 2, rate: 9013.12, p50: 0.812, p99: 1200, non2xx3xx: 17, socketErrors: 10,
				socketLine: "Socket errors: connect 1, read 2, write 3, timeout 4"}, false},
		// A run timed in minutes.
		{"minutes", strings.Replace(clean, "requests in 2.00s", "requests in 1.50m", 1),
			wrkOutput{requests: 18034, seconds: 90, rate: 9013.12, p50: 3.5, p99: 15.67}, false},
		// wrk's usage text (a bad flag): no figures, an error.
		{"usage", "Usage: wrk <options> <url>\n  Options:\n", wrkOutput{}, true},
		// A report cut before Requests/sec.
		{"cut", clean[:strings.Index(clean, "Requests/sec")], wrkOutput{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWrk(tt.out)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestRawRequest: the wire form wrk sends is the request the Go client
// sends, as a server reads it.
func TestRawRequest(t *testing.T) {
	tests := []struct {
		name        string
		method, uri string
		header      http.Header
		body        string
		want        string
	}{
		// A signed POST: Host from the argument, not the header map; Content-Length from the body; headers sorted.
		{"post", http.MethodPost, "/inbox", http.Header{"Signature": {`keyId="k"`}, "Date": {"d"}, "Host": {"wrong"}, "Content-Length": {"1"}},
			"{\"a\":\"b\r\n\"}", "POST /inbox HTTP/1.1\r\nHost: h.test\r\nDate: d\r\nSignature: keyId=\"k\"\r\nContent-Length: 11\r\n\r\n{\"a\":\"b\r\n\"}"},
		// A GET has no Content-Length; repeated header values stay separate lines.
		{"get", http.MethodGet, "/.well-known/webfinger?resource=acct%3Aa%40h.test", http.Header{"Accept": {"a", "b"}}, "",
			"GET /.well-known/webfinger?resource=acct%3Aa%40h.test HTTP/1.1\r\nHost: h.test\r\nAccept: a\r\nAccept: b\r\n\r\n"},
		// An empty POST still says Content-Length: 0.
		{"empty post", http.MethodPost, "/inbox", nil, "", "POST /inbox HTTP/1.1\r\nHost: h.test\r\nContent-Length: 0\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(rawRequest(tt.method, tt.uri, "h.test", tt.header, []byte(tt.body)))
			if got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestLuaQuote: the data file's path survives Lua's string syntax.
func TestLuaQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		// A plain path.
		{"scratch/crowd-bench-1/inbox.requests", `"scratch/crowd-bench-1/inbox.requests"`},
		// Quotes, backslashes, newlines and non-ASCII bytes become \ddd.
		{"a\"b\\c\nd\xc3\xa9", `"a\034b\092c\010d\195\169"`},
	}
	for _, tt := range tests {
		if got := luaQuote(tt.in); got != tt.want {
			t.Errorf("luaQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestWrkSeconds: wrk takes whole seconds, at least one.
func TestWrkSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{200 * time.Millisecond, 1},  // below a second: one
		{2 * time.Second, 2},         // whole seconds: as they are
		{2100 * time.Millisecond, 3}, // a fraction: rounded up
	}
	for _, tt := range tests {
		if got := wrkSeconds(tt.d); got != tt.want {
			t.Errorf("wrkSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// needWrk is the wrk on PATH; without one the test is skipped, but in
// CI, which installs it, it fails.
func needWrk(t *testing.T) *wrkClient {
	t.Helper()
	w, err := findWrk(t.Context())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no wrk, which .ci/run installs: %v", err)
		}
		t.Skipf("no wrk: %v", err)
	}
	return w
}

// TestWrkReplay runs wrk (when installed; CI installs it, so there its
// absence fails) on a script the bench writes
// and checks that the server received exactly the pool's requests, round
// robin, and that answers ≥ 400 make a measurement bad.
func TestWrkReplay(t *testing.T) {
	w := needWrk(t)
	type seen struct {
		method, uri, host, sig, body string
	}
	var mu sync.Mutex
	var got []seen
	status := http.StatusAccepted
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if len(got) < 1000 {
			got = append(got, seen{r.Method, r.RequestURI, r.Host, r.Header.Get("Signature"), string(body)})
		}
		s := status
		mu.Unlock()
		rw.WriteHeader(s)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	pool := []seen{
		{http.MethodPost, "/inbox", "a.test", `keyId="a"`, "{\"x\":\"]]\r\n\"}"},
		{http.MethodPost, "/users/b/inbox", "b.test", `keyId="b"`, strings.Repeat("é", 3000)},
		{http.MethodPost, "/actor/inbox", "c.test", `keyId="c"`, ""},
	}
	var reqs [][]byte
	for _, p := range pool {
		reqs = append(reqs, rawRequest(p.method, p.uri, p.host, http.Header{"Signature": {p.sig}}, []byte(p.body)))
	}
	script, err := writeWrkScript(t.TempDir(), "test", reqs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := w.run(ctx, script, addr, 1, time.Second)
	if r.Bad != 0 || r.OK == 0 || r.Rate <= 0 || r.Client != clientWrk {
		t.Fatalf("measurement: %+v", r)
	}
	mu.Lock()
	if len(got) < len(pool) {
		t.Fatalf("the server saw %d requests", len(got))
	}
	// wrk calls request() once to check the script before it sends
	// anything: the round robin may start further on.
	start := -1
	for i, p := range pool {
		if got[0] == p {
			start = i
		}
	}
	if start < 0 {
		t.Fatalf("the first request is none of the pool's: %+v", got[0])
	}
	for i, g := range got {
		if want := pool[(start+i)%len(pool)]; g != want {
			t.Fatalf("request %d: got %+v, want %+v", i, g, want)
		}
	}
	status = http.StatusUnauthorized
	mu.Unlock()
	r = w.run(ctx, script, addr, 1, time.Second)
	if r.Bad == 0 || !strings.Contains(r.FirstBad, "≥ 400") {
		t.Fatalf("answers 401 not reported: %+v", r)
	}
}
