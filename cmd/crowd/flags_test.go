package main

import (
	"slices"
	"strings"
	"testing"
)

// TestMisspeltEnv: a CROWD_ variable no flag reads is named, with the one
// it likely meant, only when it is a slip away from a flag's; the crowd's
// other variables and those near no flag are left alone.
func TestMisspeltEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  string
		want string // the warning, "" for none
	}{
		{"CROWD_ORIGNS=5", "CROWD_ORIGNS is set, but no flag reads it: did you mean CROWD_ORIGINS (--origins)?"},               // a letter lost
		{"CROWD_ORIGN=5", "CROWD_ORIGN is set, but no flag reads it: did you mean CROWD_ORIGIN (--origin)?"},                   // the nearest wins (crowd keys rotate's)
		{"CROWD_DNS_RECROD=x", "CROWD_DNS_RECROD is set, but no flag reads it: did you mean CROWD_DNS_RECORD (--dns-record)?"}, // two swapped
		{"CROWD_RAET=5", "CROWD_RAET is set, but no flag reads it: did you mean CROWD_RATE (--rate)?"},                         // two letters swapped: one slip
		{"CROWD_ORIGINS=5", ""},        // a flag's own
		{"CROWD_DNS_RECORD=x", ""},     // a flag of another command than this one: every command shares the environment
		{"CROWD_TOKEN_LOAD0=t", ""},    // a persona's client-API token (crowd run)
		{"CROWD_CI_STATE=/x", ""},      // the CI's own
		{"CROWD_BIN=/x", ""},           // the tests' own
		{"CROWD_SOMETHING_ELSE=1", ""}, // near no flag: anyone's
		{"CROWDORIGINS=5", ""},         // not the crowd's prefix
		{"PATH=/bin", ""},              // not the crowd's at all
	} {
		got := misspeltEnv(newRoot(), []string{tc.env})
		want := []string{}
		if tc.want != "" {
			want = []string{tc.want}
		}
		if !slices.Equal(append([]string{}, got...), want) { // nil and empty alike
			t.Errorf("%s: %q, want %q", tc.env, got, want)
		}
	}
}

// TestMisspeltEnvIsWarnedOf: through the command line, a warning on stderr,
// and the command runs.
func TestMisspeltEnvIsWarnedOf(t *testing.T) {
	t.Setenv("CROWD_LOG_FROMAT", "json")
	code, _, stderr := runCLI(t, "version")
	if code != 0 || !strings.Contains(stderr, "crowd version: CROWD_LOG_FROMAT is set, but no flag reads it: did you mean CROWD_LOG_FORMAT (--log-format)?") {
		t.Errorf("exit %d, stderr %q: want 0 and the warning", code, stderr)
	}
}
