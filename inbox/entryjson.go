package inbox

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/jsonquote"
)

// appendEntryJSON appends e as the activity log writes it: byte for byte
// what a json.Encoder with SetEscapeHTML(false) writes for e, the final
// newline included (Entry.MarshalJSON's form: the body last, embedded as
// JSON when it is JSON, appended without a copy of its own), without
// reflection (the log's writer encodes one entry
// per delivery, and on two cores its CPU is the inbox's). ok is false when
// e holds a value that it does not encode (a Time that Time.MarshalJSON
// refuses, a DurationMS that is NaN or infinite): the caller then uses
// json.Encoder, which reports the error. Kept for the inbox row of
// `go run ./bench -only inbox` (with the one-pass activity scan and one
// header parse, 0.62 -> 0.84 of a bare verifier). compactBody is the
// caller's word that e's body is compact JSON in valid UTF-8, logged whole
// (see logged): the body is then embedded unchecked, and the line is
// json.Encoder's only if that word is true (FuzzJournalLine holds the
// inbox's parse to it). FuzzAppendEntryJSON holds it to json.Encoder;
// TestAppendEntryJSON fails when a field is added to Entry and not here.
func appendEntryJSON(b []byte, e *Entry, compactBody bool) ([]byte, bool) {
	if !finite(e.DurationMS) || !finite(e.WeatherHeldMS) {
		return b, false
	}
	start := len(b)
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	// Time.MarshalJSON's text (AppendText is the same RFC 3339 check and
	// format), without the slice MarshalJSON allocates.
	t, err := e.Time.AppendText(b)
	if err != nil { // t is nil
		return b[:start], false
	}
	b = append(t, '"')
	b = appendJSONField(b, "direction", e.Direction, false)
	b = appendJSONField(b, "remote", e.Remote, true)
	b = appendJSONField(b, "method", e.Method, false)
	b = appendJSONField(b, "url", e.URL, false)
	if len(e.Headers) > 0 {
		b = append(b, `,"headers":{`...)
		var room [16]string // a delivery's headers, without an allocation
		keys := room[:0]
		for k := range e.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonquote.AppendString(b, k)
			b = append(b, ':')
			vs := e.Headers[k]
			if vs == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for j, v := range vs {
				if j > 0 {
					b = append(b, ',')
				}
				b = jsonquote.AppendString(b, v)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `,"body_bytes":`...)
	b = strconv.AppendInt(b, int64(e.BodyBytes), 10)
	if e.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	b = appendJSONField(b, "id", e.ID, true)
	b = appendJSONField(b, "type", e.Type, true)
	b = appendJSONField(b, "actor", e.Actor, true)
	b = appendJSONField(b, "object", e.Object, true)
	b = appendJSONField(b, "object_type", e.ObjectType, true)
	b = appendJSONField(b, "local", e.Local, true)
	b = appendJSONField(b, "to", e.To, true)
	b = appendJSONField(b, "key_id", e.KeyID, true)
	b = appendJSONField(b, "verdict", e.Verdict, false)
	b = appendJSONField(b, "reason", e.Reason, true)
	b = appendJSONField(b, "note", e.Note, true)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	b = append(b, `,"duration_ms":`...)
	b = appendJSONFloat(b, e.DurationMS)
	b = appendJSONField(b, "response", e.Response, true)
	b = appendJSONField(b, "weather", e.Weather, true)
	if e.WeatherHeldMS != 0 {
		b = append(b, `,"weather_held_ms":`...)
		b = appendJSONFloat(b, e.WeatherHeldMS)
	}
	b = appendBody(b, e.Body, e.Truncated, compactBody)
	return append(b, "}\n"...), true
}

// appendBody appends the body last, as Entry.MarshalJSON places it: the
// body's own bytes when it is JSON (compacted if need be), else a string
// and "body_encoding":"string". compactBody says the caller knows body to
// be compact JSON in valid UTF-8, not cut, and not a string (see logged):
// what the check would find, so it is skipped.
func appendBody(b []byte, body string, truncated, compactBody bool) []byte {
	if body == "" {
		return b
	}
	b = append(b, `,"body":`...)
	if compactBody {
		return append(b, body...)
	}
	if raw, ok := adminapi.AppendBodyJSONFunc(b, body, truncated, validJSON); ok {
		return raw
	}
	b = jsonquote.AppendString(b, body)
	return append(b, `,"body_encoding":"`+adminapi.BodyEncodingString+`"`...)
}

// validJSON is json.Valid through the inbox's scanner, three times as fast
// on a typical Create (BenchmarkLineEncoder: the log's writer validates
// every body it embeds); json.Valid decides what the scanner refuses
// (invalid, or nested too deep for it). FuzzJournalLine holds the lines
// it makes to encoding/json's.
func validJSON(b []byte) bool {
	s := jsonScanner{data: b}
	if end := s.value(s.space(0), 0); end >= 0 && s.space(end) == len(b) {
		return true
	}
	return json.Valid(b)
}

// finite reports whether f is neither NaN nor infinite (what json encodes).
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendJSONField appends ,"name":"value", or nothing for an empty value
// of an omitempty field.
func appendJSONField(b []byte, name, value string, omitEmpty bool) []byte {
	if omitEmpty && value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return jsonquote.AppendString(b, value)
}

// appendJSONFloat formats f as encoding/json does a float64: like
// strconv's shortest 'f', switching to 'e' below 1e-6 and from 1e21 on,
// with a one-digit negative exponent unpadded (e-7, not e-07).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
