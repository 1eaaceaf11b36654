package adminapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// WriteJSON and WriteError are the one way the admin API answers: indented JSON, HTML
// characters as themselves, and a value that cannot encode answered 500 whole.
func TestWriteJSON(t *testing.T) {
	tests := []struct {
		name   string
		write  func(w http.ResponseWriter)
		status int
		body   string
	}{
		// A URL's query keeps its & (no \u0026 for a program to undo).
		{"no HTML escaping", func(w http.ResponseWriter) {
			WriteJSON(w, http.StatusOK, map[string]string{"url": "https://a.test/?a=1&b=<2>"})
		}, http.StatusOK, "{\n  \"url\": \"https://a.test/?a=1&b=<2>\"\n}\n"},
		// The status is the caller's.
		{"status kept", func(w http.ResponseWriter) { WriteJSON(w, http.StatusAccepted, []int{1}) },
			http.StatusAccepted, "[\n  1\n]\n"},
		// An error is {"error": reason}, in the same encoding.
		{"error shape", func(w http.ResponseWriter) { WriteError(w, http.StatusNotFound, "no window \"x\" & more") },
			http.StatusNotFound, "{\n  \"error\": \"no window \\\"x\\\" & more\"\n}\n"},
		// A value JSON cannot carry is a 500 that says so, never half a document.
		{"unencodable", func(w http.ResponseWriter) { WriteJSON(w, http.StatusOK, map[string]any{"c": make(chan int)}) },
			http.StatusInternalServerError, "{\n  \"error\": \"encoding the answer: json: unsupported type: chan int\"\n}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.write(rec)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d", rec.Code, tc.status)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if got := rec.Body.String(); got != tc.body {
				t.Errorf("body %q, want %q", got, tc.body)
			}
		})
	}
}

// DecodeBody is the one read of a route's body: its limit, and no body told apart from a
// bad one.
func TestDecodeBody(t *testing.T) {
	type shape struct {
		ID string `json:"id"`
	}
	tests := []struct {
		name   string
		body   string
		limit  int64
		strict bool   // DecodeStrictBody rather than DecodeBody
		want   string // the id after decoding ("before": untouched)
		err    error  // a sentinel the error wraps; nil: no error
		bad    string // an error with no sentinel, holding this
		status int    // BodyStatus of the error, when there is one
	}{
		// The route's shape.
		{"object", `{"id":"w1"}`, 0, false, "w1", nil, "", 0},
		// No body at all: the caller decides whether that is the empty object.
		{"empty", "", 0, false, "before", ErrEmptyBody, "", http.StatusBadRequest},
		// Not JSON is an error, and not ErrEmptyBody.
		{"not JSON", "id=w1", 0, false, "before", nil, "invalid character", http.StatusBadRequest},
		// One byte over the default limit is refused, not cut to a prefix
		// that may parse, and answered 413, not 400.
		{"over BodyLimit", `{"id":"` + strings.Repeat("x", BodyLimit) + `"}`, 0, false, "before", ErrBodyTooLarge, "", http.StatusRequestEntityTooLarge},
		// A route's own limit applies instead.
		{"over own limit", `{"id":"w1"}`, 5, false, "before", ErrBodyTooLarge, "", http.StatusRequestEntityTooLarge},
		{"within own limit", `{"id":"w1"}`, 11, false, "w1", nil, "", 0},
		// A field the shape does not have: ignored by DecodeBody (another
		// crowd process of another version) …
		{"unknown field", `{"id":"w1","colour":"red"}`, 0, false, "w1", nil, "", 0},
		// … and named by DecodeStrictBody (a person's misspelling).
		{"unknown field, strict", `{"id":"w1","colour":"red"}`, 0, true, "w1", nil, `unknown field "colour"`, http.StatusBadRequest},
		{"known fields, strict", `{"id":"w1"}`, 0, true, "w1", nil, "", 0},
		// Something after the value: two documents, or a stray, refused.
		{"a second document", `{"id":"w1"} {"id":"w2"}`, 0, false, "w1", nil, "goes on after", http.StatusBadRequest},
		{"a stray after it", "{\"id\":\"w1\"}x", 0, true, "w1", nil, "goes on after", http.StatusBadRequest},
		{"a brace too many", `{"id":"w1"}}`, 0, false, "w1", nil, "goes on after", http.StatusBadRequest},
		// Space and a newline after it are no more.
		{"a newline after it", "{\"id\":\"w1\"}\n  ", 0, true, "w1", nil, "", 0},
		// Space past the limit after the value: too large, as any byte there.
		{"space past the limit", "{\"id\":\"w1\"}" + strings.Repeat(" ", 20), 16, false, "w1", ErrBodyTooLarge, "", http.StatusRequestEntityTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			v := shape{ID: "before"}
			decode := DecodeBody
			if tc.strict {
				decode = DecodeStrictBody
			}
			err := decode(httptest.NewRecorder(), r, tc.limit, &v)
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("err %v, want %v", err, tc.err)
			case tc.bad != "" && (err == nil || errors.Is(err, ErrEmptyBody) || !strings.Contains(err.Error(), tc.bad)):
				t.Fatalf("err %v, want a decoding error saying %q", err, tc.bad)
			case tc.err == nil && tc.bad == "" && err != nil:
				t.Fatalf("err %v", err)
			}
			if err != nil && BodyStatus(err) != tc.status {
				t.Errorf("BodyStatus %d, want %d", BodyStatus(err), tc.status)
			}
			if v.ID != tc.want && tc.bad == "" { // a refused body may have filled some fields: the route answers 400 whatever they are
				t.Fatalf("id %q, want %q", v.ID, tc.want)
			}
		})
	}
}
