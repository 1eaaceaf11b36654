package inbox

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crowdfed/crowd/adminapi"
)

// FuzzJournalLine: whatever the body (JSON with or without whitespace,
// not JSON, huge, cut), the log writes exactly one line of valid JSON
// (and UTF-8), what encoding/json writes, that reads back to the entry:
// the body byte for byte when it was compact JSON, compacted when it was
// JSON with whitespace, as it was otherwise. And where the inbox's parse
// calls the body compact (the hint that spares the writer its check), the
// line is the one the check makes.
func FuzzJournalLine(f *testing.F) {
	for _, body := range []string{
		`{"type":"Create","object":{"content":"<p>é</p>"}}`,
		`{"id":"https://a.test/1","type":"Like","actor":"https://a.test/u","object":"https://b.test/n","n":[1,-2.5e3,true,null,{}]}`,
		"{\n\t\"type\": \"Create\"\r\n}\n",
		`  [1, 2.5e3, true, null, "x\"y\\n"]  `,
		`{"a":"\\\"","b":"\\"}`, `{"a":"\\\"" , "b":"\\"}`, // escaped quotes and backslashes
		"null", `"just a string"`, "{", "not json", "{\"a\":\"\xff\"}", "\u2028{}",
		strings.Repeat(`{"a":`, 600) + "1" + strings.Repeat("}", 600),
		"[" + strings.Repeat(`"0123456789",`, 10000) + "0]",
	} {
		f.Add(body, false)
	}
	f.Add(`{"a":1}`, true)
	f.Fuzz(func(t *testing.T, body string, truncated bool) {
		// The log makes every body valid UTF-8 before it encodes it (Append).
		if !utf8.ValidString(body) {
			body = strings.ToValidUTF8(body, "\uFFFD")
		}
		e := fullEntry()
		e.Body, e.Truncated = body, truncated
		line, ok := appendEntryJSON(nil, &e, false)
		if !ok {
			t.Fatal("appendEntryJSON declined")
		}
		if bytes.IndexByte(line, '\n') != len(line)-1 || !json.Valid(line) || !utf8.Valid(line) {
			t.Fatalf("not one line of valid JSON: %q", line)
		}
		want := e
		var compacted bytes.Buffer
		isJSON := !truncated && json.Compact(&compacted, []byte(body)) == nil && compacted.Len() > 0 && compacted.Bytes()[0] != '"'
		switch {
		case isJSON && compacted.String() == body:
			if !bytes.Contains(line, []byte(`,"body":`+body+"}\n")) {
				t.Fatalf("compact JSON not embedded byte for byte: %s", line)
			}
		case isJSON:
			want.Body = compacted.String()
		default:
			if !bytes.HasSuffix(line, []byte(`,"body_encoding":"`+adminapi.BodyEncodingString+"\"}\n")) && body != "" {
				t.Fatalf("a body written as a string is not flagged so: %s", line)
			}
		}
		checkLine(t, line, want)
		if _, compact, ok := scanNodeShape([]byte(body)); ok && compact && !truncated {
			hinted, ok := appendEntryJSON(nil, &e, true)
			if !ok || !bytes.Equal(hinted, line) {
				t.Fatalf("the line of a body the parse called compact:\n%s\nchecked, it is:\n%s", hinted, line)
			}
		}
	})
}
