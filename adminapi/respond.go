package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// ErrBodyTooLarge is wrapped by DecodeBody's error for a body past its limit: answered 413
// (BodyStatus), not 400, so that a client can tell a body too long from one malformed.
var ErrBodyTooLarge = errors.New("the body is too large")

// DecodeBody reads r's JSON body of at most limit bytes (BodyLimit when limit is 0) into v.
// No body at all is ErrEmptyBody with v untouched; a body past the limit wraps
// ErrBodyTooLarge, and the server closes the connection rather than drain it; anything but
// space after the JSON value is an error. Fields v does not have are ignored: for the routes
// only other crowd processes call, which may be of another version.
func DecodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeBody(w, r, limit, v, false)
}

// DecodeStrictBody is DecodeBody that refuses a field v does not have, naming it: for the
// routes a person also writes bodies for by hand, where a misspelt field
// ("allow_public_taget") would otherwise be dropped without a word, and the request carried
// out without it. A crowd process of a newer version is refused the same way for a field this
// one lacks, so such a request type's new fields are omitempty: sent only when used.
func DecodeStrictBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeBody(w, r, limit, v, true)
}

func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, strict bool) error {
	if limit <= 0 {
		limit = BodyLimit
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return ErrEmptyBody
	}
	if err == nil {
		// Two documents, or one and a stray: whoever wrote it meant something the first alone
		// does not say.
		_, err = dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if _, ok := errors.AsType[*http.MaxBytesError](err); !ok {
			err = errors.New("the body goes on after its JSON value")
		}
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return fmt.Errorf("%w: more than %d bytes", ErrBodyTooLarge, limit)
	}
	return err
}

// BodyStatus is the status that answers a DecodeBody error: 413 for a body too large, 400
// for any other.
func BodyStatus(err error) int {
	if errors.Is(err, ErrBodyTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}
