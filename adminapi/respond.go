package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// BodyLimit is the largest JSON body an admin route reads unless it names its own: every
// request shape of the API but a sent activity, a batch or a live push fits in it.
const BodyLimit = 64 << 10

// ErrEmptyBody is DecodeBody's error for a request with no body at all; a route whose fields
// are all optional takes it as the empty object.
var ErrEmptyBody = errors.New("adminapi: empty body")

// WriteJSON answers status with v as indented JSON, with <, > and & as themselves (the API is
// read by programs and the admin page's fetch, never pasted into HTML). A v that does not
// encode answers 500 with the reason, never half a document.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		enc.Encode(map[string]string{"error": "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// WriteError answers the API's error shape, {"error": reason}, with status.
func WriteError(w http.ResponseWriter, status int, reason string) {
	WriteJSON(w, status, map[string]string{"error": reason})
}

// DecodeBody reads r's JSON body of at most limit bytes (BodyLimit when limit is 0) into v.
// No body at all is ErrEmptyBody with v untouched; a body past the limit is an error, and the
// server closes the connection rather than drain it.
func DecodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if limit <= 0 {
		limit = BodyLimit
	}
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(v)
	if errors.Is(err, io.EOF) {
		return ErrEmptyBody
	}
	return err
}
