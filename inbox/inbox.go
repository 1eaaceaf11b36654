// Package inbox is the crowd's receiving side: the per-actor and shared
// inboxes of every origin, the Accepts they owe, and the record of it all.
//
// An incoming POST is checked in this order, each failure answered with
// its status and a human reason in the body: known recipient (404),
// Content-Type (415), body size (413, without reading the rest), HTTP
// signature (401; an RFC 9421 request the verifier cannot check is also
// 401, so the sender falls back to draft-cavage), well-formed activity
// (400), key owner equal to the activity's actor (401); then 202.
//
// A Follow of a crowd actor is recorded in the follow graph and its Accept
// queued durably before the 202; the Accept is delivered by a persistent
// queue that retries with exponential backoff and jitter and gives up
// loudly. Undo(Follow) removes the follower; Accept and Reject of the
// crowd's own Follows update its following. Everything else is verified,
// counted, logged and answered 202.
//
// Two deliberate exceptions to "verify everything": a crowd actor's keyId
// is resolved from the world without any HTTP (the flood's standalone loop
// and self-tests depend on it being fast), and a Delete whose object is its
// own (non-crowd) actor is answered 202 without verification, because that
// actor's key is gone (its document answers 410) and Mastodon sends such
// Deletes to every server it ever talked to; Mastodon's own inbox skips
// them the same way. Deliveries to the crowd's own origins are served
// in-process (still signed and verified) unless Config.NetworkSelfDelivery.
//
// Every GET the inbox makes (keys while verifying, actors to deliver to,
// lookups) goes through one apclient.Fetcher, signed by the instance actor
// of the origin concerned.
//
// Every activity in and out goes to the ActivityLog, which the admin routes
// (AdminRoutes) serve as JSON and as a live Server-Sent Events stream. The
// admin routes and their documents are adminapi's: the inbox implements
// them, and its log entries and queued deliveries are adminapi's types.
package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/internal/dialguard"
	"github.com/crowdfed/crowd/signing"
)

// DeliveryConfig tunes the delivery queue. Zero fields take the defaults.
type DeliveryConfig struct {
	// Workers is how many deliveries are attempted at once; default 8.
	Workers int
	// MaxPending bounds the queue; default 10000. A Follow whose Accept
	// finds it full is answered 503 with Retry-After.
	MaxPending int
	// MaxAttempts is how many tries a delivery gets; default 8.
	MaxAttempts int
	// BaseDelay is the wait after the first failure, doubling after each
	// further one; default 5 s (8 attempts span about 10 minutes).
	BaseDelay time.Duration
	// MaxDelay caps one wait, Retry-After included; default 5 min.
	MaxDelay time.Duration
	// Jitter spreads each wait by ± this fraction; default 0.2.
	Jitter float64
	// Timeout bounds one attempt (inbox resolution and POST); default 30 s.
	Timeout time.Duration
}

// Config is what an Inbox needs. World is required; the rest defaults.
type Config struct {
	// World is the crowd's world: recipients, keys and the follow graph.
	World *actors.World
	// Client makes every outgoing request (deliveries, key and actor
	// fetches, WebFinger). The caller builds it to trust the crowd's CA
	// and the system roots; default a client with a 30 s timeout.
	Client *http.Client
	// Signer signs outgoing POSTs and GETs; default signing.NewSigner with
	// default options.
	Signer *signing.Signer
	// StateDir holds the delivery queue (StateDir/outbox) and the activity
	// log (StateDir/activity.jsonl); default the world's state dir.
	StateDir string
	// Logger receives the inbox's logs; nil means none.
	Logger *zap.Logger
	// Registerer receives the inbox's metrics; nil means a private
	// registry nobody scrapes.
	Registerer prometheus.Registerer
	// MaxBodyBytes is the largest activity accepted; default 1 MiB.
	MaxBodyBytes int64
	// DateWindow is the clock-skew margin of Mastodon's window (a Date is
	// good from this far ahead to 5 min + this old; signing.Verifier);
	// default 1 h, as Mastodon's.
	DateWindow time.Duration
	// KeyTTL and KeyCacheSize bound the cache of remote keys; default 1 h
	// and 10000 entries.
	KeyTTL       time.Duration
	KeyCacheSize int
	// Delivery tunes the delivery queue.
	Delivery DeliveryConfig
	// Log tunes the activity log (its Dir defaults to StateDir).
	Log LogOptions
	// Keys, when set, resolves keyIds that are not the crowd's own instead
	// of the built-in KeyCache (tests, benchmarks).
	Keys signing.KeyResolver
	// NetworkSelfDelivery sends deliveries to the crowd's own origins over
	// the network like any other; by default they are served in-process
	// (still signed and verified), so a crowd that follows itself needs no
	// DNS.
	NetworkSelfDelivery bool
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ResolveTarget resolves the hosts of a manual send (SendActivity) for
	// its public-target check; default the system resolver. Tests map
	// their names to loopback here.
	ResolveTarget dialguard.Resolver
	// OriginWeather is the condition the crowd's weather puts its origin
	// host in ("down", "slow:30s:0.5"), "" when clear; nil: always clear.
	// A lookup of one of the crowd's own actors is served in-process,
	// where the weather does not reach, and notes it.
	OriginWeather func(host string) string
}

