// Package discardwriter is the cheapest http.ResponseWriter, for benchmarks
// that measure a handler and not httptest.ResponseRecorder: it keeps its
// header map from one request to the next and throws the body away, so
// allocs/op is the handler's own.
package discardwriter

import "net/http"

// Writer records the status and discards the body. The zero Writer is not
// ready: make one with New.
type Writer struct {
	header http.Header
	status int
}

// New returns a Writer with an empty header map.
func New() *Writer { return &Writer{header: http.Header{}} }

// Header is the header map, the same one every request.
func (w *Writer) Header() http.Header { return w.header }

// WriteHeader records code, the first one only, as net/http keeps it.
func (w *Writer) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

// Write records 200 when no status was written yet and discards p.
func (w *Writer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// Status is the status written since the last Reset; 0 for none.
func (w *Writer) Status() int { return w.status }

// Reset readies w for the next request: no header, no status, the header
// map's room kept.
func (w *Writer) Reset() {
	clear(w.header)
	w.status = 0
}
