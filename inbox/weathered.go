package inbox

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/crowdfed/crowd/signing"
)

// Weathered is what the receiving origin's bad weather did to a delivery
// the inbox still answered: a slow origin's wait.
type Weathered struct {
	// Condition is the origin's weather, as a spec writes it ("slow:30s:0.5").
	Condition string
	// Held is how long the weather held the delivery before the inbox took it.
	Held time.Duration
}

// weatheredKey carries a request's Weathered in its context.
type weatheredKey struct{}

// WithWeathered returns ctx carrying w: ServeHTTP's log line of the
// delivery names the weather, and its duration includes the wait.
func WithWeathered(ctx context.Context, w Weathered) context.Context {
	return context.WithValue(ctx, weatheredKey{}, w)
}

// LogWeathered begins the log line of a delivery that the origin's weather
// (condition, as a spec writes it) answers in the inbox's stead: it reads
// r's body now, up to the inbox's limit, so that the line names the
// activity as the inbox's own lines do (its signature is not checked), and
// returns the func that logs the line once the weather has answered, with
// the status the crowd answered (0 for none: a reset, or a hold that ended)
// and why. A delivery a slow origin held first (WithWeathered in r's
// context) is logged at its arrival, before the wait, which its duration
// includes.
func (in *Inbox) LogWeathered(r *http.Request, condition string) func(status int, reason string) {
	start := in.now()
	arrived := start
	wd, held := r.Context().Value(weatheredKey{}).(Weathered)
	if held { // a slow origin held it first: it arrived before the wait
		arrived = start.Add(-wd.Held)
	}
	e := Entry{Time: arrived.UTC(), Direction: DirIn, Remote: r.RemoteAddr, Method: r.Method,
		URL: r.Host + r.URL.RequestURI(), Headers: safeHeaders(r.Header), Weather: condition, Local: in.inboxOwner(r)}
	if held {
		e.WeatherHeldMS = float64(wd.Held.Microseconds()) / 1000
	}
	var body []byte
	if r.Body != nil {
		// What was read is logged even when the client broke off.
		body, _ = io.ReadAll(io.LimitReader(r.Body, in.cfg.MaxBodyBytes+1))
	}
	if int64(len(body)) > in.cfg.MaxBodyBytes {
		body, e.Truncated = body[:in.cfg.MaxBodyBytes], true
	}
	e.Body, e.BodyBytes = string(body[:min(len(body), in.alog.BodyLimit())]), len(body)
	if act, err := ParseActivity(body); err == nil {
		describe(&e, act)
	}
	e.KeyID = signing.ParseRequest(r.Header).KeyID()
	return func(status int, reason string) {
		e.Status, e.Reason, e.Verdict = status, reason, VerdictRejected
		e.DurationMS = float64(in.now().Sub(arrived).Microseconds()) / 1000
		in.alog.Append(e)
	}
}

// inboxOwner is the id of the crowd actor whose own inbox r is addressed
// to, "" for a shared inbox or a path that is no actor's: the weather
// answers before the router hands the inbox its Recipient, so its log entry
// finds the owner from the Host and path itself.
func (in *Inbox) inboxOwner(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	o, ok := in.world.Origin(strings.ToLower(host))
	if !ok {
		return ""
	}
	if _, a, err := recipientOf(localRecipient(o, r.URL.Path)); err == nil && a != nil {
		return a.ID
	}
	return ""
}

// LogRefused logs a connection, TLS handshake or DNS lookup for the origin
// host that its weather (condition, as a spec writes it) refused on the
// wire, before any request was read: an incoming entry with no Method, the
// host alone as URL, the peer's address as Remote when known ("" when
// not), Verdict rejected, Status 0, and reason saying what happened on the
// wire. It reads nothing and logs no body: it runs on the listener's, the
// handshake's or the DNS query's path.
//
// One attempt of a client can make more than one such entry (its resolver
// asks for A and AAAA; it connects again after a reset; a client that
// rejects a certificate may retry the handshake), so a reader groups the
// entries of one host close in time rather than counting them as tries.
func (in *Inbox) LogRefused(host, condition, remote, reason string) {
	in.alog.Append(Entry{Time: in.now().UTC(), Direction: DirIn, Remote: remote, URL: host,
		Weather: condition, Verdict: VerdictRejected, Reason: reason})
}
