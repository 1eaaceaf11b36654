package apclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/crowdfed/crowd/signing"
)

// Actor is what the crowd reads of an actor document. Fields the document
// lacks are empty; URLs are as written (check them with IsHTTPURL).
type Actor struct {
	ID                string
	Type              string // the first type when the document lists several
	PreferredUsername string
	Inbox             string
	SharedInbox       string // endpoints.sharedInbox
	Outbox            string
	Followers         string
	PublicKeys        []PublicKeyRef // publicKey, as an object or an array
}

// PublicKeyRef is one entry of an actor's publicKey, unparsed: checking the
// PEM and the owner is the verifier's business (signing.KeyCache).
type PublicKeyRef struct {
	ID           string `json:"id"`
	Owner        string `json:"owner"`
	PublicKeyPem string `json:"publicKeyPem"`
}

// ParseActor reads an actor document. It fails (ErrDocument) only when body
// is not a JSON object; an empty field is the caller's to judge.
func ParseActor(body []byte) (Actor, error) {
	var doc struct {
		ID                string          `json:"id"`
		Type              json.RawMessage `json:"type"`
		PreferredUsername string          `json:"preferredUsername"`
		Inbox             string          `json:"inbox"`
		Outbox            string          `json:"outbox"`
		Followers         string          `json:"followers"`
		Endpoints         struct {
			SharedInbox string `json:"sharedInbox"`
		} `json:"endpoints"`
		PublicKey json.RawMessage `json:"publicKey"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Actor{}, fmt.Errorf("%w: not an actor object: %v", ErrDocument, err)
	}
	a := Actor{ID: doc.ID, Type: firstType(doc.Type), PreferredUsername: doc.PreferredUsername, Inbox: doc.Inbox,
		SharedInbox: doc.Endpoints.SharedInbox, Outbox: doc.Outbox, Followers: doc.Followers}
	var one PublicKeyRef
	if json.Unmarshal(doc.PublicKey, &a.PublicKeys) != nil && json.Unmarshal(doc.PublicKey, &one) == nil && one != (PublicKeyRef{}) {
		a.PublicKeys = []PublicKeyRef{one}
	}
	return a, nil
}

// firstType reads an ActivityStreams type: a string, or the first string of
// a list.
func firstType(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 && json.Unmarshal(list[0], &s) == nil {
		return s
	}
	return ""
}

// Actor fetches and reads the actor document at target (a signed GET).
func (f *Fetcher) Actor(ctx context.Context, target string) (Actor, error) {
	body, err := f.Get(ctx, target, signing.AcceptActivity)
	if err != nil {
		return Actor{}, err
	}
	a, err := ParseActor(body)
	if err != nil {
		return Actor{}, fmt.Errorf("GET %s: %w", target, err)
	}
	return a, nil
}

// FetchKey fetches the document a keyId names (its #fragment already cut):
// the actor with the key embedded, or a standalone key. It makes a Fetcher a
// signing.KeyFetcher, so a KeyCache fetches with the Fetcher's signature,
// limits and redirect policy.
func (f *Fetcher) FetchKey(ctx context.Context, target string) ([]byte, error) {
	return f.Get(ctx, target, signing.AcceptActivity)
}

// Collection is a collection or a collection page as read: its items
// (orderedItems, then items) unparsed, and its links to the first and next
// pages, each a URL, an {"id"} link or an embedded page.
type Collection struct {
	Items []json.RawMessage
	First json.RawMessage
	Next  json.RawMessage
}

// ParseCollection reads a collection or a collection page. It fails
// (ErrDocument) only when body is not a JSON object of that shape.
func ParseCollection(body []byte) (Collection, error) {
	var doc struct {
		First        json.RawMessage   `json:"first"`
		Next         json.RawMessage   `json:"next"`
		OrderedItems []json.RawMessage `json:"orderedItems"`
		Items        []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return Collection{}, fmt.Errorf("%w: not a collection: %v", ErrDocument, err)
	}
	return Collection{Items: append(doc.OrderedItems, doc.Items...), First: doc.First, Next: doc.Next}, nil
}

// Items reads the items of the collection at target: its own items, then
// its first page and the pages after it, each fetched at most once, until
// maxPages pages were read or yield returns false. The error is for the
// collection itself; a later page that fails ends the walk quietly, since
// what the pages before it gave is usable.
func (f *Fetcher) Items(ctx context.Context, target string, maxPages int, yield func(item json.RawMessage) bool) error {
	seen := map[string]bool{}
	next := target
	var inline json.RawMessage
	for pages := 0; pages <= maxPages; pages++ {
		body := inline
		inline = nil
		if body == nil {
			if next == "" || seen[next] {
				return nil
			}
			seen[next] = true
			b, err := f.Get(ctx, next, signing.AcceptActivity)
			if err != nil {
				if pages == 0 {
					return err
				}
				return nil
			}
			body = b
		}
		c, err := ParseCollection(body)
		if err != nil {
			if pages == 0 {
				return fmt.Errorf("GET %s: %w", target, err)
			}
			return nil
		}
		for _, it := range c.Items {
			if !yield(it) {
				return nil
			}
		}
		// The collection points at its first page, a page at the next one.
		link := c.Next
		if pages == 0 && len(c.First) > 0 {
			link = c.First
		}
		next = ""
		if s, ok := linkURL(link); ok {
			next = s
		} else if len(link) > 0 && link[0] == '{' {
			inline = link
		}
	}
	return nil
}

// linkURL reads a link that is a URL string, or an object with only an id
// (some servers write a first page that is not embedded that way).
func linkURL(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var o struct {
		ID    string            `json:"id"`
		Items []json.RawMessage `json:"items"`
		OI    []json.RawMessage `json:"orderedItems"`
	}
	if json.Unmarshal(raw, &o) == nil && o.ID != "" && o.Items == nil && o.OI == nil {
		return o.ID, true
	}
	return "", false
}

// AcceptJRD is the Accept header of a WebFinger lookup.
const AcceptJRD = "application/jrd+json, application/json"

// WebFinger asks host's WebFinger endpoint (over https, as every server
// does) about acct:user@host and returns the JRD's bytes; Lookup parses
// and judges them. The GET is not signed: no server
// asks for a signature there. Any JSON Content-Type is taken (JRDs are
// served as jrd+json, json and even activity+json; Mastodon does not check).
func (f *Fetcher) WebFinger(ctx context.Context, user, host string) ([]byte, error) {
	u := "https://" + host + "/.well-known/webfinger?resource=" + url.QueryEscape("acct:"+user+"@"+host)
	return f.get(ctx, f.plain, u, AcceptJRD, isJSON)
}

// isJSON reports whether the media type mt is JSON: application/json or
// any application/*+json.
func isJSON(mt string) bool {
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}
