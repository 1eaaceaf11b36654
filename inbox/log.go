package inbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
)

// Subscription follows the log live. Read C; call Close when done.
type Subscription struct {
	log    *ActivityLog
	filter Filter
	ch     chan Event
	// guarded by log.mu
	pending uint64 // lost since the last event that was delivered
	lost    uint64 // lost in total
	closed  bool
}

// C delivers matching entries as they are logged. It is closed by Close
// and when the log closes.
func (s *Subscription) C() <-chan Event { return s.ch }

// Lost is how many matching entries this subscriber has lost in total.
func (s *Subscription) Lost() uint64 {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.lost
}

// Close ends the subscription and closes C. It is idempotent.
func (s *Subscription) Close() {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.unsubscribe(s)
}

// LogOptions configures an ActivityLog. Zero fields take the defaults.
type LogOptions struct {
	// Dir holds activity.jsonl and its rotations; "" keeps the log in
	// memory only.
	Dir string
	// Ring is how many entries are kept in memory; default 1000.
	Ring int
	// BodyBytes is where bodies are cut; default 4 KiB.
	BodyBytes int
	// RotateBytes is the size at which activity.jsonl is rotated to
	// activity.jsonl.1; default 64 MiB.
	RotateBytes int64
	// Keep is how many rotated files are kept; default 3.
	Keep int
	// Logger receives the log's own troubles (a disk write failing).
	Logger *zap.Logger
	// OnLost, when set, is called (with the log locked: keep it quick)
	// each time an entry is dropped for a slow subscriber.
	OnLost func()
}

// LogFile is the name of the activity log in its directory.
const LogFile = "activity.jsonl"

// ActivityLog records every activity in and out: a ring of the latest
// entries in memory, every entry appended to a JSON-lines file with size
// rotation, and live subscribers. On opening, it reloads the latest
// entries, seq and totals from its directory. Append never blocks on a subscriber: a
// slow one loses entries and is told how many. Safe for concurrent use.
type ActivityLog struct {
	o   LogOptions
	log *zap.Logger

	mu     sync.Mutex
	seq    uint64
	totals Totals
	ring   []Entry
	next   int // ring position of the next entry
	full   bool
	subs   map[*Subscription]struct{}
	closed bool
	lines  chan logged // to the disk writer; nil when memory-only

	done chan struct{} // closed when the disk writer has finished

	// werr is the first disk error. It has its own lock: Append may hold
	// mu while waiting for the writer, so the writer must never take mu.
	emu  sync.Mutex
	werr error
}

// BodyLimit is where the log cuts bodies: callers need not pass more.
func (l *ActivityLog) BodyLimit() int { return l.o.BodyBytes }

