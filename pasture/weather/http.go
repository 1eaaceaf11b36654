package weather

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// MaxHold bounds how long a black hole holds a connection: far past any
// SUT's delivery timeout (so the SUT's own timeout decides), yet bounded so
// that a client that never gives up cannot pin a socket and a goroutine for
// good.
const MaxHold = 15 * time.Minute

// maxHeldBody bounds the body a slow origin reads before its wait (reading
// it to the end is what lets the server notice a client that goes away);
// it is the inbox's default limit, and a larger body is left to the inbox,
// which refuses it.
const maxHeldBody = 1 << 20

// RateLimit is the X-RateLimit-Limit a limited origin sends: Mastodon's
// default for most routes (300 requests in 5 minutes).
const RateLimit = 300

// HTTP is the weather on the origins' HTTP path: a middleware that answers
// a request to an origin in bad weather as a real failing server would,
// and hands every other request on untouched. Each request it answers or
// holds is counted in Sky (Sky.Answered). While the weather is clear it
// costs one atomic load.
type HTTP struct {
	// Sky is the weather in force.
	Sky *Sky
	// Host is the host name of the origin r is for; "" (a host the crowd
	// does not serve) is clear weather.
	Host func(r *http.Request) string
	// Deliveries, when set, logs an inbox delivery that the weather answers
	// in the inbox's stead: it is called before the answer (it may read
	// r's body) and the func it returns once the answer is known, with the
	// status the crowd answered (0: none, a reset or a hold) and why.
	Deliveries func(r *http.Request, c Condition) (logged func(status int, reason string))
	// Rand draws a number in [0, 1) for flaky answers and slow documents;
	// nil is math/rand/v2's Float64. It must be safe for concurrent use.
	Rand func() float64
	// Now is the clock of the rate-limit reset time; nil is time.Now.
	Now func() time.Time
	// Closing, when closed, frees every held request at once (a black
	// hole is closed, a slow wait served): the server is shutting down.
	Closing <-chan struct{}
	// MaxHold bounds a black hole's hold; 0 is MaxHold.
	MaxHold time.Duration
	// MaxHeld bounds how many connections black holes hold at once; past
	// it a connection is reset as a down origin's is, so that a SUT's retry
	// storm cannot take every descriptor from the healthy origins. 0 is
	// DefaultMaxHeld.
	MaxHeld int64

	holding atomic.Int64
}

// DefaultMaxHeld is MaxHeld's default: well under a default descriptor
// limit once raised for a server (65 536), with room for the healthy
// origins' connections.
const DefaultMaxHeld = 4096

// Wrap answers the requests to origins in bad weather and hands the rest
// to next: down resets the connection, blackhole holds it unanswered,
// slow waits before next serves, flaky, limited and gone answer in next's
// stead. nxdomain and the tls-* conditions change nothing here: a client
// that reached the origin anyway is answered as usual.
func (h *HTTP) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, next) })
}

// serve answers r as its origin's weather now says.
func (h *HTTP) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	f := h.Sky.Now()
	if f == nil {
		next.ServeHTTP(w, r)
		return
	}
	host := h.Host(r)
	c := f.Condition(host)
	switch c.Kind {
	case Down:
		h.count(r, host)
		h.down(w, r, c)
	case Blackhole:
		h.count(r, host)
		h.blackhole(w, r, host, c, f)
	case Slow:
		h.slow(w, r, next, host, c, f)
	case Flaky:
		h.flaky(w, r, next, host, c)
	case Limited:
		h.count(r, host)
		h.limited(w, r, c)
	case Gone:
		h.count(r, host)
		h.gone(w, r, c)
	default:
		next.ServeHTTP(w, r)
	}
}

// isDelivery reports whether r is a delivery: a POST to an inbox
// (/inbox, /actor/inbox, /users/NAME/inbox).
func isDelivery(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/inbox" || strings.HasSuffix(r.URL.Path, "/inbox"))
}

