package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/loadrun"
	"github.com/crowdfed/crowd/pasture"
)

// tokenCrowd is a crowd whose --admin is off loopback (a name), so that
// its admin API requires the token it made into its state directory; the
// API is served on a loopback listener. sink stands for a SUT and counts
// the requests that reach it.
type tokenCrowd struct {
	admin, state, token string
	sink                *httptest.Server
	sinkHits            atomic.Int64
}

func startTokenCrowd(t *testing.T) *tokenCrowd {
	t.Helper()
	tc := &tokenCrowd{state: t.TempDir()}
	tc.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tc.sinkHits.Add(1)
		w.Header().Set("Content-Type", "application/activity+json")
		w.Write([]byte(`{"id":"` + tc.sink.URL + `/users/bob","type":"Person","inbox":"` + tc.sink.URL + `/inbox"}`))
	}))
	t.Cleanup(tc.sink.Close)
	world, err := actors.Open(actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: tc.state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { world.Close() })
	reg := pasture.NewRegistry()
	in, err := inbox.New(inbox.Config{World: world, StateDir: tc.state, Registerer: reg, Client: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pasture.New(pasture.Config{World: world, AdminAddr: "crowd.internal:9180", Version: "test", Inbox: in, Admin: in.AdminRoutes, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.AdminHandler())
	t.Cleanup(func() {
		in.EndStreams()
		srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in.Shutdown(sctx)
	})
	tc.admin, tc.token = strings.TrimPrefix(srv.URL, "http://"), p.AdminToken()
	return tc
}

// TestCLISendsTheAdminToken: the commands that drive a running crowd send
// its admin token, from --admin-token or the token file of --state; without
// it, or with a wrong one, they fail naming --admin-token and
// CROWD_ADMIN_TOKEN, and nothing is sent.
func TestCLISendsTheAdminToken(t *testing.T) {
	t.Parallel()
	tc := startTokenCrowd(t)
	elsewhere := t.TempDir() // a --state with no token file
	commands := map[string][]string{
		"weather show": {"weather", "show"},
		"lookup":       {"lookup", "acct:alice@flood1.test"},
		"send":         {"send", "--from", "alice@flood1.test", "--type", "Follow", "--to", tc.sink.URL + "/users/bob"},
		"tail":         {"tail", "--backlog", "0"},
	}
	for _, c := range []struct {
		name  string
		creds []string
		ok    bool
		error string // when not ok, the message names this
	}{
		// Nothing to send: the API says it wants its token, the CLI says how to give it.
		{"no token", []string{"--state", elsewhere}, false, "wants its token"},
		// Another crowd's token.
		{"wrong token", []string{"--state", elsewhere, "--admin-token", tc.token + "0"}, false, "refused the token given"},
		// The token given.
		{"--admin-token", []string{"--state", elsewhere, "--admin-token", tc.token}, true, ""},
		// The token file of the crowd's --state, read on the same machine.
		{"token file", []string{"--state", tc.state}, true, ""},
	} {
		for name, args := range commands {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				before := tc.sinkHits.Load()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if name == "tail" && c.ok {
					// tail follows until Ctrl-C: one that got past its first request is cancelled.
					ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
					defer cancel()
				}
				code, stdout, stderr := runCLIContext(t, ctx, append(append(args, "--admin", tc.admin), c.creds...)...)
				if refused := strings.Contains(stderr, "401"); refused == c.ok {
					t.Fatalf("exit %d, refused %v, want refused %v:\n%s%s", code, refused, !c.ok, stdout, stderr)
				}
				if c.ok {
					if name != "tail" && code != 0 {
						t.Errorf("exit %d:\n%s%s", code, stdout, stderr)
					}
					return
				}
				for _, want := range []string{c.error, "--admin-token", "CROWD_ADMIN_TOKEN"} {
					if code != 1 || !strings.Contains(stderr, want) {
						t.Errorf("exit %d, stderr does not name %q:\n%s", code, want, stderr)
					}
				}
				if n := tc.sinkHits.Load() - before; n != 0 {
					t.Errorf("%d requests reached the SUT", n)
				}
			})
		}
	}
	if tc.sinkHits.Load() == 0 {
		t.Error("no send with the token reached the SUT: the refusals prove nothing")
	}
}

// TestCLIAdminTokenFromEnvironment: CROWD_ADMIN_TOKEN is --admin-token.
func TestCLIAdminTokenFromEnvironment(t *testing.T) {
	tc := startTokenCrowd(t)
	t.Setenv("CROWD_ADMIN_TOKEN", tc.token)
	if code, stdout, stderr := runCLI(t, "weather", "show", "--admin", tc.admin, "--state", t.TempDir()); code != 0 {
		t.Errorf("exit %d:\n%s%s", code, stdout, stderr)
	}
}

// TestServeRefusesABadAdminToken: a token too short to be safe is a usage
// error of serve and of a standalone flood, naming the flag and the variable.
func TestServeRefusesABadAdminToken(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve", "--state", t.TempDir(), "--admin", "0.0.0.0:0", "--admin-token", "short"},
		{"flood", "--standalone", "--state", t.TempDir(), "--admin", "0.0.0.0:0", "--admin-token", "short"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "--admin-token (or CROWD_ADMIN_TOKEN)") {
			t.Errorf("crowd %s: exit %d, %s; want a usage error naming the flag", args[0], code, stderr)
		}
	}
}

// TestStandaloneFloodOffLoopback: a standalone flood whose own admin API
// is off loopback (a name; it still binds loopback) makes its token into
// its --state and its own client carries it: the run reads the crowd's
// follow graph through that API and finishes.
func TestStandaloneFloodOffLoopback(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	code, stdout, stderr := runCLI(t, standalone(state, out, "--admin", "localhost:0", "--mix", "follow=1", "--seconds", "1", "--rate", "20")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := pasture.ReadAdminToken(state); err != nil {
		t.Errorf("no token in the standalone flood's --state: %v", err)
	}
}

// TestStandaloneFloodInTheImagesEnvironment: the variables the image and
// its compose files set for every command (CROWD_STATE, CROWD_ADMIN) name
// the serve's state and admin address; a standalone flood given only them
// keeps its own state (loadrun.StandaloneState, in the working folder)
// and starts no admin API, so it neither writes into the serve's state,
// running or stopped, nor tries to take its port (held here: the flood
// would fail to bind it).
func TestStandaloneFloodInTheImagesEnvironment(t *testing.T) {
	serveState, out := t.TempDir(), t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0") // the serve's admin port: binding it would fail
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	t.Setenv("CROWD_STATE", serveState)
	t.Setenv("CROWD_ADMIN", taken.Addr().String())
	t.Chdir(t.TempDir())
	code, stdout, stderr := runCLI(t, "flood", "--standalone", "--origins", "1", "--actors", "2", "--out", out,
		"--seconds", "1", "--rate", "20", "--log-level", "info")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, v := range []string{"CROWD_STATE", "CROWD_ADMIN"} { // said, so that one who meant it knows
		if !strings.Contains(stderr, v+" names a serve's") {
			t.Errorf("the log does not say %s was left alone:\n%s", v, stderr)
		}
	}
	if got, err := os.ReadDir(serveState); err != nil || len(got) != 0 {
		t.Errorf("the serve's state holds %v (%v): want it untouched", got, err)
	}
	if _, err := os.Stat(loadrun.StandaloneState); err != nil {
		t.Errorf("no state of its own: %v", err)
	}
}
