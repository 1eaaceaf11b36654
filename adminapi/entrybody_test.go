package adminapi_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

// TestEntryBodyJSON: an Entry's JSON embeds a JSON body as a value
// (compacted when it is not already) and any other as a flagged string;
// either form, and the older one where every body was a string, reads
// back to the body's text.
func TestEntryBodyJSON(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		truncated bool
		wantJSON  string // the end of the entry's JSON, from "body"
		wantBody  string // Body read back
	}{
		// Compact JSON: its own bytes, HTML left as it is.
		{"compact", `{"a":"<b>"}`, false, `"body":{"a":"<b>"}}`, `{"a":"<b>"}`},
		// JSON with whitespace of any kind between tokens: compacted.
		{"spaced", "{ \"a\" :\t[1, 2]\r\n}\n", false, `"body":{"a":[1,2]}}`, `{"a":[1,2]}`},
		// Not JSON: a string and body_encoding.
		{"not JSON", "a=1", false, `"body":"a=1","body_encoding":"string"}`, "a=1"},
		// JSON, but cut: the entry says so, and the body is a string.
		{"truncated", `{"a":1}`, true, `"body":"{\"a\":1}","body_encoding":"string"}`, `{"a":1}`},
		// A JSON string is a string, else it would read back unquoted.
		{"JSON string", `"a"`, false, `"body":"\"a\"","body_encoding":"string"}`, `"a"`},
		// JSON null is a value: the body "null", not no body.
		{"null", "null", false, `"body":null}`, "null"},
		// No body, no key.
		{"empty", "", false, `"duration_ms":0}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(adminapi.Entry{Body: tt.body, Truncated: tt.truncated}); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(buf.String(), tt.wantJSON+"\n") {
				t.Errorf("JSON %s, want it to end %s", buf.Bytes(), tt.wantJSON)
			}
			// The admin API indents its answers: the body reads back as it was.
			var indented bytes.Buffer
			if err := json.Indent(&indented, buf.Bytes(), "", "  "); err != nil {
				t.Fatal(err)
			}
			var e adminapi.Entry
			if err := json.Unmarshal(indented.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			if e.Body != tt.wantBody || e.Truncated != tt.truncated {
				t.Errorf("read back body %q truncated %v, want %q %v", e.Body, e.Truncated, tt.wantBody, tt.truncated)
			}
		})
	}
}

// TestEntryReadsBothForms: a line of an older log (body a JSON string) and
// one of today's read to the same Entry; a line that contradicts itself
// is an error.
func TestEntryReadsBothForms(t *testing.T) {
	tests := []struct {
		name     string
		line     string
		wantBody string
		wantErr  bool
	}{
		// The older form: the body's text, escaped in a string.
		{"old form", `{"seq":3,"body":"{\"type\":\"Like\"}","verdict":"accepted"}`, `{"type":"Like"}`, false},
		// Today's form: the body embedded.
		{"new form", `{"seq":3,"verdict":"accepted","body":{"type":"Like"}}`, `{"type":"Like"}`, false},
		// Today's, embedded with whitespace by some other writer: compacted.
		{"new form spaced", `{"seq":3,"verdict":"accepted","body": {"type": "Like",` + "\n" + `"n": "a b"} }`, `{"type":"Like","n":"a b"}`, false},
		// Today's string form.
		{"flagged string", `{"seq":3,"verdict":"accepted","body":"a=1","body_encoding":"string"}`, "a=1", false},
		// Flagged a string but not one: refused.
		{"flag contradicts", `{"seq":3,"verdict":"accepted","body":{},"body_encoding":"string"}`, "", true},
		// A body that is not JSON at all: the line is not an entry.
		{"broken", `{"seq":3,"body":{"type"}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e adminapi.Entry
			err := json.Unmarshal([]byte(tt.line), &e)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if err == nil && (e.Body != tt.wantBody || e.Seq != 3 || e.Verdict != adminapi.VerdictAccepted) {
				t.Errorf("read %+v, want body %q", e, tt.wantBody)
			}
		})
	}
}
