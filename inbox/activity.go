package inbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/crowdfed/crowd/internal/jsonquote"
)

// ErrMalformed marks a body that is not an activity the inbox can act on:
// not JSON, not a JSON object, or without an id, a type or an actor. The
// inbox answers it with 400 and the reason.
var ErrMalformed = errors.New("malformed activity")

// maxObjects bounds how many elements of an "object" array are kept: an
// activity with thousands of objects is legal JSON but nothing the crowd
// acts on needs more than the first few.
const maxObjects = 64

// Ref is an object as an activity refers to it: a bare id, or an embedded
// object of which the fields the inbox needs are extracted.
type Ref struct {
	// ID is the object's id ("" when an embedded object has none).
	ID string `json:"id,omitempty"`
	// Type is the embedded object's first type ("" for a bare id).
	Type string `json:"type,omitempty"`
	// Actor is the embedded activity's actor id (an embedded Follow's follower).
	Actor string `json:"actor,omitempty"`
	// Object is the id of the embedded activity's first object (an embedded
	// Follow's followee).
	Object string `json:"object,omitempty"`
	// Embedded is the object exactly as received, nil for a bare id. It
	// shares memory with the body given to ParseActivity.
	Embedded json.RawMessage `json:"-"`
}

// Activity is the part of an incoming activity the inbox acts on.
type Activity struct {
	// ID, Type and Actor are the activity's id, first type and actor id
	// (an actor given as an object or an array yields its first id).
	ID, Type, Actor string
	// Objects are the activity's objects: one for a string or an object,
	// up to 64 for an array, none when "object" is absent or null.
	Objects []Ref
}

// Object is the activity's first object, or the zero Ref.
func (a Activity) Object() Ref {
	if len(a.Objects) == 0 {
		return Ref{}
	}
	return a.Objects[0]
}

// node is the shape every ActivityStreams object shares; each field may be
// a string, an object or an array, so they are decoded lazily.
type node struct {
	ID     json.RawMessage `json:"id"`
	Type   json.RawMessage `json:"type"`
	Actor  json.RawMessage `json:"actor"`
	Object json.RawMessage `json:"object"`
}

// ParseActivity extracts id, type, actor and objects from an activity's
// JSON. Type may be a string or an array of strings (the first is used);
// actor and object may be an id string, an object with an id, or an array
// of either. The id and the actor must be absolute http(s) URLs and the
// type must be present. Errors wrap ErrMalformed and say what is wrong.
func ParseActivity(body []byte) (Activity, error) {
	a, _, err := parseActivity(body)
	return a, err
}

// parseActivity is ParseActivity, also telling whether body is compact
// JSON (no whitespace outside its strings), as its one scan found: then
// the activity log's writer need not check it again (see
// ActivityLog.appendEntry). compact is false whenever encoding/json
// decided instead of the scan, and whenever err is not nil.
func parseActivity(body []byte) (a Activity, compact bool, err error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return Activity{}, false, fmt.Errorf("%w: empty body", ErrMalformed)
	}
	if trimmed[0] != '{' {
		return Activity{}, false, fmt.Errorf("%w: the body is not a JSON object", ErrMalformed)
	}
	n, compact, ok := scanNodeShape(body)
	if !ok {
		if err := json.Unmarshal(body, &n); err != nil {
			return Activity{}, false, fmt.Errorf("%w: invalid JSON: %v", ErrMalformed, err)
		}
	}
	if a.ID, err = stringField("id", n.ID); err != nil {
		return Activity{}, false, err
	}
	if a.Type, err = typeOf(n.Type); err != nil {
		return Activity{}, false, err
	}
	if a.Actor, err = idOf("actor", n.Actor); err != nil {
		return Activity{}, false, err
	}
	switch {
	case a.ID == "":
		return Activity{}, false, fmt.Errorf("%w: no id", ErrMalformed)
	case a.Type == "":
		return Activity{}, false, fmt.Errorf("%w: no type", ErrMalformed)
	case a.Actor == "":
		return Activity{}, false, fmt.Errorf("%w: no actor", ErrMalformed)
	}
	if err := absoluteURL("id", a.ID); err != nil {
		return Activity{}, false, err
	}
	if err := absoluteURL("actor", a.Actor); err != nil {
		return Activity{}, false, err
	}
	if a.Objects, err = refsOf(n.Object); err != nil {
		return Activity{}, false, err
	}
	return a, compact, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// quickString decodes a JSON string without escapes directly: ids and
