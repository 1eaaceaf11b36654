package inbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"unicode/utf8"
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
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return Activity{}, fmt.Errorf("%w: empty body", ErrMalformed)
	}
	if trimmed[0] != '{' {
		return Activity{}, fmt.Errorf("%w: the body is not a JSON object", ErrMalformed)
	}
	var n node
	if err := json.Unmarshal(body, &n); err != nil {
		return Activity{}, fmt.Errorf("%w: invalid JSON: %v", ErrMalformed, err)
	}
	var a Activity
	var err error
	if a.ID, err = stringField("id", n.ID); err != nil {
		return Activity{}, err
	}
	if a.Type, err = typeOf(n.Type); err != nil {
		return Activity{}, err
	}
	if a.Actor, err = idOf("actor", n.Actor); err != nil {
		return Activity{}, err
	}
	switch {
	case a.ID == "":
		return Activity{}, fmt.Errorf("%w: no id", ErrMalformed)
	case a.Type == "":
		return Activity{}, fmt.Errorf("%w: no type", ErrMalformed)
	case a.Actor == "":
		return Activity{}, fmt.Errorf("%w: no actor", ErrMalformed)
	}
	if err := absoluteURL("id", a.ID); err != nil {
		return Activity{}, err
	}
	if err := absoluteURL("actor", a.Actor); err != nil {
		return Activity{}, err
	}
	if a.Objects, err = refsOf(n.Object); err != nil {
		return Activity{}, err
	}
	return a, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// quickString decodes a JSON string without escapes directly: ids and
// types almost never have any, and this spares a json.Unmarshal per field
// on the inbox's hot path. The result equals json.Unmarshal's.
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
		var n node
		if err := json.Unmarshal(t, &n); err != nil {
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
		var n node
		if err := json.Unmarshal(t, &n); err != nil {
			return Ref{}, fmt.Errorf("%w: object is not a valid object", ErrMalformed)
		}
		r := Ref{Embedded: t}
		var err error
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

func absoluteURL(name, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%w: %s %q is not an absolute http(s) URL", ErrMalformed, name, s)
	}
	return nil
}
