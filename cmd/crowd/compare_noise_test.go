package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareOfTwoIdenticalSelfFloodsPasses: the same command run twice in a
// row on one state (a standalone self-flood of 100 sends at 50/s, bounded by
// its sends and not by seconds) is the same experiment: crowd compare finds
// no regression in what differs between them, which is noise, and says by
// which rule.
func TestCompareOfTwoIdenticalSelfFloodsPasses(t *testing.T) {
	state := t.TempDir()
	var paths []string
	for run := 1; run <= 2; run++ {
		out := t.TempDir()
		// 20 actors: 380 pairs, so neither run runs out of Follows.
		code, stdout, stderr := runCLIContext(t, context.Background(), "flood", "--standalone", "--origins", "4", "--actors", "5",
			"--state", state, "--out", out, "--log-level", "error", "--seconds", "0", "--max-sends", "100", "--rate", "50", "--label", "noise")
		if code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", run, code, stdout, stderr)
		}
		m, _ := filepath.Glob(filepath.Join(out, "*.json"))
		if len(m) != 1 {
			t.Fatalf("run %d: records %v", run, m)
		}
		paths = append(paths, m[0])
	}
	code, stdout, stderr := runCLI(t, "compare", paths[0], paths[1])
	if code != 0 {
		t.Fatalf("compare of two identical runs: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"no regression beyond 15% and the noise", "sampling noise at 99% confidence", "a latency also by 1.00ms or more"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the comparison does not say %q:\n%s", want, stdout)
		}
	}
	t.Log(stdout)
}