// types almost never have any, and this spares a json.Unmarshal per field
// on the inbox's hot path (the inbox row of `go run ./bench -only inbox`).
// FuzzQuickString holds it to json.Unmarshal.
func quickString(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	inner := raw[1 : n-1]
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

// stringField decodes a field that must be a string when present.
func stringField(name string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	if s, ok := quickString(bytes.TrimSpace(raw)); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %s is not a string", ErrMalformed, name)
	}
	return s, nil
}

// typeOf reads "type": a string, or an array whose first string is used.
func typeOf(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	t := bytes.TrimSpace(raw)
	if s, ok := quickString(t); ok {
		return s, nil
	}
	var s string
	if json.Unmarshal(t, &s) == nil {
		return s, nil
	}
	var arr []json.RawMessage
	if json.Unmarshal(t, &arr) != nil {
		return "", fmt.Errorf("%w: type is neither a string nor an array", ErrMalformed)
	}
	for _, el := range arr {
		if json.Unmarshal(el, &s) == nil && s != "" {
			return s, nil
		}
	}
	return "", nil
}

// idOf reads a reference: an id string, an object with an id, or an array
// whose first usable element wins.
func idOf(name string, raw json.RawMessage) (string, error) {
	t := bytes.TrimSpace(raw)
	if isNull(t) {
		return "", nil
	}
	switch t[0] {
	case '"':
		return stringField(name, t)
	case '{':
		n, err := decodeNode(t)
		if err != nil {
			return "", fmt.Errorf("%w: %s is not a valid object", ErrMalformed, name)
		}
		return stringField(name+".id", n.ID)
	case '[':
		var arr []json.RawMessage
		if err := json.Unmarshal(t, &arr); err != nil {
			return "", fmt.Errorf("%w: %s is not a valid array", ErrMalformed, name)
		}
		for _, el := range arr {
			if id, err := idOf(name, el); err == nil && id != "" {
				return id, nil
			}
		}
		return "", nil
	}
	return "", fmt.Errorf("%w: %s is neither an id, an object nor an array", ErrMalformed, name)
}

// refsOf reads "object" into Refs.
func refsOf(raw json.RawMessage) ([]Ref, error) {
	t := bytes.TrimSpace(raw)
	if isNull(t) {
		return nil, nil
	}
	if t[0] == '[' {
		var arr []json.RawMessage
		if err := json.Unmarshal(t, &arr); err != nil {
			return nil, fmt.Errorf("%w: object is not a valid array", ErrMalformed)
		}
		var out []Ref
		for _, el := range arr {
			if len(out) == maxObjects {
				break
			}
			r, err := refOf(el)
			if err != nil {
				return nil, err
			}
			if r.ID != "" || r.Embedded != nil {
				out = append(out, r)
			}
		}
		return out, nil
	}
	r, err := refOf(t)
	if err != nil {
		return nil, err
	}
	return []Ref{r}, nil
}

func refOf(raw json.RawMessage) (Ref, error) {
	t := bytes.TrimSpace(raw)
	if isNull(t) {
		return Ref{}, nil
	}
	switch t[0] {
	case '"':
		id, err := stringField("object", t)
		return Ref{ID: id}, err
	case '{':
		n, err := decodeNode(t)
		if err != nil {
			return Ref{}, fmt.Errorf("%w: object is not a valid object", ErrMalformed)
		}
		r := Ref{Embedded: t}
		if r.ID, err = stringField("object.id", n.ID); err != nil {
			return Ref{}, err
		}
		if r.Type, err = typeOf(n.Type); err != nil {
			return Ref{}, err
		}
		if r.Actor, err = idOf("object.actor", n.Actor); err != nil {
			return Ref{}, err
		}
		if r.Object, err = idOf("object.object", n.Object); err != nil {
			return Ref{}, err
		}
		return r, nil
	}
	return Ref{}, fmt.Errorf("%w: object is neither an id, an object nor an array", ErrMalformed)
}