// Inbox serves the crowd's inboxes, delivers what they owe, and logs
// everything. Build it with New, serve it (it is an http.Handler), Start
// its delivery workers, and Shutdown at the end.
type Inbox struct {
	cfg      Config
	world    *actors.World
	log      *zap.Logger
	client   *http.Client      // deliveries (POSTs)
	fetcher  *apclient.Fetcher // every GET: keys, actors, WebFinger
	signer   *signing.Signer
	keys     *signing.KeyCache
	verifier *signing.Verifier
	alog     *ActivityLog
	queue    *queue
	metrics  *metrics
	inboxes  *inboxCache
	now      func() time.Time

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	workers sync.WaitGroup
	done    chan struct{} // closed by EndStreams: live streams end
}

// New builds an Inbox: opens the activity log, loads the pending
// deliveries from the state dir (they are sent once Start runs), and
// registers the metrics.
func New(cfg Config) (*Inbox, error) {
	if cfg.World == nil || len(cfg.World.Origins) == 0 {
		return nil, errors.New("inbox: no world")
	}
	cfg.setDefaults()
	d := &cfg.Delivery
	in := &Inbox{cfg: cfg, world: cfg.World, log: cfg.Logger, client: cfg.Client, signer: cfg.Signer,
		now: cfg.Now, inboxes: newInboxCache(10000, 10*time.Minute), done: make(chan struct{})}
	in.fetcher = apclient.New(apclient.Options{Client: cfg.Client, Signer: cfg.Signer, As: in.fetchAs})
	in.keys = signing.NewKeyCache(signing.KeyCacheOptions{
		Fetcher:    in.fetcher,
		TTL:        cfg.KeyTTL,
		MaxEntries: cfg.KeyCacheSize,
		Now:        cfg.Now,
	})
	in.verifier = &signing.Verifier{Keys: signing.KeyResolverFunc(in.resolveKey), Window: cfg.DateWindow, Now: cfg.Now,
		Backend: in.world.Backend()}
	q, err := openQueue(cfgOutboxDir(cfg.StateDir), d.MaxPending, cfg.Now(), in.log)
	if err != nil {
		return nil, err
	}
	in.queue = q
	m, err := newMetrics(cfg.Registerer, func() float64 { return float64(in.queue.depth()) },
		func() float64 { return float64(in.keys.Len()) })
	if err != nil {
		return nil, fmt.Errorf("inbox: metrics: %w", err)
	}
	in.metrics = m
	lo := cfg.Log
	lo.OnLost = m.lost.Inc
	alog, err := OpenLog(lo)
	if err != nil {
		return nil, err
	}
	in.alog = alog
	if n := q.depth(); n > 0 {
		in.log.Info("deliveries pending from a previous run", zap.Int("pending", n))
	}
	return in, nil
}

// setDefaults fills what cfg leaves zero with the documented defaults.
func (cfg *Config) setDefaults() {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Signer == nil {
		cfg.Signer = signing.NewSigner(signing.SignerOptions{})
	}
	if cfg.StateDir == "" {
		cfg.StateDir = cfg.World.Config.StateDir
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log.Dir == "" {
		cfg.Log.Dir = cfg.StateDir
	}
	if cfg.Log.Logger == nil {
		cfg.Log.Logger = cfg.Logger
	}
	cfg.Delivery.setDefaults()
}

// setDefaults fills what d leaves zero with the documented defaults.
func (d *DeliveryConfig) setDefaults() {
	if d.Workers <= 0 {
		d.Workers = 8
	}
	if d.MaxPending <= 0 {
		d.MaxPending = 10000
	}
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = 8
	}
	if d.BaseDelay <= 0 {
		d.BaseDelay = 5 * time.Second
	}
	if d.MaxDelay <= 0 {
		d.MaxDelay = 5 * time.Minute
	}
	if d.Jitter <= 0 {
		d.Jitter = 0.2
	}
	if d.Timeout <= 0 {
		d.Timeout = 30 * time.Second
	}
}

