// Package statuswriter records the status a handler answered with, for the middleware that
// count answers (the origins' metrics and the fetch-back windows) without a router's wrapper.
package statuswriter

import (
	"bufio"
	"net"
	"net/http"
)

// Writer passes everything to the ResponseWriter it wraps and keeps the first status written:
// WriteHeader's code, or 200 when the handler wrote a body first.
type Writer struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

// New wraps w.
func New(w http.ResponseWriter) *Writer { return &Writer{ResponseWriter: w} }

// WriteHeader records code (the first one) and passes it on.
func (s *Writer) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records 200 when no status was written yet, and passes b on.
func (s *Writer) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Hijack takes the connection over (http.ResponseController finds it here before Unwrap) and
// records that the handler answered nothing on it: the weather's resets and black holes.
func (s *Writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil && s.status == 0 {
		s.hijacked = true
	}
	return c, rw, err
}

// Status is the status the handler answered with; 200 for one that wrote nothing, as net/http
// answers then; 0 for one that took the connection over without answering.
func (s *Writer) Status() int {
	if s.hijacked {
		return 0
	}
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Unwrap lets http.ResponseController reach the wrapped writer (Flush, deadlines).
func (s *Writer) Unwrap() http.ResponseWriter { return s.ResponseWriter }
