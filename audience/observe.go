package audience

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// CreateInfo is what the audience reads from a Create the crowd sends.
type CreateInfo struct {
	Actor    string   // the sender's actor id
	Note     string   // the note's id: the uri its Status will carry
	Mentions []string // the ids of the actors the note mentions (its Mention tags)
}

// ParseCreate reads a Create(Note) activity: its actor, its note's id and
// the note's Mention tags. ok is false for anything else (another type, a
// note given by reference, broken JSON).
func ParseCreate(body []byte) (CreateInfo, bool) {
	var a struct {
		Type   any             `json:"type"`
		Actor  json.RawMessage `json:"actor"`
		Object json.RawMessage `json:"object"`
	}
	if json.Unmarshal(body, &a) != nil || a.Type != "Create" {
		return CreateInfo{}, false
	}
	var o struct {
		ID  string `json:"id"`
		Tag []struct {
			Type any    `json:"type"`
			Href string `json:"href"`
		} `json:"tag"`
	}
	if json.Unmarshal(a.Object, &o) != nil || o.ID == "" {
		return CreateInfo{}, false
	}
	info := CreateInfo{Note: o.ID, Actor: idOf(a.Actor)}
	if info.Actor == "" {
		return CreateInfo{}, false
	}
	for _, t := range o.Tag {
		if t.Type == "Mention" && t.Href != "" {
			info.Mentions = append(info.Mentions, t.Href)
		}
	}
	return info, true
}

// idOf is a JSON-LD reference's id: the string itself, or an object's "id".
func idOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.ID
	}
	return ""
}

// Observe wraps the flood's transport: every Create it sends whose sender
// a persona follows is recorded with Sent at the moment the request is
// handed to next (the SUT cannot have it before), and its answer with
// Answered. The request's body is read and replaced by an identical
// in-memory one; nothing else changes.
func (v *Visibility) Observe(next http.RoundTripper) http.RoundTripper {
	return observer{v: v, next: next}
}

type observer struct {
	v    *Visibility
	next http.RoundTripper
}

// RoundTrip records a Create on its way to next, and its answer.
func (o observer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Method != http.MethodPost {
		return o.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	r2 := *req
	// A *bytes.Reader under NopCloser, as the engine gives it: net/http
	// then writes headers and body in one go.
	r2.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return o.next.RoundTrip(&r2)
	}
	note := ""
	// Every Create the crowd generates says "Create": other bodies are not
	// parsed.
	if bytes.Contains(body, []byte(`"Create"`)) {
		if ci, ok := ParseCreate(body); ok && o.v.Sent(ci.Actor, ci.Note, time.Now()) > 0 {
			note = ci.Note
		}
	}
	resp, err := o.next.RoundTrip(&r2)
	if note != "" {
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		o.v.Answered(note, status)
	}
	return resp, err
}
