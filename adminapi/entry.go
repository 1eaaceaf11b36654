package adminapi

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Directions of an Entry.
const (
	DirIn  = "in"
	DirOut = "out"
)

// Verdicts of an Entry.
const (
	// VerdictAccepted: an incoming activity was verified and answered 2xx.
	VerdictAccepted = "accepted"
	// VerdictRejected: an incoming request was refused with a 4xx or 5xx.
	VerdictRejected = "rejected"
	// VerdictDelivered: an outgoing delivery was answered 2xx.
	VerdictDelivered = "delivered"
	// VerdictRetrying: an outgoing delivery failed and will be retried.
	VerdictRetrying = "retrying"
	// VerdictGaveUp: an outgoing delivery failed for good.
	VerdictGaveUp = "gave_up"
	// VerdictSent: a manual send (Send) got an answer, whatever its status.
	VerdictSent = "sent"
	// VerdictFailed: a manual send got no answer at all.
	VerdictFailed = "failed"
)

// Entry is one activity in or out, as the activity log keeps it: a line of
// its journal (activity.jsonl) and an item of RouteActivities and
// RouteStream, in the same JSON (MarshalJSON; UnmarshalJSON also reads the
// older form, where every body was a JSON string). Headers
// never carry secrets: cookies and non-signature Authorization values are
// left out, and Signature headers (public by nature) are kept.
type Entry struct {
	// Seq numbers entries from 1 in the order they were logged; it
	// continues across restarts from the last entry on disk.
	Seq uint64 `json:"seq"`
	// Time is when the request arrived or the delivery was attempted.
	Time time.Time `json:"time"`
	// Direction is DirIn or DirOut.
	Direction string `json:"direction"`
	// Remote is the peer's address (in) or the inbox's host (out).
	Remote string `json:"remote,omitempty"`
	// Method and URL are the request's; URL is absolute (scheme-less for
	// incoming requests: host + request URI). An incoming entry with
	// Method "" read no request: the origin's weather (Weather) refused a
	// connection, a TLS handshake or a DNS lookup on the wire (down,
	// tls-expired, tls-wrong-name, nxdomain); URL is then the host alone
	// ("flood3.test"), Remote the client when known, Status 0 and Reason
	// what happened ("connection reset: the origin is down"). One attempt
	// of a client can make several such entries (an A and an AAAA query, a
	// connect tried again): group those of one host close in time.
	Method string `json:"method"`
	URL    string `json:"url"`
	// Headers are the request's headers, secrets removed.
	Headers http.Header `json:"headers,omitempty"`
	// Body is the request body, cut at the log's body limit. Its JSON
	// (MarshalJSON) embeds it as a JSON value when it is one, compacted,
	// so an entry read back from JSON holds the compacted text; a body
	// that is not JSON, or was cut, is a string flagged by
	// "body_encoding": "string". The key comes last in the JSON.
	Body string `json:"body,omitempty"`
	// BodyBytes is the full body length; Truncated says Body was cut.
	BodyBytes int  `json:"body_bytes"`
	Truncated bool `json:"truncated,omitempty"`
	// ID, Type, Actor, Object and ObjectType describe the activity, as far
	// as its body could be parsed.
	ID         string `json:"id,omitempty"`
	Type       string `json:"type,omitempty"`
	Actor      string `json:"actor,omitempty"`
	Object     string `json:"object,omitempty"`
	ObjectType string `json:"object_type,omitempty"`
	// Local is the crowd actor the activity was addressed to (in) or sent
	// by (out), when known.
	Local string `json:"local,omitempty"`
	// To is the recipient actor of an outgoing delivery, when known.
	To string `json:"to,omitempty"`
	// KeyID is the keyId of the request's signature, when there was one.
	KeyID string `json:"key_id,omitempty"`
	// Verdict is one of the Verdict constants; Reason says why (always set
	// for rejections and failures); Note says what the crowd did with it.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Note    string `json:"note,omitempty"`
	// Status is the HTTP status answered (in) or received (out), 0 if none.
	Status int `json:"status"`
	// Attempt numbers the tries of a queued delivery (1-based).
	Attempt int `json:"attempt,omitempty"`
	// DurationMS is how long the answer took, in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Response is the start of the answer's body (out only).
	Response string `json:"response,omitempty"`
	// Weather is the receiving origin's bad weather, as a spec writes its
	// condition ("flaky:0.3"), when it answered the delivery in the inbox's
	// stead (Status is then the crowd's answer, 0 for none: a reset or a
	// hold) or held it before the inbox answered (a slow origin), or
	// refused it before any request was read (Method "").
	Weather string `json:"weather,omitempty"`
	// WeatherHeldMS is how long a slow origin held the delivery before the
	// inbox took it, in milliseconds; DurationMS includes it.
	WeatherHeldMS float64 `json:"weather_held_ms,omitempty"`
}

