package inbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestJournalLineGolden: the lines the log writes to activity.jsonl, one
// body of each kind, as testdata/activitylog/lines.golden.jsonl has them
// (go test -run TestJournalLineGolden -update rewrites it). Each line is
// also what encoding/json writes for the entry, and reads back to it.
func TestJournalLineGolden(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	compact := `{"@context":"https://www.w3.org/ns/activitystreams","id":"https://sut.test/a/1","type":"Like","actor":"https://sut.test/users/bob","object":"https://flood1.test/notes/1","content":"<p>a & b</p>"}`
	spaced := "{\n  \"type\": \"Follow\",\n  \"actor\": \"https://sut.test/users/bob\",\n  \"name\": \"two  spaces\\n\"\n}\n"
	tests := []struct {
		name     string
		e        Entry
		wantBody string // Body as read back from the line
	}{
		// Compact JSON, what servers send: embedded as it came, byte for byte.
		{"compact JSON", Entry{Body: compact}, compact},
		// JSON with newlines and indentation: embedded compacted; the
		// whitespace inside its strings stays.
		{"indented JSON", Entry{Body: spaced},
			`{"type":"Follow","actor":"https://sut.test/users/bob","name":"two  spaces\n"}`},
		// Not JSON: a string, flagged by body_encoding.
		{"not JSON", Entry{Body: "type=Follow&actor=bob"}, "type=Follow&actor=bob"},
		// Cut at the body limit (32 bytes here): no longer JSON, a string.
		{"truncated", Entry{Body: compact}, compact[:32]},
		// A body that is a JSON string: a string too, or it would read
		// back as the older form (a body that is the string's content).
		{"JSON string", Entry{Body: `"hello"`}, `"hello"`},
		// A JSON number is a JSON value like any other.
		{"JSON number", Entry{Body: "42"}, "42"},
		// No body (a GET, or a delivery refused on the wire): no key.
		{"no body", Entry{}, ""},
	}
	dir := t.TempDir()
	l := openLog(t, LogOptions{Dir: dir, BodyBytes: 32 << 10})
	cut := openLog(t, LogOptions{BodyBytes: 32})
	defer cut.Close()
	var want []Entry
	for i, tt := range tests {
		tt.e.Direction, tt.e.Method, tt.e.URL = DirIn, "POST", "flood1.test/inbox"
		tt.e.Verdict, tt.e.Status, tt.e.Time = VerdictAccepted, 202, at.Add(time.Duration(i)*time.Second)
		if tt.name == "truncated" {
			tt.e = cut.Append(tt.e)
		}
		logged := l.Append(tt.e)
		logged.Body = tt.wantBody
		want = append(want, logged)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "activitylog", "lines.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantFile, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, wantFile) {
		t.Errorf("activity.jsonl:\n%s\nwant (%s):\n%s", got, golden, wantFile)
	}
	lines := bytes.SplitAfter(got, []byte("\n"))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if i >= len(lines) {
				t.Fatalf("only %d lines", len(lines))
			}
			checkLine(t, lines[i], want[i])
		})
	}
}

// checkLine holds one journal line to what the log promises of it: what
// encoding/json writes for want, and read back, want again.
func checkLine(t *testing.T, line []byte, want Entry) {
	t.Helper()
	var back Entry
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if !reflect.DeepEqual(back, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", back, want)
	}
	enc, err := encoderJSON(t, &back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, line) {
		t.Errorf("encoding/json writes\n%s\nthe log wrote\n%s", enc, line)
	}
}

// An activity log of the older form, where every body was a JSON string
// (testdata/activitylog/old-form.jsonl, written by hand), reloads as the
// same entries in today's form do: the same ring, the seq continuing from
// the same place, the same totals; and a line read back from either
// form is the same Entry.
func TestOldFormJournalReloads(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "activitylog", "old-form.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	oldDir, newDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(oldDir, LogFile), old, 0o600); err != nil {
		t.Fatal(err)
	}
	// The same entries in today's form, as the log's own encoder writes them.
	var newForm []byte
	enc := newLineEncoder()
	sc := bufio.NewScanner(bytes.NewReader(old))
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("old line %s: %v", sc.Bytes(), err)
		}
		line, err := enc.line(&e, false)
		if err != nil {
			t.Fatal(err)
		}
		newForm = append(newForm, line...)
	}
	if !bytes.Contains(newForm, []byte(`"body":{"@context"`)) || bytes.Equal(newForm, old) {
		t.Fatalf("the entries in today's form embed no body:\n%s", newForm)
	}
	if err := os.WriteFile(filepath.Join(newDir, LogFile), newForm, 0o600); err != nil {
		t.Fatal(err)
	}
	o := LogOptions{Ring: 10}
	o.Dir = oldDir
	fromOld := openLog(t, o)
	defer fromOld.Close()
	o.Dir = newDir
	fromNew := openLog(t, o)
	defer fromNew.Close()
	ring := fromOld.Latest(0, Filter{})
	if len(ring) != 5 || ring[1].Body != `{"type":"Accept","object":{"type":"Follow","content":"<p>a & b</p>"}}` ||
		ring[3].Body != `{"type":"Create","content":"cut he` || !ring[3].Truncated {
		t.Errorf("the old log reloads as %+v", ring)
	}
	if got := fromNew.Latest(0, Filter{}); !reflect.DeepEqual(got, ring) {
		t.Errorf("ring from today's form\n%+v\nfrom the old form\n%+v", got, ring)
	}
	want := Totals{Entries: 5, In: 3, Out: 2, OK: 2, Problems: 3}
	if a, b := fromOld.Totals(), fromNew.Totals(); a != want || b != want {
		t.Errorf("totals: old form %+v, today's %+v, want %+v", a, b, want)
	}
	if a, b := fromOld.Append(Entry{Direction: DirIn}), fromNew.Append(Entry{Direction: DirIn}); a.Seq != 6 || b.Seq != 6 {
		t.Errorf("next seq: old form %d, today's %d, want 6", a.Seq, b.Seq)
	}
}
