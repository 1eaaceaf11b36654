package inbox

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/signing"
)

// errPermanent marks a delivery failure that no retry can fix (the
// recipient is gone, the target refuses for good).
var errPermanent = errors.New("permanent failure")

// Enqueue queues d durably: when it returns nil, d is on disk and will be
// delivered (by this process's workers once started, or after a restart)
// or given up loudly. An empty ID is filled with a random one; Created
// and NextAt default to now. A delivery whose ID is already pending is
// not queued twice. Errors wrap ErrQueueFull or ErrBadDelivery, or say
// why the file could not be written.
func (in *Inbox) Enqueue(d Delivery) error {
	now := in.now().UTC()
	if d.ID == "" {
		var b [16]byte
		crand.Read(b[:])
		d.ID = hex.EncodeToString(b[:])
	}
	if d.Created.IsZero() {
		d.Created = now
	}
	if d.NextAt.IsZero() {
		d.NextAt = now
	}
	if d.Type == "" {
		if a, err := ParseActivity(d.Activity); err == nil {
			d.Type = a.Type
		}
	}
	_, err := in.queue.add(&d)
	return err
}

// Pending lists the queued deliveries, earliest due first.
func (in *Inbox) Pending() []Delivery { return in.queue.list() }

// worker attempts due deliveries until ctx ends.
func (in *Inbox) worker(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		d, wait := in.queue.next(in.now())
		if d != nil {
			in.attempt(ctx, d)
			continue
		}
		if wait <= 0 || wait > time.Hour {
			wait = time.Hour
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-in.queue.wake:
		case <-timer.C:
		}
	}
}

// answer is what one POST got.
type answer struct {
	status     int
	body       string
	retryAfter time.Duration
	header     http.Header // the request's headers, as signed
	dur        time.Duration
	err        error
}

// attempt tries d once and then finishes it, schedules its retry, or
// gives it up.
func (in *Inbox) attempt(ctx context.Context, d *Delivery) {
	start := in.now()
	attemptNo := d.Attempts + 1
	e := Entry{Time: start.UTC(), Direction: DirOut, Method: http.MethodPost, Local: d.From, To: d.To,
		Body: string(d.Activity[:min(len(d.Activity), in.alog.BodyLimit())]), BodyBytes: len(d.Activity), Attempt: attemptNo}
	if a, err := ParseActivity(d.Activity); err == nil {
		describe(&e, a)
	}
	if e.Type == "" {
		e.Type = d.Type
	}
	actx, cancel := context.WithTimeout(ctx, in.cfg.Delivery.Timeout)
	defer cancel()
	var ans answer
	inbox := d.Inbox
	from, ok := in.crowdActor(d.From)
	if !ok {
		ans.err = fmt.Errorf("%w: the sender %s is not an actor of this crowd", errPermanent, d.From)
	} else if inbox == "" {
		inbox, ans.err = in.inboxOf(actx, from, d.To)
	}
	if ans.err == nil {
		e.URL, e.Remote = inbox, actors.HostOf(inbox)
		ans = in.post(actx, from, inbox, d.Activity, signing.SchemeCavage)
		e.Headers = ans.header
	}
	if ctx.Err() != nil {
		// Shutting down: the try does not count; the file is untouched.
		in.queue.requeue(d)
		return
	}
	e.Status, e.Response = ans.status, ans.body
	e.DurationMS = float64(ans.dur.Microseconds()) / 1000
	if ans.err == nil && ans.status >= 200 && ans.status < 300 {
		e.Verdict, e.Note = VerdictDelivered, fmt.Sprintf("delivered on try %d", attemptNo)
		in.alog.Append(e)
		in.metrics.observeDelivery(d.Type, outcomeDelivered, ans.dur.Seconds())
		if err := in.queue.finish(d); err != nil {
			in.log.Warn("delivered, but the queue file stays (it will be sent again after a restart)", zap.Error(err))
		}
		return
	}
	reason := failure(ans)
	e.Reason = reason
	latency := -1.0 // no answer, no latency
	if ans.status != 0 {
		latency = ans.dur.Seconds()
	}
	if retryable(ans) && attemptNo < in.cfg.Delivery.MaxAttempts {
		in.metrics.observeDelivery(d.Type, outcomeRetry, latency)
		wait := in.backoff(attemptNo, ans.retryAfter)
		e.Verdict, e.Note = VerdictRetrying, fmt.Sprintf("try %d of %d failed; next in %s", attemptNo, in.cfg.Delivery.MaxAttempts, wait.Round(time.Millisecond))
		in.alog.Append(e)
		err := in.queue.retry(d, func(d *Delivery) {
			d.Attempts, d.NextAt, d.LastError, d.Inbox = attemptNo, in.now().Add(wait).UTC(), reason, inbox
		})
		if err != nil {
			in.log.Warn("delivery queue: could not persist a retry", zap.String("delivery", d.ID), zap.Error(err))
		}
		return
	}
	e.Verdict = VerdictGaveUp
	e.Note = fmt.Sprintf("gave up after %d tries", attemptNo)
	in.alog.Append(e)
	in.metrics.observeDelivery(d.Type, outcomeGaveUp, latency)
	in.log.Error("delivery given up", zap.String("type", d.Type), zap.String("from", d.From), zap.String("to", d.To),
		zap.String("inbox", inbox), zap.Int("attempts", attemptNo), zap.String("reason", reason))
	if err := in.queue.finish(d); err != nil {
		in.log.Warn("given up, but the queue file stays", zap.Error(err))
	}
}

