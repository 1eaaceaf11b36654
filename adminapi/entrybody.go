package adminapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// BodyEncodingString is the value of an Entry's "body_encoding" when its
// body is written as a JSON string: the body is not JSON (or not UTF-8),
// was cut at the log's body limit (Truncated), or is itself a JSON string
// (embedded, it could not be told from the old form). The key is absent
// when the body is embedded as a JSON value.
const BodyEncodingString = "string"

// AppendBodyJSON appends body as an Entry's JSON embeds it when it can: as
// it is when it is compact JSON (the common case, and no copy but the
// append), compacted when it is JSON with whitespace between tokens. ok is
// false, and dst comes back as it was, when the body is to be written as a
// JSON string instead (see BodyEncodingString). Whitespace of any kind is
// compacted, not only newlines: encoding/json compacts what a MarshalJSON
// returns, and the journal must equal what encoding/json writes.
func AppendBodyJSON(dst []byte, body string, truncated bool) (_ []byte, ok bool) {
	return AppendBodyJSONFunc(dst, body, truncated, json.Valid)
}

// AppendBodyJSONFunc is AppendBodyJSON with valid in json.Valid's place,
// for a writer with a faster validator (the activity log's); valid must
// report exactly what json.Valid reports.
func AppendBodyJSONFunc(dst []byte, body string, truncated bool, valid func([]byte) bool) (_ []byte, ok bool) {
	if truncated || body == "" {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, body...)
	raw := dst[start:]
	if !valid(raw) || !utf8.Valid(raw) {
		return dst[:start], false
	}
	compacted := compactInPlace(raw)
	if compacted[0] == '"' {
		return dst[:start], false
	}
	return dst[:start+len(compacted)], true
}

// compactInPlace removes the whitespace between the tokens of the valid
// JSON text b, as json.Compact does when it escapes nothing, and returns b
// shortened. A compact text (the common case) is only read, never written.
// Not json.Compact, which writes to a second buffer: the log's writer
// embeds bodies in its line buffer. FuzzJournalLine (inbox) holds it to
// json.Compact.
func compactInPlace(b []byte) []byte {
	first := firstSpace(b)
	if first < 0 {
		return b
	}
	w, inString := first, false
	for r := first; r < len(b); r++ {
		c := b[r]
		switch {
		case inString:
			if c == '\\' && r+1 < len(b) {
				b[w] = c
				w, r = w+1, r+1
				c = b[r]
			} else if c == '"' {
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c == '"':
			inString = true
		}
		b[w] = c
		w++
	}
	return b[:w]
}

// firstSpace is the offset of the first whitespace between the tokens of
// the valid JSON text b, or -1: it jumps over strings with IndexByte, as
// most of an activity's bytes are in its strings (BenchmarkLineEncoder).
func firstSpace(b []byte) int {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			return i
		case '"':
			for { // to the closing quote: the next one not escaped
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return -1 // not valid JSON: the caller validated it
				}
				i += 1 + j
				if !escaped(b, i) {
					break
				}
			}
		}
	}
	return -1
}

// escaped reports whether b[i] follows an odd run of backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for i--; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// entryWire is Entry as its JSON has it: the fields of Entry, then the body
// (a JSON value, or a string flagged by body_encoding) and its encoding.
type entryWire struct {
	entryFields
	Body         any    `json:"body,omitempty"`
	BodyEncoding string `json:"body_encoding,omitempty"`
}

// entryFields is Entry without its methods: its fields, Body shadowed by
// entryWire's.
type entryFields Entry

// MarshalJSON writes e as the activity log's journal has it: the body
// embedded as a JSON value when it is one (see AppendBodyJSON), else as a
// string with "body_encoding": "string".
func (e Entry) MarshalJSON() ([]byte, error) {
	w := entryWire{entryFields: entryFields(e)}
	if e.Body != "" {
		if raw, ok := AppendBodyJSON(nil, e.Body, e.Truncated); ok {
			w.Body = json.RawMessage(raw)
		} else {
			w.Body, w.BodyEncoding = e.Body, BodyEncodingString
		}
	}
	// Not json.Marshal: it would escape <, > and & in every string, and
	// an Encoder that asks for no escaping would get them escaped still.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads an Entry in either form the journal has held: the
// body a JSON string (every body of an older log; today's non-JSON ones),
// whose text is the body, or any other JSON value, whose compacted text is
// the body (a compact body reads back byte for byte).
func (e *Entry) UnmarshalJSON(data []byte) error {
	var w struct {
		entryFields
		Body         json.RawMessage `json:"body"`
		BodyEncoding string          `json:"body_encoding"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*e = Entry(w.entryFields)
	e.Body = ""
	switch {
	case len(w.Body) == 0:
	case w.Body[0] == '"':
		if err := json.Unmarshal(w.Body, &e.Body); err != nil {
			return fmt.Errorf("entry body: %w", err)
		}
	case w.BodyEncoding == BodyEncodingString:
		return fmt.Errorf("entry body: body_encoding %q but the body is not a string", w.BodyEncoding)
	default:
		// An indenting encoder (the admin API's) indents the body too.
		e.Body = string(compactInPlace(w.Body))
	}
	return nil
}