// OpenLog opens (creating) the log file in o.Dir and starts its writer,
// having read back from the end of the files already there the latest
// entries (into the ring), the last seq (new entries continue from it) and
// the totals. A torn last line is dropped and logged; an entry read back
// that is damaged stops the opening with its file and line.
func OpenLog(o LogOptions) (*ActivityLog, error) {
	if o.Ring <= 0 {
		o.Ring = 1000
	}
	if o.BodyBytes <= 0 {
		o.BodyBytes = 4 << 10
	}
	if o.RotateBytes <= 0 {
		o.RotateBytes = 64 << 20
	}
	if o.Keep <= 0 {
		o.Keep = 3
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	l := &ActivityLog{o: o, log: o.Logger, ring: make([]Entry, o.Ring), subs: map[*Subscription]struct{}{},
		done: make(chan struct{})}
	if o.Dir == "" {
		close(l.done)
		return l, nil
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("activity log: %w", err)
	}
	r, err := restore(o.Dir, o.Keep, o.Ring, o.Logger)
	if err != nil {
		return nil, err
	}
	for i := len(r.latest) - 1; i >= 0; i-- {
		l.put(r.latest[i])
	}
	l.seq, l.totals = r.seq, r.totals
	path := filepath.Join(o.Dir, LogFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("activity log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("activity log: %w", err)
	}
	l.lines = make(chan logged, 4096)
	go l.writer(f, st.Size(), checkpoint{Seq: r.seq, Totals: r.totals})
	return l, nil
}

// checkpointEvery is how often, at most, the writer records the totals
// of what it wrote: a restart recounts only the entries after the last one.
const checkpointEvery = 5 * time.Second

// commitEvery is how long the writer lets entries gather while they keep
// coming, before it writes and flushes them together: one write and one
// wake-up for a batch, where flushing each entry as it came cost the inbox
// a write(2) and a wake-up of the writer per delivery (about a tenth of
// its CPU at ten thousand deliveries a second). It is also, with what is
// queued, the most a kill -9 loses.
const commitEvery = 2 * time.Millisecond

// writer encodes entries (here, so that inbox goroutines never serialize
// on it) and appends them to the file, rotating by size. It waits for an
// entry while the log is quiet; once one comes it writes what is queued,
// flushes, and, for as long as entries keep coming, lets them gather for
// commitEvery before it writes the next batch. cp is the totals of what
// the files hold; it checkpoints them now and then, and on closing.
func (l *ActivityLog) writer(f *os.File, size int64, cp checkpoint) {
	defer close(l.done)
	path := filepath.Join(l.o.Dir, LogFile)
	w := bufio.NewWriterSize(f, 64<<10)
	enc := newLineEncoder()
	saved := time.Now()
	save := func() {
		if err := w.Flush(); err != nil {
			l.fail(err)
			return
		}
		if err := writeCheckpoint(l.o.Dir, cp); err != nil {
			l.fail(err)
		}
		saved = time.Now()
	}
	// put writes e; false when no file is left to write to.
	put := func(e *Entry, compactBody bool) bool {
		line, err := enc.line(e, compactBody)
		if err != nil {
			l.fail(err)
			return true
		}
		if size > 0 && size+int64(len(line)) > l.o.RotateBytes {
			nf, err := l.rotateFile(w, f, path)
			if err != nil {
				return false
			}
			f, size = nf, 0
			w.Reset(f)
		}
		if _, err := w.Write(line); err != nil {
			l.fail(err)
		}
		size += int64(len(line))
		cp.Seq = e.Seq
		cp.Totals.Add(e)
		return true
	}
	for e := range l.lines {
		// The log was quiet until e: write it and what queued behind it,
		// then, while entries keep coming, a batch every commitEvery.
		for ok := put(&e.Entry, e.compactBody); ; ok = true {
			for ok && len(l.lines) > 0 {
				next := <-l.lines // queued: neither blocks nor reads the close
				ok = put(&next.Entry, next.compactBody)
			}
			if !ok {
				// No file to write to: keep draining so Append never
				// blocks on a dead disk.
				for range l.lines {
				}
				return
			}
			if time.Since(saved) >= checkpointEvery {
				save()
			} else if err := w.Flush(); err != nil {
				l.fail(err)
			}
			time.Sleep(commitEvery)
			if len(l.lines) == 0 {
				break
			}
		}
	}
	save()
	if err := f.Close(); err != nil {
		l.fail(err)
	}
}

// fail keeps the first write error and logs it once: from then on entries stay in memory.
func (l *ActivityLog) fail(err error) {
	l.emu.Lock()
	first := l.werr == nil
	if first {
		l.werr = err
	}
	l.emu.Unlock()
	if first {
		l.log.Error("activity log: writing to disk failed; entries stay in memory only", zap.Error(err))
	}
}

// rotateFile flushes w and closes f, shifts the rotations and opens a fresh file at path;
// an error is failed already, and means no file to write to.
func (l *ActivityLog) rotateFile(w *bufio.Writer, f *os.File, path string) (*os.File, error) {
	if err := w.Flush(); err != nil {
		l.fail(err)
	}
	f.Close()
	if err := rotate(path, l.o.Keep); err != nil {
		l.fail(err)
	}
	nf, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		l.fail(err)
	}
	return nf, err
}

// lineEncoder encodes entries as JSON lines: appendEntryJSON's fast path, and json.Encoder
// for what that does not encode. A line is valid until the next call.
type lineEncoder struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	fast []byte
}