// absoluteURL refuses s, the value of field name, unless url.Parse reads
// it as an absolute http or https URL with a host. Every delivery's id and
// actor pass through it: plainHTTPURL answers for the usual ones without
// url.Parse's work and allocation (two a delivery), and leaves the rest
// to it.
func absoluteURL(name, s string) error {
	if err := httpURL(name, s); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

// httpURL reports s, named name in the error, when it is not an absolute
// http(s) URL.
func httpURL(name, s string) error {
	if plainHTTPURL(s) {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%s %q is not an absolute http(s) URL", name, s)
	}
	return nil
}

// plainHTTPURL reports whether s is "http://" or "https://", then a host
// name of letters, digits, dots and hyphens with an optional port of
// digits, then an optional path of RFC 3986's unreserved characters,
// sub-delimiters, ':', '@' and '/': a form url.Parse always reads as
// such a URL with that host. Anything else (an upper-case scheme, user
// information, an IP literal, an escape, a query, a fragment) is
// url.Parse's to judge. FuzzPlainHTTPURL holds it to url.Parse.
func plainHTTPURL(s string) bool {
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		if rest, ok = strings.CutPrefix(s, "http://"); !ok {
			return false
		}
	}
	authority, path, _ := strings.Cut(rest, "/")
	host, port, hasPort := strings.Cut(authority, ":")
	if host == "" || hasPort && port == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !isAlnum(c) && c != '.' && c != '-' {
			return false
		}
	}
	for i := 0; i < len(port); i++ {
		if c := port[i]; c < '0' || c > '9' {
			return false
		}
	}
	for i := 0; i < len(path); i++ {
		if !isAlnum(path[i]) && !strings.ContainsRune("-._~!$&'()*+,;=:@/", rune(path[i])) {
			return false
		}
	}
	return true
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// decodeNode decodes data, a JSON object, into a node: what
// json.Unmarshal(data, &n) gives, in one pass over the bytes in the usual
// case (scanNode), else by json.Unmarshal itself (and its error). The scan
// is kept for the inbox row of `go run ./bench -only inbox`, where the
// crowd's inbox, not the SUT, is the bottleneck: ParseActivity 15 -> 3-4 µs,
// and with the log encoder (appendEntryJSON) and one header parse the row
// went 0.62 -> 0.84 of a bare verifier. FuzzScanNode holds it to
// json.Unmarshal.
func decodeNode(data []byte) (node, error) {
	if n, ok := scanNode(data); ok {
		return n, nil
	}
	var n node
	err := json.Unmarshal(data, &n)
	return n, err
}

// maxScanDepth bounds the nesting scanNode follows; deeper documents go
// to json.Unmarshal (whose own limit is 10 000).
const maxScanDepth = 512

// scanNode is the inbox's hot path for json.Unmarshal(data, &n): it
// validates data as one JSON value (whitespace around it allowed) and, if
// it is an object, returns the raw values of its members id, type, actor
// and object, exactly the bytes json.Unmarshal would put in the
// json.RawMessage fields. ok is false whenever it cannot be sure of
// giving what json.Unmarshal gives, and the caller must use that
// instead: data not valid JSON (json.Unmarshal's error says why), not an
// object, nested deeper than maxScanDepth, or with a member name of the
// object that has an escape or a non-ASCII byte or equals one of the four
// only case-insensitively (json.Unmarshal folds names). A repeated name
// keeps its last value, as json.Unmarshal does. The values share data's
// memory.
func scanNode(data []byte) (n node, ok bool) {
	n, _, ok = scanNodeShape(data)
	return n, ok
}

// scanNodeShape is scanNode, also telling whether data, when taken, is
// compact: no whitespace outside its strings.
func scanNodeShape(data []byte) (n node, compact, ok bool) {
	s := jsonScanner{data: data}
	i := s.space(0)
	if i >= len(data) || data[i] != '{' {
		return node{}, false, false
	}
	end := s.object(i, 1, &n)
	if end < 0 || s.space(end) != len(data) {
		return node{}, false, false
	}
	return n, !s.spaced, true
}

// jsonScanner validates JSON text as encoding/json's scanner does (RFC
// 8259; bytes ≥ 0x80 inside strings are not checked for UTF-8, as
// encoding/json does not). Each method takes the index where a token
// starts and returns the index just after it, or -1 when the text is not
// valid there (or too deep): then the caller falls back to encoding/json.
type jsonScanner struct {
	data []byte
	// spaced: space skipped a byte. Every whitespace byte outside the
	// strings of a text the scanner took is skipped by space, so a text
	// taken with spaced false is compact, as json.Compact would leave it.
	spaced bool
}

// space skips JSON whitespace.
func (s *jsonScanner) space(i int) int {
	start := i
	for i < len(s.data) {
		switch s.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			s.spaced = s.spaced || i > start
			return i
		}
	}
	s.spaced = s.spaced || i > start
	return i
}