func failure(a answer) string {
	if a.err != nil {
		return a.err.Error()
	}
	s := fmt.Sprintf("HTTP %d %s", a.status, http.StatusText(a.status))
	if b := strings.TrimSpace(a.body); b != "" {
		s += ": " + b
	}
	return s
}

// retryable follows Mastodon's delivery worker: network errors, 5xx, 401
// (the peer may not have our key yet), 408 and 429 are worth another try;
// any other answer will not change.
func retryable(a answer) bool {
	if a.err != nil {
		return !errors.Is(a.err, errPermanent)
	}
	switch a.status {
	case http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	}
	return a.status >= 500
}

// backoff is the wait after the n-th failed try: BaseDelay·2^(n-1), capped
// at MaxDelay, spread by ±Jitter, and at least the peer's Retry-After.
func (in *Inbox) backoff(n int, retryAfter time.Duration) time.Duration {
	c := in.cfg.Delivery
	d := c.BaseDelay
	for i := 1; i < n && d < c.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, c.MaxDelay)
	d = time.Duration(float64(d) * (1 + c.Jitter*(2*rand.Float64()-1)))
	if retryAfter > d {
		d = min(retryAfter, c.MaxDelay)
	}
	return max(d, 0)
}

// post signs body as from with scheme and POSTs it to inbox. A crowd
// origin's inbox is served in-process unless NetworkSelfDelivery is set.
func (in *Inbox) post(ctx context.Context, from *actors.Actor, inbox string, body []byte, scheme signing.Scheme) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, inbox, nil)
	if err != nil {
		return answer{err: fmt.Errorf("%w: inbox %q: %v", errPermanent, inbox, err)}
	}
	if req.URL.Scheme != "https" && req.URL.Scheme != "http" {
		return answer{err: fmt.Errorf("%w: inbox %q is not an http(s) URL", errPermanent, inbox)}
	}
	if err := in.signer.Sign(scheme, req, body, from.KeyID, from.SigningKey()); err != nil {
		return answer{err: fmt.Errorf("%w: signing: %v", errPermanent, err)}
	}
	return in.postSigned(req, body)
}

