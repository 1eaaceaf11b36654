package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCLILinesFollowTheLogFormat: with JSON logs asked for by name
// (--log-format json, or CROWD_LOG_FORMAT=json as a fleet's pods set it),
// the CLI's own warnings and the error it exits with are JSON log lines a
// collector reads, naming the command; otherwise, auto included, they are
// the plain lines a person or a script reads.
func TestCLILinesFollowTheLogFormat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   string   // CROWD_LOG_FORMAT
		args  []string // the command line
		plain []string // the plain lines, in order; nil for JSON ones
	}{
		// The flag: a misspelt variable's warning, then the refusal, each one JSON line.
		{"--log-format json", "", []string{"--log-format", "json", "tail", "--type", "Accept(Follow)"}, nil},
		// The fleet's way: the variable.
		{"CROWD_LOG_FORMAT=json", "json", []string{"tail", "--type", "Accept(Follow)"}, nil},
		// Auto, off a terminal: plain lines all the same.
		{"auto", "", []string{"tail", "--type", "Accept(Follow)"}, []string{
			"crowd tail: CROWD_ADMN is set, but no flag reads it",
			`crowd: --type "Accept(Follow)": a line's Accept(Follow) names the activity`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CROWD_ADMN", "127.0.0.1:9") // misspelt: warned of
			if tc.env != "" {
				t.Setenv("CROWD_LOG_FORMAT", tc.env)
			}
			code, _, stderr := runCLI(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if tc.plain != nil {
				if len(lines) != len(tc.plain) {
					t.Fatalf("stderr %q: want %d plain lines", stderr, len(tc.plain))
				}
				for i, want := range tc.plain {
					if !strings.HasPrefix(lines[i], want) {
						t.Errorf("line %d %q: want it to start %q", i+1, lines[i], want)
					}
				}
				return
			}
			want := []struct{ level, msg string }{
				{"warn", "CROWD_ADMN is set, but no flag reads it: did you mean CROWD_ADMIN (--admin)?"},
				{"error", `--type "Accept(Follow)": a line's Accept(Follow) names the activity`},
			}
			if len(lines) != len(want) {
				t.Fatalf("stderr %q: want %d JSON lines", stderr, len(want))
			}
			for i, w := range want {
				var line struct{ Level, Msg, Command string }
				if err := json.Unmarshal([]byte(lines[i]), &line); err != nil {
					t.Fatalf("line %d is not JSON (%v): %s", i+1, err, lines[i])
				}
				if line.Level != w.level || !strings.HasPrefix(line.Msg, w.msg) || line.Command != "crowd tail" {
					t.Errorf("line %d %+v: want level %s, msg %q…, command crowd tail", i+1, line, w.level, w.msg)
				}
			}
		})
	}
}
