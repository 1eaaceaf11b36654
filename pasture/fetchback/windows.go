// Package fetchback attributes what the SUT fetches back from the crowd's origins to the runs
// going on: windows a run opens, ends and closes (the admin API's fetch-back routes), a
// middleware on the origin router that tallies each GET by kind, object and status, and the
// late fetches after a close.
package fetchback

import (
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/histgeom"
	"github.com/crowdfed/crowd/internal/statuswriter"
)

// ErrTooManyWindows is Open's error when MaxFetchbackWindows are open and
// none may give way.
var ErrTooManyWindows = errors.New("too many fetch-back windows open")

// Windows that give way to a new one when all are taken: ended this long
// ago (their run forgot to close them), or opened this long ago.
const (
	staleEnded  = 10 * time.Minute
	staleOpened = 24 * time.Hour
)

// Windows attributes the requests the crowd's origins serve to the
// runs that are going on (adminapi's fetch-back routes). Its Middleware
// sees every request; while no window is open it costs one atomic load.
// Safe for concurrent use.
type Windows struct {
	now  func() time.Time
	open atomic.Int32 // len(windows), read without the lock on every request

	// lateUntil is when the last closed window stops counting late
	// fetches (UnixNano; 0: none does), read without the lock.
	lateUntil atomic.Int64

	mu      sync.Mutex
	windows []*fetchWindow
	closed  []adminapi.FetchbackTally // the final tallies of the latest closed windows, oldest first; Late grows for FetchbackLateLinger after each one's At
	// lateEnds is when each closed window stops counting late fetches:
	// FetchbackLateLinger after its close, or when a newer window opened
	// (a ladder's next rung), whose fetches are that window's, not late.
	lateEnds []time.Time
}

// New returns Windows with none open; now is the clock
// (nil: time.Now).
func New(now func() time.Time) *Windows {
	if now == nil {
		now = time.Now
	}
	return &Windows{now: now}
}

// fetchWindow is one run's tally.
type fetchWindow struct {
	win adminapi.FetchbackWindow

	mu      sync.Mutex
	ended   time.Time // zero until End
	kinds   map[string]*kindTally
	objects map[string]int64
	credits map[string]int64 // fetches by the activity type credited (creditOf)
}

// kindTally counts one kind of request.
type kindTally struct {
	fetches, afterEnd, signed int64
	status                    map[string]int64
	latency                   *hdr.Histogram
}

// Open opens a window labelled label. With MaxFetchbackWindows open it
// first drops those that are stale (ended more than 10 min ago, opened more
// than a day ago), then refuses with ErrTooManyWindows.
func (f *Windows) Open(label string) (adminapi.FetchbackWindow, error) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.windows) >= adminapi.MaxFetchbackWindows {
		f.windows = slices.DeleteFunc(f.windows, func(w *fetchWindow) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return !w.ended.IsZero() && now.Sub(w.ended) > staleEnded || now.Sub(w.win.Opened) > staleOpened
		})
		f.open.Store(int32(len(f.windows)))
	}
	if len(f.windows) >= adminapi.MaxFetchbackWindows {
		return adminapi.FetchbackWindow{}, fmt.Errorf("%w (%d): close one (%s) or wait for a run to end",
			ErrTooManyWindows, adminapi.MaxFetchbackWindows, adminapi.RouteFetchbackClose)
	}
	for i, e := range f.lateEnds {
		if now.Before(e) {
			f.lateEnds[i] = now // what comes now is the new window's
		}
	}
	w := &fetchWindow{win: adminapi.FetchbackWindow{ID: rand.Text(), Label: label, Opened: now.UTC()},
		kinds: map[string]*kindTally{}, objects: map[string]int64{}, credits: map[string]int64{}}
	f.windows = append(f.windows, w)
	f.open.Store(int32(len(f.windows)))
	return w.win, nil
}

// find is the open window id, or nil.
func (f *Windows) find(id string) *fetchWindow {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.windows, func(w *fetchWindow) bool { return w.win.ID == id })
	if i < 0 {
		return nil
	}
	return f.windows[i]
}

// End marks the end of window id's run (the first call only) and returns
// its tally so far; ok is false for a window that is not open.
func (f *Windows) End(id string) (t adminapi.FetchbackTally, ok bool) {
	w := f.find(id)
	if w == nil {
		return t, false
	}
	now := f.now()
	w.mu.Lock()
	if w.ended.IsZero() {
		w.ended = now
	}
	w.mu.Unlock()
	return w.tally(now, true), true
}

// Close forgets window id and returns its final tally; ok is false for a
// window that is not open.
func (f *Windows) Close(id string) (t adminapi.FetchbackTally, ok bool) {
	f.mu.Lock()
	i := slices.IndexFunc(f.windows, func(w *fetchWindow) bool { return w.win.ID == id })
	var w *fetchWindow
	if i >= 0 {
		w = f.windows[i]
		f.windows = slices.Delete(f.windows, i, i+1)
		f.open.Store(int32(len(f.windows)))
	}
	f.mu.Unlock()
	if w == nil {
		return t, false
	}
	t = w.tally(f.now(), true)
	f.mu.Lock()
	f.lateUntil.Store(t.At.Add(adminapi.FetchbackLateLinger).UnixNano())
	f.closed = append(f.closed, t)
	f.lateEnds = append(f.lateEnds, t.At.Add(adminapi.FetchbackLateLinger))
	if n := len(f.closed) - adminapi.MaxFetchbackWindows; n > 0 {
		f.closed = slices.Delete(f.closed, 0, n)
		f.lateEnds = slices.Delete(f.lateEnds, 0, n)
	}
	f.mu.Unlock()
	return t, true
}

