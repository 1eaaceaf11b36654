package inbox

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/jsonquote"
)

// encoderJSON is what the activity log wrote before appendEntryJSON, and
// still writes for what appendEntryJSON does not encode.
func encoderJSON(t testing.TB, e *Entry) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(e)
	return buf.Bytes(), err
}

// fullEntry has every field of Entry set, so that encoding/json writes
// every key.
func fullEntry() Entry {
	return Entry{Seq: 7, Time: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC), Direction: DirIn, Remote: "127.0.0.1:1",
		Method: "POST", URL: "flood1.test/inbox", Headers: http.Header{"Date": {"x"}, "Accept": {"a", "b"}},
		Body: `{"a":"<b>&"}`, BodyBytes: 12, Truncated: true, ID: "i", Type: "Create", Actor: "a", Object: "o",
		ObjectType: "Note", Local: "l", To: "t", KeyID: "k", Verdict: VerdictAccepted, Reason: "r", Note: "n",
		Status: 202, Attempt: 2, DurationMS: 1.25, Response: "resp", Weather: "slow:30s:0.5", WeatherHeldMS: 30000.5}
}

// TestAppendEntryJSON: the log's encoder writes what json.Encoder
// writes, entry by entry.
func TestAppendEntryJSON(t *testing.T) {
	// Every field of Entry must be set in fullEntry: a field added to
	// Entry fails here until appendEntryJSON (and fullEntry) have it.
	full := fullEntry()
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullEntry leaves %s unset: set it, and encode it in appendEntryJSON", v.Type().Field(i).Name)
		}
	}
	tests := []struct {
		name string
		e    Entry
	}{
		// Every field, so every key, present.
		{"full", full},
		// The zero entry: omitempty fields left out, the others zero.
		{"zero", Entry{}},
		// A typical delivery, as ServeHTTP logs it.
		{"delivery", Entry{Seq: 1, Time: time.Now().UTC(), Direction: DirIn, Method: "POST", URL: "flood1.test/inbox",
			Headers: http.Header{"Signature": {`keyId="https://a.test/u#k",headers="(request-target) date"`}},
			Body:    `{"content":"<p class=\"x\">é</p>\n"}`, BodyBytes: 40, Verdict: VerdictAccepted, Status: 202, DurationMS: 0.087}},
		// A non-UTC time keeps its offset, as Time.MarshalJSON writes it.
		{"zone", Entry{Time: time.Date(2026, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 5*3600+1800))}},
		// Control characters, quotes, backslashes, invalid UTF-8, U+2028/9 and HTML.
		{"escapes", Entry{Body: "a\"b\\c\x00\x01\x1f\b\f\n\r\t\x7f<>&\xff\xc3\u2028\u2029é😀", Reason: "\u2028"}},
		// A header whose value is nil is written null; an empty one [].
		{"nil header value", Entry{Headers: http.Header{"A": nil, "B": {}, "\x00K\"": {"\xff"}}}},
		// An empty (not nil) header map is left out, as omitempty does.
		{"empty headers", Entry{Headers: http.Header{}}},
		// Below 1e-6 encoding/json switches to an exponent, unpadded (e-7).
		{"tiny duration", Entry{DurationMS: 1e-7}},
		// 1e-6 itself is still written as a decimal.
		{"small duration", Entry{DurationMS: 0.000001}},
		// From 1e21 on, an exponent again (e+21).
		{"huge duration", Entry{DurationMS: 1e21}},
		// Just below, every digit as a decimal.
		{"large duration", Entry{DurationMS: 123456789012345678}},
		// A negative exponent of two digits keeps both.
		{"negative duration", Entry{DurationMS: -2.5e-19}},
		// Negative zero is written -0, as strconv does.
		{"negative zero", Entry{DurationMS: math.Copysign(0, -1)}},
		// Negative integers.
		{"negative ints", Entry{BodyBytes: -1, Status: -2, Attempt: -3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := encoderJSON(t, &tt.e)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendEntryJSON(nil, &tt.e, false)
			if !ok {
				t.Fatal("appendEntryJSON declined")
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestAppendEntryJSONDeclines: what json.Encoder refuses, appendEntryJSON
// leaves to it.
func TestAppendEntryJSONDeclines(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    Entry
	}{
		// Time.MarshalJSON refuses years past 9999.
		{"year 10000", Entry{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		// encoding/json refuses NaN.
		{"NaN", Entry{DurationMS: math.NaN()}},
		// And infinities.
		{"+Inf", Entry{DurationMS: math.Inf(1)}},
		// In a slow origin's hold too.
		{"held NaN", Entry{WeatherHeldMS: math.NaN()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := appendEntryJSON(nil, &tt.e, false); ok {
				t.Fatal("appendEntryJSON encoded it")
			}
			if _, err := encoderJSON(t, &tt.e); err == nil {
				t.Fatal("json.Encoder encoded it too: appendEntryJSON need not decline")
			}
		})
	}
}

// FuzzAppendEntryJSON: any strings, any numbers, the same bytes as
// json.Encoder.
func FuzzAppendEntryJSON(f *testing.F) {
	f.Add("in", "body \x00\"\\\xff\u2028", "Signature", "v", int64(0), 1.5, 202)
	f.Add("", "", "", "", int64(-1), 1e-7, 0)
	f.Fuzz(func(t *testing.T, dir, body, hk, hv string, unix int64, dur float64, status int) {
		e := fullEntry()
		e.Direction, e.Body, e.Reason, e.Status, e.DurationMS = dir, body, hv, status, dur
		e.Time = time.Unix(unix%(1<<40), unix%1e9).UTC()
		e.Headers = http.Header{hk: {hv, body}, hv: nil}
		want, err := encoderJSON(t, &e)
		got, ok := appendEntryJSON(nil, &e, false)
		if err != nil {
			if ok {
				t.Fatalf("appendEntryJSON encoded what json.Encoder refuses (%v): %s", err, got)
			}
			return
		}
		if !ok {
			t.Fatalf("appendEntryJSON declined what json.Encoder encodes: %s", want)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}

// TestAppendJSONStringLong: appendJSONString quotes as encoding/json does
// (without HTML escaping) strings whose plain runs it skips eight bytes at
// a time, each byte it must not copy as it is at every offset of a word.
func TestAppendJSONStringLong(t *testing.T) {
	for _, piece := range []string{
		`"`, `\`, "\n", "\x01", // escaped
		"\x7f", "~", // copied as they are
		"é", "€", "\U0001F600", // UTF-8 of two, three and four bytes
		"\u2028", "\u2029", // escaped by name as encoding/json does
		"\xff", "\xe2\x82", // invalid UTF-8: U+FFFD
	} {
		s := longStrings(piece)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := jsonquote.AppendString(nil, s); string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q:\n got %s\nwant %s", piece, got, want.String())
		}
	}
}
