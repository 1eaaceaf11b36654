package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/loadrun"
)

// runCheck parses args as crowd run's flags and checks them as RunE does
// before the run starts: the audience the run gets, and every problem
// Validate finds, as one usage error (the files the flags name are read
// when the run starts: loadrun's TestStartReadsTheFiles).
func runCheck(t *testing.T, args ...string) (*loadrun.AudienceConfig, error) {
	t.Helper()
	f := &runFlags{}
	cmd := f.command(&globalOptions{})
	if err := cmd.ParseFlags(args); err != nil {
		return nil, usage(err) // as the root's FlagErrorFunc has it
	}
	a, err := f.audience(cmd)
	if err != nil {
		return nil, err
	}
	c, err := f.flood.config(cmd)
	if err != nil {
		return nil, err
	}
	c.Audience = a
	if errs := c.Validate(); len(errs) > 0 {
		return a, usage(errors.Join(errs...))
	}
	return a, nil
}

// TestRunCheck: the audience's flags, the personas the flood gets, and
// where each token comes from.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.txt")
	os.WriteFile(tokens, []byte("load0=file0\nload1=file1\n"), 0o600)
	t.Setenv("CROWD_TOKEN_LOAD2", "env2")
	for _, tc := range []struct {
		name    string
		args    []string
		names   string // the personas, space-separated
		tokens  string // their tokens, space-separated
		api     string
		pattern string // what the flood floods
		err     string
	}{
		// Three personas on the default host, tokens from the file, the flag and the environment.
		{"defaults", []string{"--tokens-file", tokens, "--token", "load1=flag1"},
			"load0 load1 load2", "file0 flag1 env2", "https://sut.test", "load%d@sut.test", ""},
		// Another host: the client API follows it.
		{"sut host", []string{"--count", "1", "--sut-host", "gts.test", "--token", "load0=t"},
			"load0", "t", "https://gts.test", "load%d@gts.test", ""},
		// A pattern with its own host (as crowd flood takes it), and a client API elsewhere.
		{"pattern", []string{"--personas", "bench%d@m.test", "--count", "2", "--token", "bench0=a", "--token", "bench1=b",
			"--client-api", "http://127.0.0.1:3000"}, "bench0 bench1", "a b", "http://127.0.0.1:3000", "bench%d@m.test", ""},
		// A pattern without a host takes --sut-host.
		{"pattern without host", []string{"--personas", "p%d", "--count", "1", "--token", "p0=a"},
			"p0", "a", "https://sut.test", "p%d@sut.test", ""},
		// A --token that is not NAME=TOKEN.
		{"bad token flag", []string{"--token", "load0"}, "", "", "", "", `--token "load0": want name=TOKEN`},
		// No personas.
		{"zero personas", []string{"--count", "0"}, "", "", "", "", "--count 0"},
		// Probes must happen.
		{"probe hz", []string{"--probe-hz", "0", "--tokens-file", tokens}, "", "", "", "", "--probe-hz 0"},
		// A client API with a path.
		{"client api path", []string{"--client-api", "https://gts.test/api", "--tokens-file", tokens}, "", "", "", "", "--client-api"},
		// A pattern without %d.
		{"pattern without %d", []string{"--personas", "load@sut.test"}, "", "", "", "", "--personas"},
		// Older command lines still work: --personas N was the count …
		{"old count", []string{"--personas", "2", "--tokens-file", tokens}, "load0 load1", "file0 file1", "https://sut.test", "load%d@sut.test", ""},
		// … and --persona-pattern the pattern.
		{"old pattern flag", []string{"--count", "1", "--persona-pattern", "bench%d@m.test", "--token", "bench0=a"},
			"bench0", "a", "https://m.test", "bench%d@m.test", ""},
		// But a count twice is a mistake …
		{"old count with --count", []string{"--personas", "2", "--count", "3"}, "", "", "", "", "--personas 2 with --count 3"},
		// … and so is a pattern twice.
		{"two patterns", []string{"--personas", "a%d", "--persona-pattern", "b%d"}, "", "", "", "", "--persona-pattern and --personas"},
		// The flood's own checks still apply.
		{"flood flag", []string{"--token", "load0=a", "--count", "1", "--mix", "nonsense"}, "", "", "", "", "--mix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := runCheck(t, tc.args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if !isUsageError(err) {
					t.Errorf("%v is not a usage error (exit 2)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The personas and their tokens are loadrun's to resolve (its
			// TestAudienceConfig); here, what the command line hands over.
			if n := len(strings.Fields(tc.names)); a.Count != n {
				t.Errorf("count %d, want %d", a.Count, n)
			}
		})
	}
}