// Lookup is window id's tally: so far while it is open (counts only, no
// latency histograms: the live panel polls it twice a second and needs
// none), its final one (closed) once it closed, for the latest
// MaxFetchbackWindows closed; ok is false for an id it has neither of. The
// live panel reads a running flood's fetches back with it, the final
// counts included.
func (f *Windows) Lookup(id string) (t adminapi.FetchbackTally, closed, ok bool) {
	if w := f.find(id); w != nil {
		return w.tally(f.now(), false), false, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.closed, func(c adminapi.FetchbackTally) bool { return c.ID == id })
	if i < 0 {
		return t, false, false
	}
	return f.closed[i], true, true
}

// Tallies is the typed accessor of the open windows' tallies (the admin
// page's live panel, RouteFetchbacks): all of them, oldest first, or id's
// alone ("" for all; none for an id that is not open).
func (f *Windows) Tallies(id string) []adminapi.FetchbackTally {
	f.mu.Lock()
	ws := slices.Clone(f.windows)
	f.mu.Unlock()
	now := f.now()
	out := []adminapi.FetchbackTally{}
	for _, w := range ws {
		if id == "" || w.win.ID == id {
			out = append(out, w.tally(now, true))
		}
	}
	return out
}

// Middleware counts every GET and HEAD next serves in each open window.
// Other methods (the inboxes' POSTs) are deliveries, not fetches: the
// activity log has them.
func (f *Windows) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.open.Load() == 0 && !f.lingering() || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			next.ServeHTTP(w, r)
			return
		}
		start := f.now()
		sw := statuswriter.New(w)
		next.ServeHTTP(sw, r)
		end := f.now()
		kind, object := classifyFetch(r.URL.Path)
		credit := creditOf(r.URL.Path, sw.Status())
		signed := r.Header.Get("Signature") != "" || r.Header.Get("Signature-Input") != ""
		f.mu.Lock() // then each window's: the order Open takes them in too
		for _, win := range f.windows {
			win.add(kind, object, credit, sw.Status(), signed, start, end)
		}
		for i := range f.closed {
			if end.Before(f.lateEnds[i]) {
				f.closed[i].Late++
			}
		}
		f.mu.Unlock()
	})
}

// lingering reports whether a closed window still counts late fetches.
func (f *Windows) lingering() bool {
	u := f.lateUntil.Load()
	return u != 0 && f.now().UnixNano() < u
}

// add counts one request served from start to end.
func (w *fetchWindow) add(kind, object, credit string, status int, signed bool, start, end time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if start.Before(w.win.Opened) {
		return // it began before this window opened
	}
	k := w.kinds[kind]
	if k == nil {
		k = &kindTally{status: map[string]int64{}, latency: histgeom.New()}
		w.kinds[kind] = k
	}
	k.fetches++
	if !w.ended.IsZero() && start.After(w.ended) {
		k.afterEnd++
	}
	if signed {
		k.signed++
	}
	k.status[statusClass(status)]++
	histgeom.Record(k.latency, end.Sub(start))
	if object != "" {
		w.objects[object]++
	}
	if credit != "" {
		w.credits[credit]++
	}
}

// statusClass is "2xx" … "5xx", with 404 (no such document) and 410 (a
// deleted object or actor's Tombstone) apart from the other 4xx; "none" for
// no answer at all (the weather's resets and black holes).
func statusClass(status int) string {
	switch {
	case status == 0:
		return "none"
	case status >= 200 && status < 300:
		return "2xx"
	case status >= 300 && status < 400:
		return "3xx"
	case status == http.StatusNotFound:
		return "404"
	case status == http.StatusGone:
		return "410"
	case status >= 400 && status < 500:
		return "4xx"
	case status >= 500 && status < 600:
		return "5xx"
	}
	return "other"
}

// tally copies the window's counts, read at now, and with latency their
// encoded histograms: encoding costs most of a tally, under the lock every
// counted fetch takes, so a reader that needs counts only goes without.
func (w *fetchWindow) tally(now time.Time, latency bool) adminapi.FetchbackTally {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := adminapi.FetchbackTally{FetchbackWindow: w.win, At: now.UTC(), Kinds: map[string]adminapi.FetchbackKind{},
		Objects: map[string]int64{}, Credits: maps.Clone(w.credits)}
	if !w.ended.IsZero() {
		e := w.ended.UTC()
		t.Ended = &e
	}
	for name, k := range w.kinds {
		var enc string
		if latency {
			enc, _ = histgeom.Encode(k.latency) // encoding an in-memory histogram into a buffer does not fail
		}
		t.Kinds[name] = adminapi.FetchbackKind{Fetches: k.fetches, AfterEnd: k.afterEnd, Signed: k.signed,
			Status: maps.Clone(k.status), Latency: enc}
	}
	for o, n := range w.objects {
		t.Objects[o] = n
	}
	return t
}