// count tallies r as a delivery or a document the weather of host
// answered (or held) in the origin's stead.
func (h *HTTP) count(r *http.Request, host string) {
	a := Document
	if isDelivery(r) {
		a = Delivery
	}
	h.Sky.Count(host, a)
}

// begin starts the log line of a delivery the weather answers; silent
// answers (a reset, a hold) read no body when the client waits for a
// 100 Continue, which would be a byte written.
func (h *HTTP) begin(r *http.Request, c Condition, silent bool) func(status int, reason string) {
	if h.Deliveries == nil || !isDelivery(r) {
		return func(int, string) {}
	}
	if silent && r.Header.Get("Expect") != "" {
		r2 := *r
		r2.Body = http.NoBody
		r = &r2
	}
	return h.Deliveries(r, c)
}

func (h *HTTP) rand() float64 {
	if h.Rand != nil {
		return h.Rand()
	}
	return rand.Float64()
}

func (h *HTTP) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// untilChanged is closed once host's weather is no longer c (at once when
// it already is not, f being the forecast c was read from): a change to
// other origins, or a spec that leaves host as it was, does not close it,
// so a hold or a wait goes on. Closing stop ends the watch.
func (h *HTTP) untilChanged(host string, c Condition, f *Forecast, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for {
			ch := h.Sky.Changed() // taken before Now, so a change between the two is not missed
			if now := h.Sky.Now(); now != f {
				if now.Condition(host) != c {
					close(done)
					return
				}
				f = now
			}
			select {
			case <-ch:
			case <-stop:
				return
			}
		}
	}()
	return done
}

// down resets the connection without an answer, as a host whose server is
// not running does (the TLS/SNI and per-address refusals come first, at
// the listener; this is a request that reached the handler anyway).
func (h *HTTP) down(w http.ResponseWriter, r *http.Request, c Condition) {
	logged := h.begin(r, c, true)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 cannot hijack: the stream is reset instead, which the
		// client sees as a reset too.
		logged(0, fmt.Sprintf("the origin is %s: its stream was reset without an answer", c))
		panic(http.ErrAbortHandler)
	}
	raw := rawConn(conn)
	if l, ok := raw.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0) // close with a RST, not a FIN
	}
	raw.Close()
	logged(0, fmt.Sprintf("the origin is %s: the connection was reset without an answer", c))
}

// rawConn is the TCP connection under a TLS one (or under any wrapper
// that hands its connection out as tls.Conn does): closing it writes no
// close_notify, so a dead origin writes no byte at all.
func rawConn(c net.Conn) net.Conn {
	for {
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return c
		}
		c = w.NetConn()
	}
}

// blackhole takes the request and never answers: the connection is held
// until the client closes it, the weather changes, the server shuts down
// or MaxHold passes, then closed without a byte written.
func (h *HTTP) blackhole(w http.ResponseWriter, r *http.Request, host string, c Condition, f *Forecast) {
	limit := h.MaxHeld
	if limit <= 0 {
		limit = DefaultMaxHeld
	}
	if h.holding.Add(1) > limit {
		h.holding.Add(-1)
		h.down(w, r, c)
		return
	}
	defer h.holding.Add(-1)
	logged := h.begin(r, c, true)
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	changed := h.untilChanged(host, c, f, stop)
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2: hold the stream unanswered, then reset it.
		why := h.hold(r.Context(), nil, changed)
		logged(0, fmt.Sprintf("the origin is a %s: held %s without an answer until %s", c, time.Since(start).Round(time.Millisecond), why))
		panic(http.ErrAbortHandler)
	}
	raw := rawConn(conn)
	gone := make(chan struct{})
	go func() {
		// Whatever the client sends is read and dropped; its end (or
		// the close below) ends this goroutine.
		io.Copy(io.Discard, buf)
		close(gone)
	}()
	why := h.hold(context.Background(), gone, changed)
	raw.Close()
	<-gone
	logged(0, fmt.Sprintf("the origin is a %s: held %s without an answer until %s", c, time.Since(start).Round(time.Millisecond), why))
}