func newLineEncoder() *lineEncoder {
	le := &lineEncoder{}
	le.enc = json.NewEncoder(&le.buf)
	le.enc.SetEscapeHTML(false) // bodies stay readable in `tail -f`
	return le
}

// line is e's line; compactBody says e's body is compact JSON in valid
// UTF-8, logged whole (see logged).
func (le *lineEncoder) line(e *Entry, compactBody bool) ([]byte, error) {
	var ok bool
	if le.fast, ok = appendEntryJSON(le.fast[:0], e, compactBody); ok {
		return le.fast, nil
	}
	le.buf.Reset()
	if err := le.enc.Encode(e); err != nil {
		return nil, err
	}
	return le.buf.Bytes(), nil
}

// rotate shifts path.(keep-1) → path.keep, …, path → path.1. Not
// lumberjack: restore reads rotations back by number (it names them by
// time), sizes here are bytes (its are whole MiB), and its cleanup
// goroutine deletes files after, and outlives, Close.
func rotate(path string, keep int) error {
	os.Remove(fmt.Sprintf("%s.%d", path, keep))
	for i := keep - 1; i >= 1; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return os.Rename(path, path+".1")
}

// Append logs e, assigning its Seq (and Time when unset), cutting its body
// at the body limit (BodyBytes, when larger than the Body given, is the
// length of the whole body: callers may pass only its start), and returns
// it as logged. It fans the entry out to
// subscribers without ever waiting for them.
func (l *ActivityLog) Append(e Entry) Entry { return l.appendEntry(e, false) }

// logged is an entry on its way to the disk writer, and whether its body
// is known to be compact JSON text in valid UTF-8, logged whole: then the
// writer embeds it as it is, without checking it again.
type logged struct {
	Entry
	compactBody bool
}

// appendEntry is Append for a caller that may know e's body to be compact
// JSON (compactBody: the inbox, whose parse walked every byte of it, see
// parseActivity). The hint holds only while the body is logged whole and
// is valid UTF-8, which Append checks anyway: a body cut at the limit, or
// mended, goes through the writer's own check. It saves the writer two
// more walks of every delivery's body, the validating scan and the search
// for whitespace, which on two cores are the inbox's CPU too.
func (l *ActivityLog) appendEntry(e Entry, compactBody bool) Entry {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if e.BodyBytes < len(e.Body) {
		e.BodyBytes = len(e.Body)
	}
	if len(e.Body) > l.o.BodyBytes {
		e.Body = strings.ToValidUTF8(e.Body[:l.o.BodyBytes], "")
	} else if !utf8.ValidString(e.Body) {
		e.Body = strings.ToValidUTF8(e.Body, "\uFFFD")
		compactBody = false
	}
	e.Truncated = e.Truncated || e.BodyBytes > len(e.Body)
	compactBody = compactBody && !e.Truncated // a body cut here is Truncated too
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	l.put(e)
	l.totals.Add(&e)
	for s := range l.subs {
		if !s.filter.Match(&e) {
			continue
		}
		select {
		case s.ch <- Event{Entry: e, Lost: s.pending}:
			s.pending = 0
		default:
			s.pending++
			s.lost++
			if l.o.OnLost != nil {
				l.o.OnLost()
			}
		}
	}
	if l.lines != nil && !l.closed {
		// Blocks only if the disk falls 4096 entries behind: the file is
		// the durable record, so it is not silently thinned.
		l.lines <- logged{e, compactBody}
	}
	return e
}

// put adds e to the ring. The caller holds l.mu (or owns l).
func (l *ActivityLog) put(e Entry) {
	l.ring[l.next] = e
	l.next++
	if l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
}

// Totals counts every entry logged in the log's directory (across
// restarts), or since the start for a log in memory.
func (l *ActivityLog) Totals() Totals {
	t, _ := l.TotalsAt()
	return t
}