func cfgOutboxDir(stateDir string) string { return filepath.Join(stateDir, "outbox") }

// Log is the activity log.
func (in *Inbox) Log() *ActivityLog { return in.alog }

// Keys is the cache of remote keys (for diagnostics and invalidation).
func (in *Inbox) Keys() *signing.KeyCache { return in.keys }

// Start runs the delivery workers until ctx ends or Shutdown. Pending
// deliveries, including those loaded from a previous run, go out first.
func (in *Inbox) Start(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.started {
		return errors.New("inbox: already started")
	}
	in.started = true
	ctx, in.cancel = context.WithCancel(ctx)
	for range in.cfg.Delivery.Workers {
		in.workers.Add(1)
		go func() {
			defer in.workers.Done()
			in.worker(ctx)
		}()
	}
	return nil
}

// EndStreams ends the live activity streams (RouteStream), which would
// otherwise hold an HTTP server's graceful shutdown open; the inbox goes
// on taking and logging deliveries. Call it before the servers' shutdown,
// and Shutdown after it, so that the deliveries in flight are journaled.
func (in *Inbox) EndStreams() {
	in.mu.Lock()
	defer in.mu.Unlock()
	select {
	case <-in.done:
	default:
		close(in.done)
	}
}

// Shutdown ends live activity streams (EndStreams), stops the delivery
// workers (an attempt in flight is abandoned and stays queued on disk for
// the next Start) and flushes and closes the activity log, all within
// ctx. Requests still arriving after it are answered and logged in memory
// only: shut the HTTP servers down first (after EndStreams).
func (in *Inbox) Shutdown(ctx context.Context) error {
	in.EndStreams()
	in.mu.Lock()
	if in.cancel != nil {
		in.cancel()
	}
	in.mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		in.workers.Wait()
		close(stopped)
	}()
	var errs []error
	select {
	case <-stopped:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("inbox: delivery workers still running: %w", ctx.Err()))
	}
	closed := make(chan error, 1)
	go func() { closed <- in.alog.Close() }()
	select {
	case err := <-closed:
		errs = append(errs, err)
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("inbox: activity log not flushed: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// originKey carries an origin in a request's context, so the GETs made for
// it (key fetches while verifying what it received, actor fetches for what
// it sends) are signed by that origin's instance actor.
type originKey struct{}

// fetchAs is the fetcher's signing identity for a GET: the instance actor
// of the origin in its context (the first origin otherwise). GoToSocial and
// Mastodon in authorized-fetch mode refuse unsigned GETs.
func (in *Inbox) fetchAs(req *http.Request) apclient.Identity {
	o, ok := req.Context().Value(originKey{}).(*actors.Origin)
	if !ok || o == nil {
		o = in.world.Origins[0]
	}
	return apclient.Identity{KeyID: o.Instance.KeyID, Key: o.Instance.SigningKey()}
}

// resolveKey resolves the crowd's own keys from the world, with no HTTP:
// the flood's standalone loop and self-tests come through here and must be
// fast. Other keys go to the KeyCache (or Config.Keys).
func (in *Inbox) resolveKey(ctx context.Context, keyID string, refresh bool) (signing.PublicKey, error) {
	if a, ok := in.world.ActorByKeyID(keyID); ok {
		return signing.PublicKey{Key: a.Key.Public(), Owner: a.ID, ID: a.KeyID}, nil
	}
	if _, ok := in.world.Origin(actors.HostOf(keyID)); ok {
		// One of our own origins: we know every key it has, so there is
		// nothing to fetch.
		return signing.PublicKey{}, fmt.Errorf("%w: %s is on a crowd origin but is no crowd actor's key", signing.ErrKeyUnavailable, keyID)
	}
	if in.cfg.Keys != nil {
		return in.cfg.Keys.ResolveKey(ctx, keyID, refresh)
	}
	return in.keys.ResolveKey(ctx, keyID, refresh)
}

// reply is a handler's answer: status, the reason sent in the body of a
// rejection, a note for the log on what the crowd did, and Retry-After.
type reply struct {
	status     int
	reason     string
	note       string
	retryAfter int
}

func reject(status int, format string, args ...any) reply {
	return reply{status: status, reason: fmt.Sprintf(format, args...)}
}

// ServeHTTP answers a POST to the inbox its context's Recipient names (see WithRecipient: an
// inbox, /actor/inbox or /users/{name}/inbox of one origin) and logs it.
func (in *Inbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := in.now()
	e := Entry{Time: start.UTC(), Direction: DirIn, Remote: r.RemoteAddr, Method: r.Method,
		URL: r.Host + r.URL.RequestURI(), Headers: safeHeaders(r.Header)}
	sig := signing.ParseRequest(r.Header)
	rep, verified, compactBody := in.receive(w, r, sig, &e)
	if !verified {
		// A request the verifier did not check is logged with the keyId it names.
		e.KeyID = sig.KeyID()
	}
	h := w.Header()
	if rep.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(rep.retryAfter))
	}
	if rep.status == http.StatusMethodNotAllowed {
		h.Set("Allow", http.MethodPost)
	}
	if rep.status >= 300 {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.reason+"\n")
	} else {
		w.WriteHeader(rep.status)
	}
	e.Status, e.Reason, e.Note = rep.status, rep.reason, rep.note
	e.Verdict = VerdictAccepted
	if rep.status >= 300 {
		e.Verdict = VerdictRejected
	}
	e.DurationMS = float64(in.now().Sub(start).Microseconds()) / 1000
	if wd, ok := r.Context().Value(weatheredKey{}).(Weathered); ok {
		// Held by a slow origin first: it arrived before the wait, which its duration includes.
		e.Weather, e.WeatherHeldMS = wd.Condition, float64(wd.Held.Microseconds())/1000
		e.Time = start.Add(-wd.Held).UTC()
		e.DurationMS += e.WeatherHeldMS
	}
	in.alog.appendEntry(e, compactBody)
	in.metrics.observeInbox(e.Type, rep.status)
	if rep.status >= 500 {
		in.log.Error("inbox could not take an activity", zap.String("type", e.Type), zap.String("id", e.ID),
			zap.Int("status", rep.status), zap.String("reason", rep.reason))
	}
}