// hold waits for the end of a black hole's hold and says what ended it.
// A hijacked connection's request context ends only with its server's
// base context, so gone watches the client instead.
func (h *HTTP) hold(ctx context.Context, gone, changed <-chan struct{}) string {
	bound := h.MaxHold
	if bound <= 0 {
		bound = MaxHold
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-gone:
		return "the client closed the connection"
	case <-ctx.Done():
		return "the client went away"
	case <-changed:
		return "the weather changed"
	case <-h.Closing:
		return "the crowd shut down"
	case <-t.C:
		return fmt.Sprintf("the hold's bound of %s passed", bound)
	}
}

// heldKey carries a slow origin's wait to the handler that serves after it.
type heldKey struct{}

// held is what a slow origin did to a request before serving it.
type held struct {
	c      Condition
	waited time.Duration
}

// Held reports the condition and the wait of a request a slow origin held
// before serving it (the inbox's log line carries them); ok is false for a
// request the weather did not hold.
func Held(ctx context.Context) (c Condition, waited time.Duration, ok bool) {
	v, ok := ctx.Value(heldKey{}).(held)
	return v.c, v.waited, ok
}

// slow waits c.Delay before serving a delivery, and a document at the
// share c.DocShare. The wait ends early when the client goes away (nothing
// is served), the crowd shuts down (served at once) or the origin's weather
// becomes another (answered as that one answers).
func (h *HTTP) slow(w http.ResponseWriter, r *http.Request, next http.Handler, host string, c Condition, f *Forecast) {
	delivery := isDelivery(r)
	if !delivery && h.rand() >= c.DocShare {
		next.ServeHTTP(w, r)
		return
	}
	if delivery {
		r.Body = readAhead(r.Body)
	}
	start := time.Now()
	t := time.NewTimer(c.Delay)
	defer t.Stop()
	stop := make(chan struct{})
	defer close(stop)
	select {
	case <-t.C:
	case <-h.untilChanged(host, c, f, stop):
		// The origin's weather is another now: it answers as that one
		// does, and counts the request as its own.
		h.serve(w, r.WithContext(context.WithValue(r.Context(), heldKey{}, held{c, time.Since(start)})), next)
		return
	case <-h.Closing:
	case <-r.Context().Done():
		h.count(r, host)
		if delivery {
			r = r.WithContext(context.WithValue(r.Context(), heldKey{}, held{c, time.Since(start)}))
			h.begin(r, c, false)(0, fmt.Sprintf("the origin is %s: the client went away after %s of the wait, before any answer",
				c, time.Since(start).Round(time.Millisecond)))
		}
		return
	}
	h.count(r, host)
	r = r.WithContext(context.WithValue(r.Context(), heldKey{}, held{c, time.Since(start)}))
	next.ServeHTTP(w, r)
}

// readAhead reads a body to its end (up to maxHeldBody) before a wait:
// the server watches for the client going away only once the body is
// read. The handler after the wait reads the same bytes.
func readAhead(body io.ReadCloser) io.ReadCloser {
	if body == nil || body == http.NoBody {
		return body
	}
	b, err := io.ReadAll(io.LimitReader(body, maxHeldBody+1))
	rest := io.MultiReader(bytes.NewReader(b), errReader{err}, body)
	return struct {
		io.Reader
		io.Closer
	}{rest, body}
}

// errReader replays a read error met while reading ahead; nil reads as
// the end of its part.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// flakyStatus is the answer of a flaky origin with probability p for the
// draw u in [0, 1): 0 (served as usual) when u ≥ p, else what a proxy in
// front of a sick server answers, each for a third of [0, p): the upstream
// refused (502), is overloaded (503), or timed out (504).
func flakyStatus(u, p float64) int {
	if u >= p {
		return 0
	}
	switch min(2, int(u/p*3)) {
	case 0:
		return http.StatusBadGateway
	case 1:
		return http.StatusServiceUnavailable
	}
	return http.StatusGatewayTimeout
}

