package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Closed-loop clients (-client).
const (
	clientAuto = "auto" // wrk when it is on PATH, else the Go client
	clientGo   = "go"   // closedLoop, in the bench's own process
	clientWrk  = "wrk"  // wrk, a separate process
)

// wrkClient runs wrk (github.com/wg/wrk) as a separate process, so the
// load generator shares the machine's cores with the server under test
// but not its Go runtime (scheduler, garbage collector).
type wrkClient struct {
	path    string // the wrk binary
	version string // its first line of -v, e.g. "wrk 4.1.0 [epoll]"
}

// findWrk returns the wrk on PATH, or an error saying it is missing.
func findWrk(ctx context.Context) (*wrkClient, error) {
	path, err := exec.LookPath("wrk")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// wrk -v prints its version and usage and exits 1: only the output counts.
	out, _ := exec.CommandContext(ctx, path, "-v").CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	if !strings.HasPrefix(first, "wrk ") {
		return nil, fmt.Errorf("%s -v: not wrk: %q", path, lastLines(string(out), 2))
	}
	v, _, _ := strings.Cut(first, " Copyright")
	return &wrkClient{path: path, version: strings.TrimSpace(v)}, nil
}

// rawRequest is the wire form of one HTTP/1.1 request: request line,
// headers (sorted, so that a pool formats the same way every run), an
// explicit Content-Length when there is a body, and the body. header
// must not carry Host or Content-Length (host and body give them) and is
// written as it is (no canonicalisation: what was signed is what goes).
func rawRequest(method, requestURI, host string, header http.Header, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, requestURI, host)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range header {
			if !yield(k) {
				return
			}
		}
	}) {
		if strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") {
			continue
		}
		for _, v := range header[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	if len(body) > 0 || method == http.MethodPost || method == http.MethodPut {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// wrkScript is the Lua script wrk runs: it loads the requests from the
// data file once per Lua state (wrk's main one and each thread's) and
// hands them out round robin, already formatted, so the client does no
// per-request work but the copy into its socket buffer. It defines no
// response callback: that would make wrk parse every answer's headers
// and body into Lua, client CPU the measurement does not need (wrk
// counts answers ≥ 400 by itself). The data file is a sequence of
// "<length>\n<bytes>" records; bytes are raw (CRLFs and bodies intact),
// which a Lua long string could not carry (it rewrites line ends). wrk
// calls request() once to check the script before it connects, so the
// round robin of a measurement starts at the second request: every one
// is still sent in turn.
const wrkScript = `-- written by the crowd bench: replays a presigned pool round robin
local reqs = {}
do
  local f = assert(io.open(%s, "rb"))
  local data = f:read("*a")
  f:close()
  local pos = 1
  while pos <= #data do
    local nl = assert(data:find("\n", pos, true), "corrupt request file")
    local n = assert(tonumber(data:sub(pos, nl - 1)), "corrupt request length")
    reqs[#reqs + 1] = data:sub(nl + 1, nl + n)
    pos = nl + 1 + n
  end
end
assert(#reqs > 0, "no requests")
local i = 0
request = function()
  i = i %% #reqs + 1
  return reqs[i]
end
`

// writeWrkScript writes reqs (wire form) and the script replaying them
// into dir, under name, and returns the script's path.
func writeWrkScript(dir, name string, reqs [][]byte) (string, error) {
	data, err := wrkData(reqs)
	if err != nil {
		return "", err
	}
	dataPath := filepath.Join(dir, name+".requests")
	if err := os.WriteFile(dataPath, data, 0o600); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dataPath)
	if err != nil {
		return "", err
	}
	script := filepath.Join(dir, name+".lua")
	return script, os.WriteFile(script, wrkLua(abs), 0o600)
}

// wrkData is the data file wrkScript reads: each request of reqs, in
// order, as "<length>\n<bytes>". An empty pool is an error: wrk would
// have nothing to send.
func wrkData(reqs [][]byte) ([]byte, error) {
	if len(reqs) == 0 {
		return nil, errors.New("wrk: no requests to replay")
	}
	var data bytes.Buffer
	for _, r := range reqs {
		fmt.Fprintf(&data, "%d\n", len(r))
		data.Write(r)
	}
	return data.Bytes(), nil
}

// wrkLua is wrkScript reading the data file at dataPath.
func wrkLua(dataPath string) []byte {
	return []byte(fmt.Sprintf(wrkScript, luaQuote(dataPath)))
}

// luaQuote is s as a Lua double-quoted string literal: every byte that is
// not printable ASCII, and the quote and backslash, as a \ddd escape.
func luaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			fmt.Fprintf(&b, "\\%03d", c)
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}