// postSigned sends req, signed, with body, and reads the answer.
func (in *Inbox) postSigned(req *http.Request, body []byte) answer {
	var err error
	ans := answer{header: safeHeaders(req.Header)}
	start := in.now()
	var resp *http.Response
	if o, local := in.world.Origin(req.URL.Host); local && !in.cfg.NetworkSelfDelivery {
		resp = in.serveLocal(req, body, o)
	} else {
		resp, err = in.client.Do(req)
	}
	if err != nil {
		ans.dur, ans.err = in.now().Sub(start), err
		return ans
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	ans.dur = in.now().Sub(start)
	ans.status, ans.body = resp.StatusCode, string(b)
	ans.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), in.now())
	return ans
}

// serveLocal hands a signed request for an inbox of o, one of the crowd's own origins, to
// ServeHTTP, as the network and the origin router would.
func (in *Inbox) serveLocal(req *http.Request, body []byte, o *actors.Origin) *http.Response {
	sreq := req.Clone(WithRecipient(req.Context(), localRecipient(o, req.URL.Path)))
	sreq.Body = io.NopCloser(bytes.NewReader(body))
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "in-process"
	if req.URL.Scheme == "https" {
		sreq.TLS = &tls.ConnectionState{} // as the network would bring it: an RFC 9421 @target-uri names https
	}
	sreq.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	rec := &recorder{header: http.Header{}}
	in.ServeHTTP(rec, sreq)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{StatusCode: rec.status, Header: rec.header, Body: io.NopCloser(&rec.body), Request: req}
}

// localRecipient is the inbox of o that path names, as the origin router would route it: an
// in-process delivery passes no router, and its URL is one of the crowd's own documents.
func localRecipient(o *actors.Origin, path string) Recipient {
	switch path {
	case "/inbox":
		return Recipient{Origin: o}
	case "/actor/inbox":
		return Recipient{Origin: o, Instance: true}
	}
	return Recipient{Origin: o, Name: strings.TrimSuffix(strings.TrimPrefix(path, "/users/"), "/inbox")}
}

// recorder is the ResponseWriter of an in-process delivery.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// Send signs activity as from and POSTs it to inbox now, bypassing the
// queue (manual sends: `crowd send`, the admin API), logs it, and returns
// what came back. A non-2xx answer is a result, not an error; the error is
// set (and also in adminapi.SendResult.Error) when no answer came.
func (in *Inbox) Send(ctx context.Context, from *actors.Actor, inbox string, activity []byte) (adminapi.SendResult, error) {
	return in.sendTo(ctx, from, "", inbox, activity, signing.SchemeCavage)
}

// sendTo is Send, naming the recipient actor (to) in the log.
func (in *Inbox) sendTo(ctx context.Context, from *actors.Actor, to, inbox string, activity []byte, scheme signing.Scheme) (adminapi.SendResult, error) {
	return in.sendWith(from, to, inbox, activity, func() answer { return in.post(ctx, from, inbox, activity, scheme) })
}

// sendWith is sendTo with the post made by post: activity is the body it
// sends, as logged and answered.
func (in *Inbox) sendWith(from *actors.Actor, to, inbox string, activity []byte, post func() answer) (adminapi.SendResult, error) {
	start := in.now()
	e := Entry{Time: start.UTC(), Direction: DirOut, Method: http.MethodPost, URL: inbox, Remote: actors.HostOf(inbox),
		Local: from.ID, To: to, Body: string(activity[:min(len(activity), in.alog.BodyLimit())]), BodyBytes: len(activity)}
	if a, err := ParseActivity(activity); err == nil {
		describe(&e, a)
	}
	ans := post()
	res := adminapi.SendResult{Activity: json.RawMessage(activity), Inbox: inbox, Status: ans.status, Body: ans.body,
		DurationMS: float64(ans.dur.Microseconds()) / 1000}
	e.Headers, e.Status, e.Response, e.DurationMS = ans.header, ans.status, ans.body, res.DurationMS
	if ans.err != nil {
		res.Error = ans.err.Error()
		e.Verdict, e.Reason = VerdictFailed, res.Error
		in.alog.Append(e)
		in.metrics.observeDelivery(e.Type, outcomeFailed, -1)
		return res, ans.err
	}
	e.Verdict = VerdictSent
	if ans.status >= 300 {
		e.Reason = failure(ans)
	}
	in.alog.Append(e)
	in.metrics.observeDelivery(e.Type, outcomeSent, ans.dur.Seconds())
	return res, nil
}

