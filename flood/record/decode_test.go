package record_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestDecodeRecordSaysWhatItIs: input that is no crowd record is said to be
// none, in plain words, never in Go's types; a flood record this crowd cannot
// read says why.
func TestDecodeRecordSaysWhatItIs(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     string
		not    bool   // wraps ErrNotRecord
		reason string // in the error
	}{
		// An npm package.json: JSON, another document.
		{"package.json", `{"name":"x","version":"1.0.0"}`, true, `it has no "schema"; a flood record's schema is "crowd.flood.record"`},
		// A list.
		{"a list", `[]`, true, "it holds a JSON list, not an object"},
		// null.
		{"null", `null`, true, "it holds a JSON null, not an object"},
		// Nothing at all.
		{"empty", ``, true, "it is empty"},
		// Not JSON.
		{"text", "hello", true, "not JSON at byte 1"},
		// JSON cut short.
		{"cut", `{"schema":"crowd.flood.record","vers`, true, "its JSON ends early"},
		// Another tool's schema.
		{"another schema", `{"schema":"vegeta"}`, true, `its schema is "vegeta"`},
		// A schema that is no string.
		{"schema a number", `{"schema":7}`, true, `its "schema" is no string`},
		// A results file's run line.
		{"results", `{"line":"run","schema":"crowd.flood.results","version":1}`, true, "a results file of crowd flood --results"},
		// A run record of a later version.
		{"later version", `{"schema":"crowd.flood.record","version":99}`, false, "a flood record of version 99: this crowd reads 1 to"},
		// A run record without its version.
		{"no version", `{"schema":"crowd.flood.record"}`, false, `a damaged flood record (it has no "version")`},
		// A run record with a field of the wrong kind.
		{"damaged", `{"schema":"crowd.flood.record","version":2,"measured_s":"long"}`, false,
			`a damaged flood record (its "measured_s" is a JSON string where a flood record has a number)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := record.DecodeRecord(strings.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.reason) || errors.Is(err, record.ErrNotRecord) != c.not {
				t.Errorf("err = %v; want one saying %q, ErrNotRecord %v", err, c.reason, c.not)
			}
			if err != nil && strings.Contains(err.Error(), "Go ") {
				t.Errorf("err = %v: Go's types leak", err)
			}
		})
	}
	// LoadRecord names the file: "FILE is not a crowd record (…)".
	p := filepath.Join(t.TempDir(), "package.json")
	if err := os.WriteFile(p, []byte(`{"version":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := record.LoadRecord(p); err == nil || !strings.HasPrefix(err.Error(), p+" is not a crowd record (") {
		t.Errorf("LoadRecord: %v", err)
	}
}

// FuzzDecodeRecord: whatever a file holds, reading it as a record never
// panics, and an error never speaks of Go's types.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range []string{`{"schema":"crowd.flood.record","version":2}`, `[]`, ``, `{"version":"1"}`,
		`{"schema":"crowd.flood.record","version":2,"types":{"Create":1}}`, `{"schema":"crowd.flood.record","version":2,"parts":{}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		_, err := record.DecodeRecord(strings.NewReader(in))
		if err != nil && strings.Contains(err.Error(), "Go ") {
			t.Fatalf("%q: %v", in, err)
		}
	})
}
