package adminapi

import (
	"encoding/json"
	"time"

	"github.com/crowdfed/crowd/apclient"
)

// WorldInfo is the answer of RouteWorld: the served world. It never carries
// a private key.
type WorldInfo struct {
	Version string       `json:"version"`
	Domain  string       `json:"domain"`
	Zone    string       `json:"zone"`
	Shard   string       `json:"shard,omitempty"`
	Origins []OriginInfo `json:"origins"`
	// HTTPS is the address the crowd's HTTPS listener is bound to (its
	// --https with the port it got: "[::]:8443" listens on every
	// interface): an attached flood reaches the crowd's own origins there
	// without asking a resolver for their names. Absent without one, and
	// from an older crowd (which gave its --https as given).
	HTTPS string `json:"https,omitempty"`
	// Addresses, when the origins have addresses of their own, says which
	// (an attached flood sends from them); absent when they share one.
	Addresses *AddressInfo `json:"addresses,omitempty"`
	// Summary counts the whole world and places the page of Origins in
	// it (RouteWorld pages: WorldQuery); nil from a crowd that lists
	// every origin at once.
	Summary *WorldSummary `json:"summary,omitempty"`
}

// OriginInfo describes one origin.
type OriginInfo struct {
	Index    int         `json:"index"`
	Host     string      `json:"host"`
	Instance ActorInfo   `json:"instance"`
	Actors   []ActorInfo `json:"actors"`
}

// ActorInfo describes one actor and its public key.
type ActorInfo struct {
	Acct  string `json:"acct"`
	ID    string `json:"id"`
	KeyID string `json:"key_id"`
	// KeySHA256 is the hex SHA-256 of the public key's SPKI DER: compare
	// it with what a SUT cached to find a stale key.
	KeySHA256 string `json:"key_sha256"`
	Followers int    `json:"followers"`
	Following int    `json:"following"`
}

// States of a Relation: the follow graph's (actors.State*).
const (
	StatePending  = "pending"
	StateAccepted = "accepted"
	StateRejected = "rejected"
)

// Relation is one follow relation of a crowd actor, as the API shows it
// (the graph also keeps the whole Follow, for the Accept; the API does not).
type Relation struct {
	// Local is the crowd actor's id.
	Local string `json:"local"`
	// Remote is the other actor's id.
	Remote string `json:"remote"`
	// FollowID is the id of the Follow activity that made the relation.
	FollowID string `json:"follow_id"`
	// State is StatePending, StateAccepted or StateRejected.
	State string `json:"state"`
	// Since is when the relation reached its state.
	Since time.Time `json:"since"`
}

// FollowsInfo is one crowd actor's follow relations (RouteFollows).
type FollowsInfo struct {
	Actor     string     `json:"actor"`
	Acct      string     `json:"acct"`
	Followers []Relation `json:"followers"`
	Following []Relation `json:"following"`
}

// FollowingRequest is the body of RouteFollowing: a Follow that another
// process (a separate `crowd flood`) sent, to be registered so the Accept
// that comes back here finds it.
type FollowingRequest struct {
	// Local is the crowd actor that sent the Follow (acct or id).
	Local string `json:"local"`
	// Remote is the followed actor's id.
	Remote string `json:"remote"`
	// FollowID is the Follow's id.
	FollowID string `json:"follow_id"`
}

// OutboxItem is one Create a crowd actor sent: the actor's id and the id
// of the Note it carried, from which the crowd regenerates the Create.
type OutboxItem struct {
	Actor string `json:"actor"`
	Note  string `json:"note"`
}

// MaxOutboxItems is the most items one OutboxRequest may carry.
const MaxOutboxItems = 10000

// OutboxRequest is the body of RouteOutbox: Creates sent, in the order
// they left.
type OutboxRequest struct {
	Items []OutboxItem `json:"items"`
}

// OutboxResult is RouteOutbox's answer.
type OutboxResult struct {
	// Recorded is how many items the outboxes took (all of the request).
	Recorded int `json:"recorded"`
}

// PruneRequest is the body of RoutePrune, which refuses a field it lacks
// (DecodeStrictBody): a field added here is omitempty.
type PruneRequest struct {
	// OlderThan is a Go duration ("1h"), at least 0.
	OlderThan string `json:"older_than"`
	// DryRun lists the Follows without forgetting them.
	DryRun bool `json:"dry_run,omitempty"`
}

// PruneResult is RoutePrune's answer.
type PruneResult struct {
	// Stale are the Follows pending for longer than asked, oldest first.
	Stale []Relation `json:"stale"`
	// Removed is how many of them were forgotten (an answer may have
	// arrived for the others since they were listed).
	Removed int `json:"removed"`
}

