package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// logged is a JSON log line's level, the start of its message, and the
// command it names.
type logged struct{ level, msg, command string }

// TestCLILinesFollowTheLogFormat: with JSON logs asked for by name
// (--log-format json, or CROWD_LOG_FORMAT=json as a fleet's pods set it),
// the CLI's own warnings and the error it exits with are JSON log lines a
// collector reads, naming the command; otherwise, auto included, they are
// the plain lines a person or a script reads.
func TestCLILinesFollowTheLogFormat(t *testing.T) {
	// The misspelt variable's warning, then the refusal.
	warnedAndRefused := []logged{
		{"warn", "CROWD_ADMN is set, but no flag reads it: did you mean CROWD_ADMIN (--admin)?", "crowd tail"},
		{"error", `--type "Accept(Follow)": a line's Accept(Follow) names the activity`, "crowd tail"},
	}
	for _, tc := range []struct {
		name  string
		env   string   // CROWD_LOG_FORMAT
		args  []string // the command line
		plain []string // the plain lines, in order; nil for JSON ones
		json  []logged // the JSON lines, in order
	}{
		// The flag: a misspelt variable's warning, then the refusal, each one JSON line.
		{"--log-format json", "", []string{"--log-format", "json", "tail", "--type", "Accept(Follow)"}, nil, warnedAndRefused},
		// The fleet's way: the variable.
		{"CROWD_LOG_FORMAT=json", "json", []string{"tail", "--type", "Accept(Follow)"}, nil, warnedAndRefused},
		// The variable, and a flag the command line refused before the
		// environment was bound: the refusal is JSON all the same.
		{"CROWD_LOG_FORMAT=json, an unknown flag", "json", []string{"tail", "--bogus"}, nil, []logged{{"error", "unknown flag: --bogus", "crowd tail"}}},
		// The flag after the refused one, which the parse never reaches.
		{"an unknown flag before --log-format json", "", []string{"tail", "--bogus", "--log-format", "json"}, nil, []logged{{"error", "unknown flag: --bogus", "crowd tail"}}},
		// An unknown command, refused before cobra runs.
		{"an unknown command", "", []string{"nosuchcmd", "--log-format=json"}, nil, []logged{{"error", `unknown command "nosuchcmd"`, "crowd"}}},
		// Auto, off a terminal: plain lines all the same.
		{"auto", "", []string{"tail", "--type", "Accept(Follow)"}, []string{
			"crowd tail: CROWD_ADMN is set, but no flag reads it",
			`crowd: --type "Accept(Follow)": a line's Accept(Follow) names the activity`}, nil},
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
			want := tc.json
			if len(lines) != len(want) {
				t.Fatalf("stderr %q: want %d JSON lines", stderr, len(want))
			}
			for i, w := range want {
				var line struct{ Level, Msg, Command string }
				if err := json.Unmarshal([]byte(lines[i]), &line); err != nil {
					t.Fatalf("line %d is not JSON (%v): %s", i+1, err, lines[i])
				}
				if line.Level != w.level || !strings.HasPrefix(line.Msg, w.msg) || line.Command != w.command {
					t.Errorf("line %d %+v: want level %s, msg %q…, command %s", i+1, line, w.level, w.msg, w.command)
				}
			}
		})
	}
}

// TestFloodStderrIsJSONUnderJSONLogs: a flood with JSON logs asked for by
// name writes nothing but JSON lines on stderr, the live line and the
// run's news (the seed) among them, with their figures as fields; the
// table, on stdout, is the table.
func TestFloodStderrIsJSONUnderJSONLogs(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, standalone(t.TempDir(), t.TempDir(), "--seconds", "1", "--rate", "10", "--log-format", "json", "--log-level", "info")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	seen := map[string]bool{}
	for i, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var line struct {
			Msg  string
			Sent *int64
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("stderr line %d is not JSON (%v): %s", i+1, err, l)
		}
		switch {
		case line.Msg == "progress" && line.Sent != nil:
			seen["progress"] = true
		case strings.HasPrefix(line.Msg, "seed "):
			seen["seed"] = true
		}
	}
	if !seen["progress"] || !seen["seed"] {
		t.Errorf("stderr lacks the live line or the seed as log lines (%v):\n%s", seen, stderr)
	}
	if !strings.Contains(stdout, "flood: 10/s constant") {
		t.Errorf("stdout lacks the table:\n%s", stdout)
	}
}