// activityTypeList is every activity type IsActivityType knows, each
// between bars: one list, for the check and for ActivityTypes.
const activityTypeList = "|Create|Update|Delete|Follow|Undo|Accept|Reject|Like|Dislike|Announce|Add|Remove|Block|Flag|Move|" +
	"EmojiReact|Question|Listen|Read|View|Arrive|Invite|Join|Leave|Offer|TentativeAccept|TentativeReject|Travel|Ignore|"

// IsActivityType reports whether t is, in its canonical case, an activity
// type of the ActivityStreams vocabulary or one of the extensions fediverse
// servers send (EmojiReact). A log entry may carry any other type a sender
// chose; this names the ones a reader should expect. The inbox asks it on
// every delivery: a look in one constant string, nothing allocated.
func IsActivityType(t string) bool {
	return t != "" && !strings.Contains(t, "|") && strings.Contains(activityTypeList, "|"+t+"|")
}

// ActivityTypes lists the types IsActivityType knows, in a new slice.
func ActivityTypes() []string { return strings.Split(strings.Trim(activityTypeList, "|"), "|") }

// Filter selects entries, as `crowd tail --actor A --type T` does: the query
// of RouteActivities and RouteStream, and its meaning (Match), which the
// server applies. The zero Filter matches everything.
type Filter struct {
	// Actor matches an entry whose Actor, Local, To or Object is this
	// actor: an id (a #fragment is ignored), an acct ("alice@flood3.test",
	// optionally with "acct:" or "@"), or a bare host name (every actor of
	// that host, every delivery to one of its inboxes, the shared one
	// included, whatever the body names, and the connections, handshakes
	// and lookups its weather refused: the entries with no Method, which
	// name no actor).
	Actor string
	// Type is a comma-separated list of activity types (any case).
	Type string
	// Direction is DirIn, DirOut or "" for both.
	Direction string
}