// SendRequest is the body of RouteSend: one activity to send by hand. The
// route refuses a field it lacks (DecodeStrictBody): a field added here is
// omitempty.
type SendRequest struct {
	// From is the crowd actor that sends (acct or id).
	From string `json:"from"`
	// Type is Follow, Undo (of From's last Follow of To), Create (a public
	// Note mentioning To) or Like (of Object).
	Type string `json:"type"`
	// To is the target: acct:name@host, name@host or an actor URL.
	To string `json:"to"`
	// Object is, for Like, the URL of the post; for Create, optionally a
	// whole object to wrap instead of the generated Note.
	Object json.RawMessage `json:"object,omitempty"`
	// Inbox overrides where to POST (default: the target's inbox; its
	// shared inbox for Create).
	Inbox string `json:"inbox,omitempty"`
	// AllowPublicTarget lets the send reach hosts with public addresses
	// (crowd send --allow-public-target); by default every host the send
	// talks to (WebFinger, the actor, the inbox) must resolve to loopback
	// or a private network, as for a flood.
	AllowPublicTarget bool `json:"allow_public_target,omitempty"`
	// Tamper, when set, forges the send (Create or Like only) as one
	// tamper kind: body, digest-unsigned, wrong-key, date, created,
	// target, replay or unknown-key (see ForgedSend). An unknown kind is
	// 400.
	Tamper string `json:"tamper,omitempty"`
	// Signature is the HTTP signature scheme to sign with (crowd send
	// --signature): "cavage" (the default when empty) or "rfc9421".
	Signature string `json:"signature,omitempty"`
}

// SendResult is the answer of RouteSend: what was sent and what came back.
// A non-2xx answer of the target is a result, not an error.
type SendResult struct {
	// Activity is the body that was sent.
	Activity json.RawMessage `json:"activity"`
	// Inbox is where it was POSTed.
	Inbox string `json:"inbox"`
	// Status is the answer's status code, 0 when there was no answer.
	Status int `json:"status"`
	// Body is the start of the answer's body (at most 4 KiB).
	Body string `json:"body"`
	// DurationMS is how long the answer took.
	DurationMS float64 `json:"duration_ms"`
	// Error says why there was no answer.
	Error string `json:"error,omitempty"`
	// Forged, for a send with a Tamper, says what the forgery drew.
	Forged *ForgedSend `json:"forged,omitempty"`
}

// LookupResult is the answer of RouteLookup (what `crowd lookup` shows):
// the documents a real server would fetch, and what it would object to.
type LookupResult struct {
	// Resource is what was looked up (acct:name@host or a URL).
	Resource string `json:"resource"`
	// WebFinger is the account's JRD, for an acct resource.
	WebFinger *apclient.JRD `json:"webfinger,omitempty"`
	// WebFingerRedirect is the JRD of the account WebFinger's subject
	// named, when that was another than the one asked (a vanity domain's):
	// Mastodon asks again, and takes this answer's self link.
	WebFingerRedirect *apclient.JRD `json:"webfinger_redirect,omitempty"`
	// URL is the actor document's URL (the WebFinger self href, or the
	// resource itself), and FinalURL where it was served after redirects.
	URL      string `json:"url,omitempty"`
	FinalURL string `json:"final_url,omitempty"`
	// Status and ContentType are the signed GET's answer.
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// Document is the actor document as served.
	Document json.RawMessage `json:"document,omitempty"`
	// Notes say what the lookup could not show and a server would meet:
	// a crowd origin in weather, which the in-process lookup does not
	// meet. Absent when there is nothing.
	Notes []string `json:"notes,omitempty"`
	// Problems lists what a real server (Mastodon, GoToSocial, Fedify)
	// would refuse or stumble over; empty when there is nothing.
	Problems []string `json:"problems"`
}

// Delivery is one outgoing activity in the crowd's persistent queue: an
// item of RouteDeliveries, and the file the inbox keeps for it until it is
// delivered or given up.
type Delivery struct {
	// ID names the delivery (hex); the same ID is queued only once at a
	// time. Empty: the inbox's Enqueue makes one.
	ID string `json:"id"`
	// Type is the activity's type, for logs and metrics.
	Type string `json:"type"`
	// From is the id of the crowd actor that signs the delivery.
	From string `json:"from"`
	// To is the recipient actor's id; when Inbox is empty its inbox is
	// found by fetching it (a signed GET) at delivery time.
	To string `json:"to,omitempty"`
	// Inbox is the URL to POST to, when already known.
	Inbox string `json:"inbox,omitempty"`
	// Activity is the exact body to send.
	Activity json.RawMessage `json:"activity"`
	// Attempts is how many tries have failed so far.
	Attempts int `json:"attempts"`
	// Created is when the delivery was queued; NextAt when it is due.
	Created time.Time `json:"created"`
	NextAt  time.Time `json:"next_at"`
	// LastError is why the last try failed.
	LastError string `json:"last_error,omitempty"`
}

// AddressInfo is how the crowd's origins are addressed when each has its
// own address (crowd serve --advertise with a range): an attached flood
// computes every origin's address from it, as the crowd does, and sends
// from it.
type AddressInfo struct {
	// Advertise is the --advertise value, a list of addresses and CIDR
	// prefixes.
	Advertise string `json:"advertise"`
	// Origins is the number of origins of the whole world, every shard's.
	Origins int `json:"origins"`
}
