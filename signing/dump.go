package signing

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// DumpRequest renders a request as JSON so that independent verifiers (Node,
// Python) can check the crowd's signatures. The shape is
//
//	{
//	  "method":  "POST",
//	  "url":     "https://flood3.test/users/alice/inbox",
//	  "headers": {"host": "flood3.test", "date": "...", "digest": "SHA-256=...", "signature": "..."},
//	  "body":    "{\"type\":\"Follow\",...}"
//	}
//
// method is req.Method ("GET" when empty). url is req.URL.String(): absolute
// for client requests; for server requests it is made absolute with req.Host
// and the scheme the request came over. headers maps each lower-cased header
// name to its values joined with ", " (as signing strings combine them); host
// is always present (from req.Host when the header map lacks it). body is the
// given body as a string (activity JSON is UTF-8; other bytes are replaced by
// U+FFFD by encoding/json).
func DumpRequest(req *http.Request, body []byte) ([]byte, error) {
	type dump struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	if req == nil || req.URL == nil {
		return nil, errors.New("signing: DumpRequest of a request without URL")
	}
	d := dump{Method: methodName(req), Headers: make(map[string]string, len(req.Header)+1), Body: string(body)}
	u := *req.URL
	if u.Host == "" {
		u.Host = req.Host
		u.Scheme = requestScheme(req)
	}
	d.URL = u.String()
	for k, vs := range req.Header {
		d.Headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	if _, ok := d.Headers["host"]; !ok && req.Host != "" {
		d.Headers["host"] = req.Host
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