// flaky answers 502, 503 or 504 with probability c.P, with the page nginx
// writes in front of a sick upstream; the rest are served as usual.
func (h *HTTP) flaky(w http.ResponseWriter, r *http.Request, next http.Handler, host string, c Condition) {
	status := flakyStatus(h.rand(), c.P)
	if status == 0 {
		next.ServeHTTP(w, r)
		return
	}
	h.count(r, host)
	logged := h.begin(r, c, false)
	hd := w.Header()
	hd.Set("Content-Type", "text/html")
	hd.Set("Server", "nginx")
	w.WriteHeader(status)
	io.WriteString(w, proxyErrorPage(status))
	logged(status, fmt.Sprintf("the origin is %s: answered %d as a proxy in front of a sick server does", c, status))
}

// proxyErrorPage is the page nginx writes for a 5xx of its own.
func proxyErrorPage(status int) string {
	title := strconv.Itoa(status) + " " + http.StatusText(status)
	return "<html>\r\n<head><title>" + title + "</title></head>\r\n<body>\r\n<center><h1>" + title +
		"</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
}

// limited answers 429 as Mastodon's rate limiter does: Retry-After in
// seconds, X-RateLimit-* with the reset as an ISO 8601 time, and a JSON
// error.
func (h *HTTP) limited(w http.ResponseWriter, r *http.Request, c Condition) {
	logged := h.begin(r, c, false)
	secs := int(c.Delay / time.Second)
	hd := w.Header()
	hd.Set("Content-Type", "application/json; charset=utf-8")
	hd.Set("Retry-After", strconv.Itoa(secs))
	hd.Set("X-RateLimit-Limit", strconv.Itoa(RateLimit))
	hd.Set("X-RateLimit-Remaining", "0")
	hd.Set("X-RateLimit-Reset", h.now().Add(c.Delay).UTC().Format("2006-01-02T15:04:05.000000Z"))
	w.WriteHeader(http.StatusTooManyRequests)
	io.WriteString(w, `{"error":"Too many requests"}`)
	logged(http.StatusTooManyRequests, fmt.Sprintf("the origin is %s: answered 429 with Retry-After %d", c, secs))
}

// gone answers 410 for every route: the ActivityStreams documents (actors,
// keys, notes, collections) as a Tombstone with the requested id, the
// rest (WebFinger, NodeInfo, inboxes, pages) plainly.
func (h *HTTP) gone(w http.ResponseWriter, r *http.Request, c Condition) {
	logged := h.begin(r, c, false)
	if isDocument(r) {
		b, _ := json.Marshal(tombstone(h.Host(r), r.URL))
		w.Header().Set("Content-Type", "application/activity+json")
		w.WriteHeader(http.StatusGone)
		w.Write(b)
	} else {
		http.Error(w, "gone: this server has shut down", http.StatusGone)
	}
	logged(http.StatusGone, fmt.Sprintf("the origin is %s: answered 410, as a server shut down does", c))
}

// isDocument reports whether r fetches one of the origin's ActivityStreams
// documents: an actor (and its key), a collection or an object.
func isDocument(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	return p == "/actor" || strings.HasPrefix(p, "/actor/") || strings.HasPrefix(p, "/users/")
}

// tombstoneDoc is what a gone origin serves at a document's URL.
type tombstoneDoc struct {
	Context string `json:"@context"`
	ID      string `json:"id"`
	Type    string `json:"type"`
}

// tombstone is the Tombstone of the document at u on the origin host: its
// id is the requested URL (the origins' ids are https, whichever listener
// the request came through).
func tombstone(host string, u *url.URL) tombstoneDoc {
	id := "https://" + host + u.Path
	if u.RawQuery != "" {
		id += "?" + u.RawQuery
	}
	return tombstoneDoc{Context: "https://www.w3.org/ns/activitystreams", ID: id, Type: "Tombstone"}
}
