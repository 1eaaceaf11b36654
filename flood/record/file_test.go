package record_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// TestRecordFile: the writes a run makes to its record file, in the orders
// a run can end, and what its out directory holds afterwards.
func TestRecordFile(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rec := func(t *testing.T, partial bool, reason record.StopReason) *record.Record {
		t.Helper()
		res := recordtest.Run(start, 5*time.Second, map[string]*record.Stats{
			"Create": recordtest.Sends(40, func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }, recordtest.Always(record.Class202)),
		})
		res.Partial, res.Reason = partial, reason
		r, err := res.Record(record.Settings{Label: "cp"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const (
		cp    = "checkpoint"
		whole = "final"
		intr  = "final, interrupted"
		cpOK  = "checkpoint of a record that says complete"
	)
	for _, tc := range []struct {
		name        string
		taken       bool     // another run's record already holds the name
		writes      []string // in order
		wantFile    string   // the record's file name
		wantPartial bool
		wantReason  record.StopReason
		wantRows    int // rows in runs.md (0: no runs.md)
	}{
		// A run that ends: its checkpoints are replaced, one row.
		{"checkpoints then the end", false, []string{cp, cp, whole}, "20261130-120000-cp.json", false, "", 1},
		// A run killed after a checkpoint: a partial record, no row.
		{"killed after a checkpoint", false, []string{cp, cp}, "20261130-120000-cp.json", true, record.ReasonCheckpoint, 0},
		// A run too short for a checkpoint: the final record alone.
		{"the end only", false, []string{whole}, "20261130-120000-cp.json", false, "", 1},
		// Interrupted (SIGINT): the final partial record replaces the checkpoint.
		{"interrupted after a checkpoint", false, []string{cp, intr}, "20261130-120000-cp.json", true, "interrupted", 1},
		// Another run's record is never replaced: the checkpoint takes -2, the end stays there.
		{"the name is taken", true, []string{cp, whole}, "20261130-120000-cp-2.json", false, "", 1},
		// A checkpoint is partial whatever the record given says.
		{"a checkpoint is always partial", false, []string{cpOK}, "20261130-120000-cp.json", true, record.ReasonCheckpoint, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out", "load")
			var other []byte
			if tc.taken {
				os.MkdirAll(dir, 0o755)
				other = []byte(`{"another":"run"}`)
				os.WriteFile(filepath.Join(dir, "20261130-120000-cp.json"), other, 0o644)
			}
			f := record.NewRecordFile(dir)
			if f.Path() != "" {
				t.Fatalf("a path before any write: %q", f.Path())
			}
			var paths []string
			for _, w := range tc.writes {
				var path string
				var err error
				switch w {
				case cp:
					err = f.Checkpoint(rec(t, true, record.ReasonCheckpoint))
					path = f.Path()
				case cpOK:
					r := rec(t, false, "")
					err = f.Checkpoint(r)
					path = f.Path()
					if r.Partial {
						t.Error("Checkpoint modified the caller's record")
					}
				case whole:
					r := rec(t, false, "")
					path, err = f.FinalWith(r, r)
				case intr:
					r := rec(t, true, "interrupted")
					path, err = f.FinalWith(r, r)
				}
				if err != nil {
					t.Fatalf("%s: %v", w, err)
				}
				paths = append(paths, path)
			}
			for _, p := range paths {
				if p != paths[0] || filepath.Base(p) != tc.wantFile {
					t.Fatalf("writes went to %v, want all to %s", paths, tc.wantFile)
				}
			}
			got, err := record.LoadRecord(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			if got.Partial != tc.wantPartial || got.PartialReason != tc.wantReason {
				t.Errorf("partial %v %q, want %v %q", got.Partial, got.PartialReason, tc.wantPartial, tc.wantReason)
			}
			if got.Overall.Counts.Sent != 40 {
				t.Errorf("sent %d, want 40", got.Overall.Counts.Sent)
			}
			md, err := os.ReadFile(filepath.Join(dir, "runs.md"))
			rows := 0
			if err == nil {
				rows = strings.Count(string(md), "\n") - 2 // the header's two lines
			}
			if rows != tc.wantRows {
				t.Errorf("runs.md has %d rows, want %d:\n%s", rows, tc.wantRows, md)
			}
			if tc.wantRows > 0 && !strings.Contains(string(md), "("+tc.wantFile+")") {
				t.Errorf("the row does not link %s:\n%s", tc.wantFile, md)
			}
			if tc.taken {
				if b, _ := os.ReadFile(filepath.Join(dir, "20261130-120000-cp.json")); !bytes.Equal(b, other) {
					t.Errorf("another run's record was replaced: %s", b)
				}
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("a temporary file is left: %s", e.Name())
				}
			}
		})
	}
}

// TestCheckOutDirUndo: CheckOutDir's undo takes back the directories it
// made while they are empty, and nothing that was there before.
func TestCheckOutDirUndo(t *testing.T) {
	for _, c := range []struct {
		name     string
		existing string // made before the check, under the temp dir ("" none)
		out      string // the --out checked, under the temp dir
		written  string // a file written into out after the check ("" none)
		left     string // the deepest directory left after undo, under the temp dir ("" the temp dir alone)
	}{
		// A new out/load: both go again.
		{"new nested", "", "out/load", "", ""},
		// A new load in an existing out: out stays.
		{"new in existing", "out", "out/load", "", "out"},
		// An out that was there: kept.
		{"existing", "out/load", "out/load", "", "out/load"},
		// A record written: kept, with its parents.
		{"written to", "", "out/load", "run.json", "out/load"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.existing != "" {
				if err := os.MkdirAll(filepath.Join(root, c.existing), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(root, c.out)
			undo, err := record.CheckOutDir(out)
			if err != nil {
				t.Fatal(err)
			}
			if c.written != "" {
				if err := os.WriteFile(filepath.Join(out, c.written), []byte("{}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			undo()
			for d := out; d != root; d = filepath.Dir(d) {
				rel, _ := filepath.Rel(root, d)
				_, err := os.Stat(d)
				kept := c.left != "" && (rel == c.left || strings.HasPrefix(c.left, rel+"/"))
				if kept != (err == nil) {
					t.Errorf("%s: exists %v, want %v", rel, err == nil, kept)
				}
			}
		})
	}
	// A directory that cannot be made: the error.
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := record.CheckOutDir(filepath.Join(root, "file", "load")); err == nil {
		t.Error("an out under a file: no error")
	}
}