// fetch GETs target signed by as (an origin's instance actor), asking for
// an actor's ActivityPub document, and returns the answer whatever its
// status. A crowd actor's document is rendered in-process, and any other
// URL of a crowd origin is its 404 there too: the crowd's names need not
// resolve where it runs, and the machine's resolver would report a lookup
// failure for an actor the origin simply does not have. The error is set
// only when there was no usable answer.
func (in *Inbox) fetch(ctx context.Context, as *actors.Actor, target string) (apclient.Response, error) {
	if a, ok := in.crowdActor(target); ok {
		return apclient.Response{URL: target, Status: http.StatusOK, ContentType: actors.ContentTypeActivity, Body: a.DocumentJSON()}, nil
	}
	if u, err := url.Parse(target); err == nil && u.Scheme == "https" {
		if _, ok := in.world.Origin(u.Host); ok {
			return apclient.Response{URL: target, Status: http.StatusNotFound, ContentType: "text/plain; charset=utf-8",
				Body: fmt.Appendf(nil, "no actor at %s on %s\n", u.Path, u.Host)}, nil
		}
	}
	return in.fetcher.Do(context.WithValue(ctx, originKey{}, as.Origin), target, "")
}

// inboxOf finds where to deliver to actorID: a crowd actor's inbox from
// the world, a remote actor's own inbox (its shared inbox only when it
// has none) from its document, fetched signed by the sender origin's
// instance actor and cached.
func (in *Inbox) inboxOf(ctx context.Context, from *actors.Actor, actorID string) (string, error) {
	if a, ok := in.crowdActor(actorID); ok {
		return a.Inbox(), nil
	}
	if v, ok := in.inboxes.get(actorID, in.now()); ok {
		return v, nil
	}
	doc, err := in.fetchActor(ctx, from.Origin.Instance, actorID)
	if err != nil {
		return "", err
	}
	inbox := doc.Inbox
	if inbox == "" {
		inbox = doc.SharedInbox
	}
	if inbox == "" {
		return "", fmt.Errorf("%w: the actor document of %s names no inbox", errPermanent, actorID)
	}
	in.inboxes.put(actorID, inbox, in.now())
	return inbox, nil
}

// fetchActor fetches a remote actor's document signed by as; a crowd
// actor's is read from the world, as the crowd's own names need not resolve
// where it runs. A failure no retry can fix (the actor is gone, the
// document is not an actor's) wraps errPermanent.
func (in *Inbox) fetchActor(ctx context.Context, as *actors.Actor, actorID string) (apclient.Actor, error) {
	if a, ok := in.crowdActor(actorID); ok {
		return apclient.ParseActor(a.DocumentJSON())
	}
	doc, err := in.fetcher.Actor(context.WithValue(ctx, originKey{}, as.Origin), actorID)
	switch code := apclient.StatusCode(err); {
	case err == nil:
		return doc, nil
	case code == http.StatusNotFound || code == http.StatusGone:
		return doc, fmt.Errorf("%w: the actor %s is gone (HTTP %d)", errPermanent, actorID, code)
	case errors.Is(err, apclient.ErrDocument), errors.Is(err, apclient.ErrContentType),
		errors.Is(err, apclient.ErrNotHTTP), errors.Is(err, apclient.ErrTooLarge):
		return doc, fmt.Errorf("%w: the actor document of %s: %w", errPermanent, actorID, err)
	}
	return doc, fmt.Errorf("fetching the actor %s: %w", actorID, err)
}