// Recipient is whose inbox a request is for, as the origin router found it from the Host and
// the path: the router resolves it once and hands it down with WithRecipient.
type Recipient struct {
	// Origin is the origin the request's Host names.
	Origin *actors.Origin
	// Name is the actor of a personal inbox (/users/{name}/inbox); "" with Instance false is
	// the origin's shared inbox (/inbox).
	Name string
	// Instance is the instance actor's inbox (/actor/inbox).
	Instance bool
}

// recipientKey carries a request's Recipient in its context.
type recipientKey struct{}

// WithRecipient returns ctx carrying rc, which ServeHTTP reads instead of the Host and path.
func WithRecipient(ctx context.Context, rc Recipient) context.Context {
	return context.WithValue(ctx, recipientKey{}, rc)
}

// recipient finds the crowd actor the request's Recipient names; for the shared inbox it is
// nil. A request no router addressed names no origin.
func (in *Inbox) recipient(r *http.Request) (*actors.Origin, *actors.Actor, error) {
	rc, ok := r.Context().Value(recipientKey{}).(Recipient)
	if !ok || rc.Origin == nil {
		return nil, nil, fmt.Errorf("no origin %q is served here", r.Host)
	}
	return recipientOf(rc)
}

// recipientOf is the crowd actor rc names (nil for its origin's shared
// inbox), an error for a name that is no person of the origin.
func recipientOf(rc Recipient) (*actors.Origin, *actors.Actor, error) {
	switch {
	case rc.Instance:
		return rc.Origin, rc.Origin.Instance, nil
	case rc.Name == "":
		return rc.Origin, nil, nil
	}
	if a, ok := rc.Origin.Actor(rc.Name); ok && a.Kind == actors.KindPerson {
		return rc.Origin, a, nil
	}
	return nil, nil, fmt.Errorf("no actor %q on %s", rc.Name, rc.Origin.Host)
}