// TestRunOldPersonasCountWarns: crowd run --personas N, a count before
// --personas became the pattern in both commands, still works and says
// what to write instead.
func TestRunOldPersonasCountWarns(t *testing.T) {
	t.Parallel()
	f := &runFlags{}
	cmd := f.command(&globalOptions{})
	var stderr strings.Builder
	cmd.SetErr(&stderr)
	if err := cmd.ParseFlags([]string{"--personas", "2", "--token", "load0=a", "--token", "load1=b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.audience(cmd); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "write --count 2") {
		t.Errorf("no deprecation warning: %q", stderr.String())
	}
}

// TestRunRefusesLadder: a run floods at one rate.
func TestRunRefusesLadder(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLIContext(t, context.Background(), "run", "--token", "load0=a", "--count", "1", "--rate", "10,20")
	if code != 2 || !strings.Contains(stderr, "crowd run floods at one rate") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestRunNamesTheFlood: crowd run has the flood's flags, and names its
// personas as the flood does (--personas PATTERN --count N), but for
// --persona and --personas-file: every persona needs a token.
func TestRunNamesTheFlood(t *testing.T) {
	t.Parallel()
	cmd := (&runFlags{}).command(&globalOptions{})
	for _, name := range []string{"rate", "seconds", "mix", "signing", "expect", "standalone", "admin", "state", "out", "label", "timeout"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("crowd run lacks the flood's --%s", name)
		}
	}
	for _, name := range []string{"persona", "personas-file"} {
		if cmd.Flags().Lookup(name) != nil {
			t.Errorf("crowd run has the flood's --%s", name)
		}
	}
	flood := newFloodCmd(&globalOptions{})
	for _, name := range []string{"personas", "count"} {
		if fl, ff := cmd.Flags().Lookup(name), flood.Flags().Lookup(name); fl == nil || fl.Value.Type() != ff.Value.Type() {
			t.Errorf("crowd run's --%s is not crowd flood's kind (%s)", name, ff.Value.Type())
		}
	}
}

// fakeClientAPI answers like a Mastodon client API whose every token is
// refused, or like a server without the API at all.
func fakeClientAPI(t *testing.T, api bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case !api:
			w.WriteHeader(404)
			w.Write([]byte("<html>404 page not found</html>"))
		case r.URL.Path == "/api/v1/instance":
			json.NewEncoder(w).Encode(map[string]string{"uri": "sut.test", "version": "4.3.0"})
		case r.URL.Path == "/api/v1/accounts/lookup" && r.URL.Query().Get("acct") == "load0":
			json.NewEncoder(w).Encode(map[string]string{"id": "1", "username": "load0", "acct": "load0"})
		default:
			w.WriteHeader(401)
			w.Write([]byte(`{"error":"The access token is invalid"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRunStandaloneBadSUT: with the world in this process, a SUT without
// the client API and a refused token each stop the run before the flood,
// with exit status 1 and a message that says which.
func TestRunStandaloneBadSUT(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		api  bool
		want string
	}{
		// Every path answers 404: no client API.
		{"no client API", false, "the SUT has no Mastodon client API at http://127.0.0.1:"},
		// The API is there, the token is not one it knows.
		{"refused token", true, "the token for load0 was refused (401)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, out := t.TempDir(), t.TempDir()
			code, _, stderr := runCLIContext(t, context.Background(), "run", "--standalone", "--origins", "1", "--actors", "2",
				"--state", state, "--out", out, "--log-level", "error", "--count", "1", "--sut-host", "sut.test",
				"--token", "load0=nope", "--client-api", fakeClientAPI(t, tc.api), "--seconds", "1")
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, tc.want)
			}
			if recs, _ := filepath.Glob(filepath.Join(out, "*.json")); len(recs) != 0 {
				t.Errorf("records written: %v", recs)
			}
		})
	}
}