// TotalsAt returns Totals together with the seq of the last entry they
// count, read at one instant: a reader that also follows the stream counts
// only entries above that seq, and so counts each entry once.
func (l *ActivityLog) TotalsAt() (Totals, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.totals, l.seq
}

// Latest returns up to n of the newest entries that match f, oldest first.
// n ≤ 0 means the whole ring.
func (l *ActivityLog) Latest(n int, f Filter) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := l.next
	if l.full {
		size = len(l.ring)
	}
	if n <= 0 || n > size {
		n = size
	}
	out := make([]Entry, 0, n)
	for i := 1; i <= size && len(out) < n; i++ {
		e := &l.ring[(l.next-i+len(l.ring))%len(l.ring)]
		if f.Match(e) {
			out = append(out, *e)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Subscribe follows the log live from now on, delivering entries that
// match f through a channel of buffer events (default 256).
func (l *ActivityLog) Subscribe(f Filter, buffer int) *Subscription {
	if buffer <= 0 {
		buffer = 256
	}
	s := &Subscription{log: l, filter: f, ch: make(chan Event, buffer)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		s.closed = true
		close(s.ch)
		return s
	}
	l.subs[s] = struct{}{}
	return s
}

// Subscribers is how many subscriptions are open.
func (l *ActivityLog) Subscribers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.subs)
}

func (l *ActivityLog) unsubscribe(s *Subscription) {
	if s.closed {
		return
	}
	s.closed = true
	delete(l.subs, s)
	close(s.ch)
}

// Close ends every subscription, flushes the file and closes it. Entries
// appended afterwards are kept in memory only. It returns the first disk
// error the log met, if any.
func (l *ActivityLog) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		for s := range l.subs {
			l.unsubscribe(s)
		}
		if l.lines != nil {
			close(l.lines)
		}
	}
	l.mu.Unlock()
	<-l.done
	l.emu.Lock()
	defer l.emu.Unlock()
	return l.werr
}

// maxLoggedHeaderBytes bounds the headers one entry keeps, so a peer
// sending megabytes of headers cannot make the ring hold gigabytes.
const maxLoggedHeaderBytes = 16 << 10

// safeHeaders copies h without secrets: cookies and any Authorization that
// is not an HTTP signature are dropped. Past maxLoggedHeaderBytes, further
// headers are left out and X-Crowd-Headers-Cut says so. The values share
// one backing array, each slice capped at its own length so that an
// append to one copies it rather than writing into the next: the inbox
// copies every delivery's headers, and a slice per header was a fifth of
// its allocations.
func safeHeaders(h http.Header) http.Header {
	n := 0
	for _, v := range h {
		n += len(v)
	}
	out := make(http.Header, len(h))
	values := make([]string, 0, n)
	size := 0
	for k, v := range h {
		for _, s := range v {
			size += len(k) + len(s)
		}
		if size > maxLoggedHeaderBytes {
			out["X-Crowd-Headers-Cut"] = []string{"headers beyond 16 KiB are not logged"}
			continue
		}
		switch secretHeader(k) {
		case "Cookie", "Set-Cookie", "Proxy-Authorization":
			continue
		case "Authorization":
			if len(v) == 0 || !strings.HasPrefix(strings.ToLower(v[0]), "signature ") {
				out[k] = []string{"[redacted]"}
				continue
			}
		}
		start := len(values)
		values = append(values, v...)
		out[k] = values[start:len(values):len(values)]
	}
	return out
}

// secretHeader is k's canonical form when k has the length of a header
// name that holds a secret (Cookie, Set-Cookie, Authorization,
// Proxy-Authorization), else "": only such names are canonicalized, since
// canonicalizing allocates for a name not already canonical.
func secretHeader(k string) string {
	switch len(k) {
	case len("Cookie"), len("Set-Cookie"), len("Authorization"), len("Proxy-Authorization"):
		return http.CanonicalHeaderKey(k)
	}
	return ""
}