// Match reports whether e passes the filter.
func (f Filter) Match(e *Entry) bool {
	if f.Direction != "" && f.Direction != e.Direction {
		return false
	}
	if f.Type != "" {
		ok := false
		for t := range strings.SplitSeq(f.Type, ",") {
			if t = strings.TrimSpace(t); t != "" && strings.EqualFold(t, e.Type) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if f.Actor != "" {
		if e.Refused() { // only its host to go by
			return strings.EqualFold(f.Actor, e.URL)
		}
		return matchActor(f.Actor, e.Actor) || matchActor(f.Actor, e.Local) ||
			matchActor(f.Actor, e.To) || matchActor(f.Actor, e.Object) ||
			(e.Direction == DirIn && deliveredTo(f.Actor, e.URL))
	}
	return true
}

// deliveredTo reports whether the filter value want is a bare host and the
// incoming entry's URL (host[:port]/path, as received) was addressed to it:
// a delivery an origin's weather answered, or one to its shared inbox,
// whose body may name no actor of that host.
func deliveredTo(want, url string) bool {
	if strings.ContainsAny(want, "@/") {
		return false
	}
	host, _, _ := strings.Cut(url, "/")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return host != "" && strings.EqualFold(host, want)
}

// matchActor reports whether the actor id v is what the filter value want
// names (an id, an acct or a host).
func matchActor(want, v string) bool {
	if v == "" {
		return false
	}
	v, _, _ = strings.Cut(v, "#")
	if strings.Contains(want, "://") {
		want, _, _ = strings.Cut(want, "#")
		return sameActorURL(want, v)
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return false
	}
	acct := strings.TrimPrefix(TrimAcct(want), "@")
	user, host, ok := strings.Cut(acct, "@")
	if !ok {
		host = acct
	}
	// A host given with its port (a server on 8443) matches ids that keep it.
	if !strings.EqualFold(u.Hostname(), host) && !strings.EqualFold(u.Host, host) {
		return false
	}
	if !ok {
		return true
	}
	// User names have no case (Mastodon's, and the crowd's own), paths
	// may keep the one the account was made with.
	p := strings.ToLower(strings.TrimSuffix(u.Path, "/"))
	user = strings.ToLower(user)
	// The actor itself, or an object under it (its notes: what a Like or
	// an Announce is about).
	return p == "/users/"+user || p == "/@"+user || p == "/u/"+user || strings.HasSuffix(p, "/"+user) ||
		strings.HasPrefix(p, "/users/"+user+"/")
}

// TrimAcct is s without an "acct:" scheme, in any case (ACCT:alice@host).
func TrimAcct(s string) string {
	if len(s) >= 5 && strings.EqualFold(s[:5], "acct:") {
		return s[5:]
	}
	return s
}

// sameActorURL reports whether the URLs a and b name one actor: the same
// scheme, host (any case) and path, a trailing slash apart; a query must be
// the same. Paths keep their case: another server's ids may differ by it.
func sameActorURL(a, b string) bool {
	if a == b {
		return true
	}
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimSuffix(ua.EscapedPath(), "/") == strings.TrimSuffix(ub.EscapedPath(), "/") && ua.RawQuery == ub.RawQuery
}

// Event is what the live log delivers (RouteStream, a Subscription of the
// inbox's log): an entry, and how many entries this reader lost (it read too
// slowly) just before it.
type Event struct {
	Entry Entry
	// Lost is how many matching entries were dropped for this subscriber
	// since the previous event, because it read too slowly.
	Lost uint64
}

// Totals counts every entry the log has recorded in its directory, across
// restarts and rotations (the ring holds only the latest).
type Totals struct {
	// Entries is how many entries were logged.
	Entries uint64 `json:"entries"`
	// In and Out split them by direction.
	In  uint64 `json:"in"`
	Out uint64 `json:"out"`
	// OK counts entries accepted, delivered, or sent and answered 2xx.
	OK uint64 `json:"ok"`
	// Problems counts entries rejected, given up, failed, or sent and
	// answered other than 2xx (retries are neither: they end as one).
	Problems uint64 `json:"problems"`
}

// Add counts e, by its direction and verdict, as the fields' docs say.
func (t *Totals) Add(e *Entry) {
	t.Entries++
	if e.Direction == DirOut {
		t.Out++
	} else {
		t.In++
	}
	sentBad := e.Verdict == VerdictSent && (e.Status < 200 || e.Status > 299)
	switch {
	case e.Verdict == VerdictRejected || e.Verdict == VerdictGaveUp || e.Verdict == VerdictFailed || sentBad:
		t.Problems++
	case e.Verdict == VerdictAccepted || e.Verdict == VerdictDelivered || e.Verdict == VerdictSent:
		t.OK++
	}
}

// TotalsReply is the answer of RouteTotals: the log's totals and the seq of
// the last entry they count, read at one instant (a reader that also follows
// the stream counts only entries above Seq, and so counts each entry once).
type TotalsReply struct {
	Totals
	Seq uint64 `json:"seq"`
}

// Refused reports whether e is a connection, TLS handshake or DNS lookup
// the receiving origin's weather refused on the wire: no request was read
// (Method ""), and its URL is the host alone.
func (e *Entry) Refused() bool { return e.Method == "" && e.Weather != "" }
