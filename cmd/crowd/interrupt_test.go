package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/crowdtest"
)

// crowdArgsEnv carries, unit-separator (0x1f) separated, the command line of a crowd that
// TestCrowdProcess runs as main does: a real process, with main's signal
// handling, for a test to signal.
const crowdArgsEnv = "CROWDTEST_MAIN_ARGS"

// TestCrowdProcess is no test: run with crowdArgsEnv set (crowdProcess),
// it is the crowd.
func TestCrowdProcess(t *testing.T) {
	args := os.Getenv(crowdArgsEnv)
	if args == "" {
		t.Skip("the crowd's process for the tests that signal one")
	}
	os.Args = append([]string{"crowd"}, strings.Split(args, "\x1f")...)
	main()
}

// crowdProcess starts the crowd with args as a process of its own; its
// output may be read while it runs.
func crowdProcess(t *testing.T, args ...string) (*exec.Cmd, *crowdtest.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrowdProcess$")
	cmd.Env = append(os.Environ(), crowdArgsEnv+"="+strings.Join(args, "\x1f"))
	stderr := &crowdtest.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

// SIGINT or SIGTERM while a first start makes the world's keys stops it
// with the status of an interrupted command (130), saying so, before every
// key is made (not timed: a busy machine makes keys slowly either way);
// the keys made stay, whole, in --state.
func TestKeyMakingStopsOnASignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		// Ctrl-C at crowd serve.
		{"serve, SIGINT", syscall.SIGINT, []string{"serve", "--https", "127.0.0.1:0", "--http", "", "--dns", "", "--admin", ""}},
		// A service manager stopping crowd serve.
		{"serve, SIGTERM", syscall.SIGTERM, []string{"serve", "--https", "127.0.0.1:0", "--http", "", "--dns", "", "--admin", ""}},
		// Ctrl-C at a standalone flood, whose in-process crowd makes the keys.
		{"standalone flood, SIGINT", syscall.SIGINT, []string{"flood", "--standalone", "--out", "OUT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			args := slices.Concat(tc.args, []string{"--origins", "10", "--actors", "9", "--state", state, "--log-level", "info"})
			for i, a := range args {
				if a == "OUT" {
					args[i] = filepath.Join(dir, "out")
				}
			}
			cmd, out := crowdProcess(t, args...)
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if m, _ := filepath.Glob(filepath.Join(state, "keys", "*", "*.pem")); len(m) > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no key made within a minute:\n%s", out)
				}
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("still running a minute after %v:\n%s", tc.sig, <-exited)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("exit %v after %v, want status %d\n%s", err, tc.sig, exitInterrupted, out)
			}
			if !strings.Contains(out.String(), "crowd: interrupted while making the actors' keys") {
				t.Errorf("the interruption is not said:\n%s", out)
			}
			made, _ := filepath.Glob(filepath.Join(state, "keys", "*", "*"))
			if len(made) == 0 || len(made) >= 100 {
				t.Errorf("%d files in the keys, want some of the 100 keys", len(made))
			}
			for _, p := range made {
				if b, err := os.ReadFile(p); err != nil || !strings.HasSuffix(p, ".pem") || !bytes.HasSuffix(b, []byte("-----END PRIVATE KEY-----\n")) {
					t.Errorf("%s is not a whole key (%v)", p, err)
				}
			}
		})
	}
}