// value scans one value at depth (the depth of its container).
func (s *jsonScanner) value(i, depth int) int {
	if i >= len(s.data) {
		return -1
	}
	switch c := s.data[i]; {
	case c == '{':
		return s.object(i, depth+1, nil)
	case c == '[':
		return s.array(i, depth+1)
	case c == '"':
		return s.str(i)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number(i)
	}
	return -1
}

// object scans the object at i; when n is not nil, it also takes the
// members a node has (see scanNode for when it gives up instead).
func (s *jsonScanner) object(i, depth int, n *node) int {
	if depth > maxScanDepth {
		return -1
	}
	i = s.space(i + 1)
	if i < len(s.data) && s.data[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(s.data) || s.data[i] != '"' {
			return -1
		}
		keyEnd := s.str(i)
		if keyEnd < 0 {
			return -1
		}
		var field *json.RawMessage
		if n != nil {
			var ok bool
			if field, ok = n.field(s.data[i+1 : keyEnd-1]); !ok {
				return -1
			}
		}
		i = s.space(keyEnd)
		if i >= len(s.data) || s.data[i] != ':' {
			return -1
		}
		i = s.space(i + 1)
		end := s.value(i, depth)
		if end < 0 {
			return -1
		}
		if field != nil {
			*field = s.data[i:end:end]
		}
		var done bool
		if i, done = s.separator(end, '}'); done || i < 0 {
			return i
		}
	}
}

// field is where the member named key (raw, between its quotes) goes: one
// of n's fields, or nil for a member n does not keep. ok is false for a
// name json.Unmarshal might match differently: escaped, non-ASCII, or
// equal to a field's name only case-insensitively.
func (n *node) field(key []byte) (*json.RawMessage, bool) {
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	switch string(key) {
	case "id":
		return &n.ID, true
	case "type":
		return &n.Type, true
	case "actor":
		return &n.Actor, true
	case "object":
		return &n.Object, true
	}
	for _, name := range [...]string{"id", "type", "actor", "object"} {
		if asciiEqualFold(key, name) {
			return nil, false
		}
	}
	return nil, true
}

// asciiEqualFold is bytes.EqualFold for an ASCII key and name.
func asciiEqualFold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// array scans the array at i.
func (s *jsonScanner) array(i, depth int) int {
	if depth > maxScanDepth {
		return -1
	}
	i = s.space(i + 1)
	if i < len(s.data) && s.data[i] == ']' {
		return i + 1
	}
	for {
		end := s.value(i, depth)
		if end < 0 {
			return -1
		}
		var done bool
		if i, done = s.separator(end, ']'); done || i < 0 {
			return i
		}
	}
}

// separator reads what follows a member or element ending at end: a
// comma (the next one's offset, not done) or the closing byte (the offset
// after it, done); -1 for anything else.
func (s *jsonScanner) separator(end int, closing byte) (int, bool) {
	i := s.space(end)
	if i >= len(s.data) {
		return -1, true
	}
	switch s.data[i] {
	case ',':
		return s.space(i + 1), false
	case closing:
		return i + 1, true
	}
	return -1, true
}

// str scans the string at i (s.data[i] is its opening quote): control
// characters must be escaped, and an escape must be one of JSON's.
func (s *jsonScanner) str(i int) int {
	d := s.data
	for i++; i < len(d); {
		// Most of an activity's bytes are plain characters of its strings
		// (a note's content): skip them eight at a time, to the first byte
		// that is not.
		for i+8 <= len(d) {
			if m := jsonquote.QuoteEscapeOrControl(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += jsonquote.FirstFlagged(m)
				break
			}
			i += 8
		}
		if i >= len(d) {
			break
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			if i+1 >= len(d) {
				return -1
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return -1
				}
				for _, h := range d[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		default:
			i++
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// literal scans true, false or null.
func (s *jsonScanner) literal(i int, word string) int {
	if !bytes.HasPrefix(s.data[i:], []byte(word)) {
		return -1
	}
	return i + len(word)
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; what
// follows it is its container's business.
func (s *jsonScanner) number(i int) int {
	d := s.data
	digits := func(i int) int { // at least one digit, else -1
		j := i
		for j < len(d) && '0' <= d[j] && d[j] <= '9' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	default:
		if i = digits(i); i < 0 {
			return -1
		}
	}
	if i < len(d) && d[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}
