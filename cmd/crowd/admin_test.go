package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/internal/crowdtest"
	"github.com/crowdfed/crowd/pasture"
)

// testCrowd is what `crowd serve` runs, in-process (crowdtest), with its
// inbox's connections recorded.
type testCrowd struct {
	admin string // host:port of the admin API
	world *actors.World
	inbox *inbox.Inbox
	stop  func()        // shuts the crowd down (idempotent; also run at cleanup)
	dials *dialRecorder // every connection the inbox's client made
	p     *pasture.Pasture
}

// dialRecorder dials as net.Dialer does and remembers every address, so a
// test can show that a refused send tried no connection.
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialRecorder) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	return (&net.Dialer{Timeout: time.Second}).DialContext(ctx, network, addr)
}

// Dials returns the addresses dialed so far.
func (d *dialRecorder) Dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

func startTestCrowd(t *testing.T) *testCrowd {
	t.Helper()
	dials := &dialRecorder{}
	c := crowdtest.Start(t, crowdtest.Options{
		Client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dials.Dial}}})
	return &testCrowd{admin: c.Admin, world: c.World, inbox: c.Inbox, stop: c.Stop, dials: dials, p: c.Pasture}
}

// serveInBackground runs `crowd serve` with args in this process until the
// test ends, its log kept for a failure (keptStderr); the test fails if it
// has not stopped 15 s after. The channel has its exit status if it ends
// before.
func serveInBackground(t *testing.T, args ...string) <-chan int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served, done, stderr := make(chan int, 1), make(chan struct{}), keptStderr(t, "serve")
	go func() {
		defer close(done)
		served <- execute(ctx, append([]string{"serve"}, args...), nil, io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return served
}

// waitReady waits until the serve whose admin API is at admin answers
// /readyz 200, for up to 60 s (a first start makes its keys), failing the
// test at once if the serve ends first (served: serveInBackground's).
func waitReady(t *testing.T, admin string, served <-chan int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get("http://" + admin + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case code := <-served:
			t.Fatalf("serve ended with exit %d before it was ready", code)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("serve was not ready after 60 s")
		}
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keptStderr is a writer for a command whose output the test does not
// check (a crowd serving in the background): shown in the test's log if the
// test fails, so the failure comes with the crowd's side of it.
func keptStderr(t *testing.T, name string) io.Writer {
	t.Helper()
	var b crowdtest.SyncBuffer
	t.Cleanup(func() {
		if t.Failed() && b.String() != "" {
			t.Logf("%s's output:\n%s", name, b.String())
		}
	})
	return &b
}

// runCLI runs the crowd command line as main does and returns its exit
// status and what it printed.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIContext(t, context.Background(), args...)
}

// runCLIContext is runCLI with ctx (a test cancels it to play Ctrl-C).
func runCLIContext(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIWith(t, ctx, nil, args...)
}

// runCLIStdin is runCLI with stdin as the command's standard input.
func runCLIStdin(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIWith(t, context.Background(), stdin, args...)
}

// runCLIWith runs the CLI with ctx and stdin (nil: the test process's).
func runCLIWith(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb crowdtest.SyncBuffer
	code = execute(ctx, args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// fakeRemote is another server, not a crowd: it serves the actor
// documents given (path → JSON, as application/activity+json unless
// contentType says otherwise) and answers every inbox POST with
// inboxStatus.
type fakeRemote struct {
	srv *httptest.Server
}

func newFakeRemote(t *testing.T, docs map[string]string, contentType string, inboxStatus int) *fakeRemote {
	t.Helper()
	if contentType == "" {
		contentType = "application/activity+json"
	}
	fr := &fakeRemote{}
	fr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/inbox") {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(inboxStatus)
			json.NewEncoder(w).Encode(map[string]string{"error": "this server does not like you"})
			return
		}
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, strings.ReplaceAll(doc, "BASE", fr.srv.URL))
	}))
	t.Cleanup(fr.srv.Close)
	return fr
}

// url is the absolute URL of path on the fake remote.
func (fr *fakeRemote) url(path string) string { return fr.srv.URL + path }

func TestAdminFlagIsChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		addr  string
		ok    bool
		base  string // when ok
		error string // else: the message names this
	}{
		// The usual form: what `crowd serve --admin` takes.
		{"host:port", "127.0.0.1:9180", true, "http://127.0.0.1:9180", ""},
		// A URL is accepted too, as people paste them.
		{"an http URL", "http://crowd:9180/", true, "http://crowd:9180", ""},
		// Empty: nowhere to go.
		{"empty", "", false, "", "--admin"},
		// No port: a port is always needed (no default port is guessed).
		{"no port", "crowd", false, "", "no port"},
		// A path: the admin API lives at the root.
		{"a path", "http://127.0.0.1:9180/api", false, "", "--admin"},
		// Another scheme.
		{"ftp", "ftp://127.0.0.1:21", false, "", "--admin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := (&adminFlags{addr: c.addr}).client()
			if c.ok {
				if err != nil || cl.Base() != c.base {
					t.Fatalf("client(%q) = %v, %v; want base %s", c.addr, cl, err, c.base)
				}
				return
			}
			if err == nil || !isUsageError(err) || !strings.Contains(err.Error(), c.error) {
				t.Fatalf("client(%q) error %v; want a usage error naming %q", c.addr, err, c.error)
			}
		})
	}
}