// receive runs the checks in order and acts on the activity; sig is r's signature header,
// parsed once. verified says the signature was checked, and e.KeyID set to its keyId;
// compactBody that the body parsed as compact JSON (parseActivity), for the log's writer.
func (in *Inbox) receive(w http.ResponseWriter, r *http.Request, sig signing.RequestSignature, e *Entry) (rep reply, verified, compactBody bool) {
	if r.Method != http.MethodPost {
		return reject(http.StatusMethodNotAllowed, "an inbox takes POST, not %s", r.Method), false, false
	}
	origin, local, err := in.recipient(r)
	if err != nil {
		return reject(http.StatusNotFound, "unknown recipient: %v", err), false, false
	}
	if local != nil {
		e.Local = local.ID
	}
	if ct := r.Header.Get("Content-Type"); !activityMediaType(ct) {
		return reject(http.StatusUnsupportedMediaType,
			"Content-Type %q is not application/activity+json or application/ld+json", ct), false, false
	}
	limit := in.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		e.BodyBytes = int(min(r.ContentLength, 1<<40))
		return reject(http.StatusRequestEntityTooLarge, "body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit), false, false
	}
	// MaxBytesReader also tells the server to close the connection rather
	// than drain a body that is too large.
	body, err := readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	e.Body, e.BodyBytes = loggedBody(body, in.alog.BodyLimit()), len(body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return reject(http.StatusRequestEntityTooLarge, "body exceeds the limit of %d bytes", limit), false, false
	}
	if err != nil {
		return reject(http.StatusBadRequest, "reading the body: %v", err), false, false
	}
	// Parse early, leniently, so even a rejected request shows its
	// activity in the log; the parse is enforced after the signature.
	act, compactBody, perr := parseActivity(body)
	if perr == nil {
		describe(e, act)
	}
	if perr == nil && act.Type == "Delete" && in.isSelfDeleteOfStranger(act, sig.KeyID()) {
		return reply{status: http.StatusAccepted, note: "Delete of an actor by itself: accepted without fetching its key, " +
			"which is gone (410) by now; Mastodon sends these to every server it knows and skips them the same way"}, false, compactBody
	}
	ctx := context.WithValue(r.Context(), originKey{}, origin)
	v, err := in.verifier.VerifyParsed(ctx, r, body, sig)
	if err != nil {
		return reject(http.StatusUnauthorized, "signature: %v", err), false, compactBody
	}
	e.KeyID = v.KeyID
	if perr != nil {
		return reject(http.StatusBadRequest, "%v", perr), true, compactBody
	}
	if v.Owner != act.Actor {
		return reject(http.StatusUnauthorized, "the key %s belongs to %s, but the activity's actor is %s", v.KeyID, v.Owner, act.Actor), true, compactBody
	}
	return in.dispatch(act, body), true, compactBody
}

// readBody reads r to its end into a buffer sized from the declared
// length (one allocation for a delivery of any usual size, where
// io.ReadAll grows from 512 bytes through several); a body longer than
// declared, or of unknown length, still reads whole. The buffer made
// before any byte arrives is at most maxPreallocated, so a peer that
// declares a large body and trickles it holds no more than that beyond
// the bytes it sent, while its request lasts (loggedBody keeps no such
// buffer).
func readBody(r io.Reader, declared int64) ([]byte, error) {
	const maxPreallocated = 64 << 10
	var b bytes.Buffer
	// ReadFrom wants MinRead bytes free before each read: room for them
	// beyond the body spares it a second allocation at the end.
	b.Grow(int(min(max(declared, 0), maxPreallocated)) + bytes.MinRead)
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// loggedBody is body as the activity log keeps it, cut at limit. A body
// within the limit (every usual delivery) is not copied: the string shares
// the buffer readBody made, which nothing writes after it is read. A
// longer one is copied up to the limit, so the log does not hold the whole;
// so is one whose buffer is much larger than itself (a peer that declared
// 64 KiB and sent 10 bytes), so that an entry holds at most about twice
// its body.
func loggedBody(body []byte, limit int) string {
	if len(body) > limit || cap(body) > 2*len(body)+2*bytes.MinRead {
		return string(body[:min(len(body), limit)])
	}
	return unsafe.String(unsafe.SliceData(body), len(body))
}

// activityMediaType accepts application/activity+json and
// application/ld+json (any profile), as every ActivityPub server sends.
func activityMediaType(ct string) bool {
	// The two forms servers send, taken without ParseMediaType's parse
	// and the map of parameters it makes for every delivery.
	if ct == actors.ContentTypeActivity || ct == actors.ContentTypeLD {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/activity+json" || mt == "application/ld+json"
}

func describe(e *Entry, act Activity) {
	e.ID, e.Type, e.Actor = act.ID, act.Type, act.Actor
	o := act.Object()
	e.Object, e.ObjectType = o.ID, o.Type
}

// isSelfDeleteOfStranger: a Delete whose object is its own actor, not a
// crowd actor, signed with a key on the actor's host. The actor's key is
// gone (its document answers 410), so verifying would mean a futile fetch
// per Delete; Mastodon answers these 202 before checking the signature
// and so does the crowd. A crowd actor's self-Delete is verified as usual.
func (in *Inbox) isSelfDeleteOfStranger(act Activity, keyID string) bool {
	if act.Type != "Delete" || act.Object().ID != act.Actor || keyID == "" {
		return false
	}
	if _, ok := in.world.ActorByID(act.Actor); ok {
		return false
	}
	return actors.HostOf(keyID) == actors.HostOf(act.Actor)
}