// wrkSeconds is the -d wrk is given for a measurement of d: wrk takes
// whole seconds, so d is rounded up, to at least 1 s.
func wrkSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// run measures with wrk: one thread (the client's CPU is taken from the
// same two cores as the server's, so it should use as little as it can),
// conc connections, wrkSeconds(d) seconds, the script's requests, to
// addr. Only answers below 400 count as success (wrk's own rule): the
// caller checks beforehand that each request of the pool gets the
// status it wants. A measurement with any error (answer ≥ 400, socket
// error, timeout) has Bad > 0; its Rate is still wrk's.
func (w *wrkClient) run(ctx context.Context, script, addr string, conc int, d time.Duration) loopResult {
	secs := wrkSeconds(d)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.path, "-t1", "-c"+strconv.Itoa(conc), "-d"+strconv.Itoa(secs)+"s",
		"--timeout", "10s", "--latency", "-s", script, "http://"+addr+"/")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := loopResult{Client: clientWrk}
	if cmd.ProcessState != nil {
		r.ClientCPU = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		r.ClientSys = cmd.ProcessState.SystemTime().Seconds()
	}
	if err != nil {
		r.Bad, r.FirstBad = 1, fmt.Sprintf("wrk: %v: %s", err, lastLines(errOut.String()+out.String(), 3))
		return r
	}
	p, perr := parseWrk(out.String())
	if perr != nil {
		r.Bad, r.FirstBad = 1, fmt.Sprintf("wrk: %v: %s", perr, lastLines(out.String(), 3))
		return r
	}
	r.Rate, r.Seconds, r.P50, r.P99 = p.rate, p.seconds, p.p50, p.p99
	bad := p.non2xx3xx + p.socketErrors
	r.OK, r.Bad = p.requests-p.non2xx3xx, bad
	switch {
	case p.non2xx3xx > 0:
		r.FirstBad = fmt.Sprintf("%d answers ≥ 400 (wrk's \"Non-2xx or 3xx responses\")", p.non2xx3xx)
	case p.socketErrors > 0:
		r.FirstBad = fmt.Sprintf("%d socket errors (%s)", p.socketErrors, p.socketLine)
	}
	return r
}

// wrkOutput is what the bench reads from wrk's report.
type wrkOutput struct {
	requests     int64   // "N requests in Xs"
	seconds      float64 // X
	rate         float64 // "Requests/sec:"
	p50, p99     float64 // --latency distribution, in ms (0 when absent)
	non2xx3xx    int64   // "Non-2xx or 3xx responses:" (absent: 0)
	socketErrors int64   // sum of "Socket errors:" (absent: 0)
	socketLine   string
}

// wrkPatterns are the lines of wrk's report that parseWrk reads.
type wrkPatterns struct {
	requests, rate, latency, non2xx, socket *regexp.Regexp
}

// newWrkPatterns compiles the patterns (per parse: a report is parsed a
// few times per run, and the bench keeps no package state).
func newWrkPatterns() wrkPatterns {
	return wrkPatterns{
		requests: regexp.MustCompile(`^\s*(\d+) requests in ([0-9.]+)(us|ms|s|m|h),`),
		rate:     regexp.MustCompile(`^Requests/sec:\s+([0-9.]+)`),
		latency:  regexp.MustCompile(`^\s+(50|99)%\s+([0-9.]+)(us|ms|s|m|h)\s*$`),
		non2xx:   regexp.MustCompile(`^\s*Non-2xx or 3xx responses:\s+(\d+)`),
		socket:   regexp.MustCompile(`^\s*Socket errors:\s+connect (\d+), read (\d+), write (\d+), timeout (\d+)`),
	}
}

// wrkUnit converts a wrk duration (value, unit) to milliseconds.
func wrkUnit(v float64, unit string) float64 {
	switch unit {
	case "us":
		return v / 1000
	case "s":
		return v * 1000
	case "m":
		return v * 60e3
	case "h":
		return v * 3600e3
	}
	return v
}

// parseWrk reads wrk 4's report. It needs the request count and
// Requests/sec; the latency distribution and the error lines are read
// when present (wrk prints the error lines only when non-zero).
func parseWrk(out string) (wrkOutput, error) {
	pat := newWrkPatterns()
	var o wrkOutput
	haveReq, haveRate := false, false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := pat.requests.FindStringSubmatch(line); m != nil {
			o.requests, _ = strconv.ParseInt(m[1], 10, 64)
			v, _ := strconv.ParseFloat(m[2], 64)
			o.seconds = wrkUnit(v, m[3]) / 1000
			haveReq = true
		} else if m := pat.rate.FindStringSubmatch(line); m != nil {
			o.rate, _ = strconv.ParseFloat(m[1], 64)
			haveRate = true
		} else if m := pat.latency.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			if m[1] == "50" {
				o.p50 = wrkUnit(v, m[3])
			} else {
				o.p99 = wrkUnit(v, m[3])
			}
		} else if m := pat.non2xx.FindStringSubmatch(line); m != nil {
			o.non2xx3xx, _ = strconv.ParseInt(m[1], 10, 64)
		} else if m := pat.socket.FindStringSubmatch(line); m != nil {
			for _, s := range m[1:] {
				n, _ := strconv.ParseInt(s, 10, 64)
				o.socketErrors += n
			}
			o.socketLine = strings.TrimSpace(line)
		}
	}
	if !haveReq || !haveRate {
		return o, errors.New("no request count or Requests/sec in its output")
	}
	return o, nil
}
