package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// securityRecord is the part of a record's security section
// (flood/record/SCHEMA.md) this test reads.
type securityRecord struct {
	Settings struct {
		Scenario string `json:"scenario"`
	} `json:"settings"`
	Security *struct {
		Kinds map[string]struct {
			Sent, Accepted, Refused, Failed int64
		} `json:"kinds"`
		Findings []struct {
			Kind, Activity string
			Status         int
		} `json:"findings"`
	} `json:"security"`
}

// forgeryRow is one forgery run against the Fedify SUT: the flags beyond
// the scenario and the attachment, and the tamper kinds it must send.
type forgeryRow struct {
	name  string
	args  []string
	kinds int
	gate  string // a gate on forged_accepted the output must show met
}

// TestForgeryRealFedify floods a real Fedify 1.5.9 with the forgery
// scenario among honest traffic. The judge is Fedify's own log: every
// forgery but the replays must be refused (Fedify counts each refusal
// with its reason), so the record's forged_accepted over those kinds is 0
// and the preset's gate holds, exit 0; a replay Fedify answers 202 is one
// it counts as a duplicate (it drops an activity id it has processed,
// after answering), never processed twice.
func TestForgeryRealFedify(t *testing.T) {
	t.Parallel()
	rows := []forgeryRow{
		// The preset as shipped: its tamper list (no replays), its share,
		// rate and its own gate forged_effective=0 (no 2xx, so nothing to
		// judge by effect); only its 30 s cut to 8, still some 80 forgeries
		// over 7 kinds, so every kind is sent and judged.
		{name: "preset", kinds: 7, gate: "forged_effective", args: []string{"--seconds", "8"}},
		// Replays on top (--tamper all), 8 s: the replays Fedify answers
		// 202 (duplicates it drops by their id) judge nothing, so the gates
		// over every kind hold and no SECURITY line is drawn; each kind's
		// gate apart holds too.
		{name: "all", kinds: 8, gate: "forged_accepted", args: []string{"--tamper", "all", "--seconds", "8",
			"--expect", "forged_sent>0", "--expect", "forged_accepted=0", "--expect", "forged_effective=0",
			"--expect", "body.forged_accepted=0", "--expect", "digest_unsigned.forged_accepted=0",
			"--expect", "wrong_key.forged_accepted=0", "--expect", "date.forged_accepted=0", "--expect", "created.forged_accepted=0",
			"--expect", "target.forged_accepted=0", "--expect", "unknown_key.forged_accepted=0"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel() // each row has a crowd and a Fedify of its own, in a namespace of its own
			f := startFederation(t, 3)
			var rec securityRecord
			_, output, code := f.floodExit(t, "forgery-"+row.name, &rec, append([]string{"--scenario", "forgery", "--timeout", "60s"}, row.args...)...)
			if code != 0 {
				t.Fatalf("crowd flood --scenario forgery %v: exit %d\n%s", row.args, code, output)
			}
			checkForgeries(t, f, rec, row.kinds, output)
			// The gate was evaluated, and met.
			if !regexp.MustCompile(`expect ` + regexp.QuoteMeta(row.gate) + ` = 0 \(want ==? 0\): met`).Match(output) {
				t.Errorf("no %s gate met in the output:\n%s", row.gate, output)
			}
			if bytes.Contains(output, []byte("SECURITY")) || bytes.Contains(output, []byte("finding:")) {
				t.Errorf("a SUT that refused every forgery but took replays drew a finding:\n%s", output)
			}
		})
	}
}

// checkForgeries compares a forgery run's security section with Fedify's
// log: every kind sent, each refused but the replays, whose 2xx answers
// are Fedify's duplicates; every refusal one Fedify logged.
func checkForgeries(t *testing.T, f *federation, rec securityRecord, kinds int, output []byte) {
	t.Helper()
	var stats struct {
		RejectedTotal  int64 `json:"rejectedTotal"`
		DuplicateTotal int64 `json:"duplicateTotal"`
		Rejections     []struct {
			Type, Reason string
		} `json:"rejections"`
	}
	f.call(t, "GET", fedifyCtl+"/stats", nil, &stats)
	if rec.Settings.Scenario != "forgery" || rec.Security == nil {
		t.Fatalf("record: scenario %q, security %v\n%s", rec.Settings.Scenario, rec.Security, output)
	}
	var refused int64
	for kind, c := range rec.Security.Kinds {
		t.Logf("%-16s sent %d refused %d accepted %d no verdict %d", kind, c.Sent, c.Refused, c.Accepted, c.Failed)
		refused += c.Refused
		switch {
		case c.Sent == 0:
			t.Errorf("%s: none sent", kind)
		case kind == "replay":
			if c.Accepted != stats.DuplicateTotal {
				t.Errorf("replay: %d answered 2xx, Fedify counted %d duplicates (a replay it processed again?)", c.Accepted, stats.DuplicateTotal)
			}
		case c.Refused != c.Sent:
			t.Errorf("%s: %d of %d refused: Fedify 1.5.9 accepted a forgery", kind, c.Refused, c.Sent)
		}
	}
	if len(rec.Security.Kinds) != kinds {
		t.Errorf("kinds %v, want %d", rec.Security.Kinds, kinds)
	}
	for _, fd := range rec.Security.Findings {
		if fd.Kind != "replay" {
			t.Errorf("finding %+v", fd)
		}
	}
	// Every refusal the crowd counted is one Fedify logged, with its reason.
	if refused != stats.RejectedTotal {
		t.Errorf("the crowd counted %d forgeries refused, Fedify logged %d rejections", refused, stats.RejectedTotal)
	}
	for _, r := range stats.Rejections[:min(8, len(stats.Rejections))] {
		t.Logf("Fedify refused a %s: %s", r.Type, r.Reason)
	}
	if !strings.Contains(string(output), "Forged requests:") {
		t.Errorf("the table has no security section:\n%s", output)
	}
}

// readRecord decodes into v the one record labelled label that a flood
// wrote in dir.
func readRecord(t *testing.T, dir, label string, v any) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*-"+label+".json"))
	if len(paths) != 1 {
		t.Fatalf("want one record labelled %s in %s, got %v", label, dir, paths)
	}
	raw, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", paths[0], err)
	}
}
