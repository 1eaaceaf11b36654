package flood

import (
	"context"
	"sync"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/epoll"
	"github.com/crowdfed/crowd/internal/h1"
	"golang.org/x/sys/unix"
)

// answerLoop is the dispatcher's own reading of the answers to the
// requests it wrote: it watches their sockets with an epoll of its own,
// waits on it where it would have slept until the next send (or, quiet,
// only looks at it after each send: see quiet), and reads
// an answer itself once the whole of it has arrived (h1's Arrived says
// so), which then takes no wait, from the bytes Arrived looked at (h1's
// ReadArrived: the status, the size and the rate-limit fields, no
// Response). A worker handed every answer had to be
// woken for it, and its goroutine parked on the socket and woken again.
// Against the bench's null sink on the same two cores (builds alternated,
// 10 s at a set rate after 3 s), a send cost the flood process 107 and
// 133 against 132 and 152 µs of CPU at 2 000/s and 92-95 against 107 at
// 5 000/s, its p99 latency 0.31 against 0.44-0.74 ms and 0.56-0.77
// against 1.15-1.17 ms, its p99 lateness alike or lower. The sockets it
// watches are out of the Go runtime's poller (h1's Socket takes them
// out), which every answer the loop read had also woken for nothing:
// another 6-23 % of a send's CPU at 2 000 and 5 000/s.
//
// On the one dispatcher's own thread (up to 10 000/s) it runs only where
// that thread is real-time (--dispatcher-priority auto up to 5 000/s, or
// realtime up to 10 000/s, where the kernel allows it), so that reading an
// answer never has it preempted when a send comes due: under the normal
// policy at 2 000/s the same loop cut the CPU as much (100-107 against
// 123-138 µs) but tripled the p99 lateness (0.27-0.49 against
// 0.09-0.10 ms). Above 10 000/s one dispatcher that also read every answer fell
// behind its schedule (p99 lateness 22 ms against 4 ms at 22 000/s), and a
// loop on a goroutine of its own, woken apart from the dispatcher, cost
// more than the workers (133-145 against 121-140 µs at 2 000/s). There,
// where the Source never waits, the dispatchers share the schedule (now
// above 5 000/s: engine.go's sharedRateMin), one a core, each with a loop
// of its own, under the normal policy as a rule (engine.go's
// sharedDispatchers): at 20 000/s a send cost alike (44.8-45.7 against
// 45.1-46.4 µs), its p99 latency 9.9-12.9 ms against 15.1-27.6 ms; at
// 24 000/s and 27 000/s, past what either held, 22 820/s and 26 206/s were
// sent against 20 798/s and 22 931/s. Each takes the connections it wrote
// on before (h1's lanes): taking whichever rested last, the two loops'
// epolls had each socket in turn, and moving it cost more than the sharing
// gained (48-50 against 46-47 µs a send).
//
// Quiet (see quiet), it reads what has come after each send instead of
// waking for each answer, and wakes for each again only while a deadline
// is near (deadlineBy), so that an answer whole before its deadline is
// read before it.
//
// Whatever it is not sure of it leaves to a worker, as before: an answer
// not whole when its deadline comes (the worker's Read then times out),
// one h1 alone can tell (a close, a chunked body, one larger than its
// look), a Fallback's second attempt, every answer awaited when the
// Source's next request may take a wait (NextReady), and every one still
// awaited when the run is interrupted.
type answerLoop struct {
	set     *epoll.Set
	pending map[int]job // the sends whose answers it awaits, by descriptor
	order   []deadlined // the same, by deadline (their sends' order)
	look    []byte      // Arrived's buffer
	w       *worker
	d       record.Delivery
	stop    func() bool // unregisters w's Aborter from the run's context
	// loud: the loop's waits wake for each answer (see quiet), because
	// an answer it awaited was on a socket the kernel does not stamp
	// (h1's Stamped), more than unstampedMax answers came with no stamp,
	// or its dispatcher shares a schedule above quietRateMax
	// (wakeForEach). Once set, it stays.
	loud      bool
	unstamped int           // whole answers read with no stamp
	skew      time.Duration // the wall clock's reading less the monotonic one, since the run's start, at the last wait
	skewKnown bool
}

// unstampedMax is how many answers on stamped sockets may come with no
// stamp before the loop wakes for each answer again: the kernel switches
// its stamping on a moment after the first socket asks for it, and a
// filter may clear a stamp. Until then such an answer is timed when the
// wait that found it returned, as a loud loop times every answer.
const unstampedMax = 16

// skewStepMax is how far the wall clock may move against the monotonic
// one between two waits before the stamps read in the second are not
// trusted: a step of the wall clock (settimeofday, an NTP step) would
// move them by as much. NTP's slewing moves it by at most 0.5 ms a
// second, a few µs between the waits of a flood.
const skewStepMax = 100 * time.Microsecond

// wakeForEach has the loop's waits wake for each answer as it comes, never
// quiet: for the dispatchers that share a schedule above quietRateMax
// (engine.go), whose sends are too close for a wait between them to save
// a wake-up. Two dispatchers at 20 000/s, quiet, cost alike (39.6-40.7
// against 41.3-43.0 µs a send) and fell behind their schedule in one
// trial of two (18 502/s sent, p99 lateness 48 ms), holding answers
// unread longer and so needing twice the connections. Against the
// bench's null sink (3 s trials in turns, three rounds at 14 000, 20 000
// and 26 000/s on a 2-core Zen 3), quiet cost less in 8 pairs of 9 but
// failed 3 trials (p99 latency 28-91 ms), loud 1, and at 14 000/s its p99
// latency was higher. Up to 10 000/s, where each of the two sent up to
// 5 000/s, quiet cost less in every one of 25 pairs at 5 500-10 000/s
// (35-51 against 41-74 µs a send), its p99 latency alike (0.18-0.93
// against 0.16-1.02 ms) and its p99 lateness too (0.08-0.15 against
// 0.07-0.20 ms): each dispatcher sharing the schedule reads after its own
// send, on a core of its own, where the one dispatcher under the normal
// policy that read its answers was late more often (see answerLoop).
func (l *answerLoop) wakeForEach() { l.loud = true }

// quiet reports whether the dispatcher may sleep to its next send (or for
// loopWaitMax, whichever comes first) without waking for the answers the
// loop awaits, and read them after that send (wait with no wait): every
// one awaited so far was on a socket the kernel stamps, so an answer read
// late is still timed at its arrival (answeredAt). Each send then wakes
// the dispatcher once where it woke twice (for its time, and for the
// answer before it), and the server's write of an answer wakes no thread
// of the flood's.
func (l *answerLoop) quiet() bool { return l != nil && !l.loud }

// deadlined is an awaited send's deadline, as an offset from the run's
// start, and its descriptor. It names the send: a later one on the same
// descriptor was written after this one's answer was read, so its
// deadline is later.
type deadlined struct {
	fd int
	at time.Duration
}

// awaits returns the send o names, and whether the loop still awaits it.
func (l *answerLoop) awaits(e *crew, o deadlined) (job, bool) {
	j, ok := l.pending[o.fd]
	return j, ok && j.sentAt+e.timeout == o.at
}

// answerBatch bounds the events one wait takes, and so the answers read
// before the dispatcher looks at its clock again; the rest stay ready in
// the epoll for the next wait.
const answerBatch = 16

// answerLook bounds the answer the loop reads itself: a federating
// server's answer to a POST is a head and a short body, well under it.
const answerLook = 4 << 10

// newAnswerLoop is the loop of the crew e, or nil when the dispatcher
// cannot read answers itself: its transport is not one it writes on, or
// the kernel lacks epoll_pwait2 (before Linux 5.11, or refused by a
// container's seccomp profile), whose timeout in nanoseconds the loop's
// waits need: epoll_wait's milliseconds would wake the dispatcher up to
// a millisecond late for its next send.
// Its collector shard is k, the dispatcher's.
func newAnswerLoop(e *crew, k int) *answerLoop {
	if e.written == nil {
		return nil
	}
	set, err := epoll.Open(answerBatch)
	if err != nil {
		return nil
	}
	if !set.Fine() {
		set.Close()
		return nil
	}
	l := &answerLoop{set: set, pending: map[int]job{}, look: make([]byte, answerLook)}
	l.w = e.newWorker(k)
	l.w.inline = true
	if l.w.abort != nil {
		l.stop = context.AfterFunc(e.ctx, l.w.abort.Abort)
	}
	return l
}

// busy reports whether the loop awaits an answer.
func (l *answerLoop) busy() bool { return l.awaiting() > 0 }

// awaiting is how many answers the loop awaits (none without a loop).
func (l *answerLoop) awaiting() int {
	if l == nil {
		return 0
	}
	return len(l.pending)
}

// take has the loop await the answer to j, which the dispatcher wrote,
// and reports whether it does: not when the write failed or the
// connection is not one it can watch (TLS).
func (l *answerLoop) take(e *crew, j *job) bool {
	if l == nil || !j.direct || j.writeErr != nil {
		return false
	}
	s, ok := j.written.Socket()
	if !ok {
		return false
	}
	if !e.sockets.watch(l, s) {
		return false
	}
	if !s.Stamped() {
		l.loud = true
	}
	l.pending[s.FD] = *j
	e.awaited.Add(1)
	l.order = append(l.order, deadlined{fd: s.FD, at: j.sentAt + e.timeout})
	return true
}

// wait waits up to d for answers (not at all when d ≤ 0), and settles
// what has come; a send whose deadline passed is left to a worker.
func (l *answerLoop) wait(e *crew, d time.Duration) {
	// An error shows as deadlines pass.
	events, _ := l.set.Wait(d)
	// The answers were there when the wait returned: that is when they
	// are done, however long the ones before them in the batch take,
	// unless the kernel's stamp says when (answeredAt), as it does for
	// the answers a quiet loop reads after a send. A step of the wall
	// clock since the last wait makes this batch's stamps untrusted.
	now := time.Now()
	polled := now.Sub(e.start)
	skew := time.Duration(now.UnixNano()-e.start.UnixNano()) - polled
	trusted := !l.skewKnown || (skew-l.skew).Abs() <= skewStepMax
	l.skew, l.skewKnown = skew, true
	for _, ev := range events {
		j, ok := l.pending[int(ev.Fd)]
		if !ok {
			continue // a resting connection's, or a worker's
		}
		got, n := j.written.Arrived(l.look)
		if got == h1.ArrivedPart && ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			// A part, and then the server's close or an error: no more
			// bytes will wake the loop, and Read tells at once.
			got = h1.ArrivedUnsure
		}
		switch got {
		case h1.ArrivedPart:
			continue // the rest will wake the loop
		case h1.ArrivedWhole:
			l.forget(e, int(ev.Fd))
			l.w.arrived, l.w.whole = l.stampOf(e, &j, polled, trusted), l.look[:n]
			l.read(e, &j)
			l.w.whole = nil
		default:
			l.forget(e, int(ev.Fd))
			e.handOff(j)
		}
	}
	l.expire(e)
}

// stampOf is when the answer to j, which Arrived has just found whole in a
// wait that returned at polled, was whole (answeredAt), its stamp trusted
// unless the wall clock stepped since the last wait. An answer with no
// stamp counts towards unstampedMax.
func (l *answerLoop) stampOf(e *crew, j *job, polled time.Duration, trusted bool) time.Duration {
	at, ok := j.written.ArrivedAt()
	if !ok {
		if l.unstamped++; l.unstamped > unstampedMax {
			l.loud = true
		}
		return polled
	}
	read := time.Now()
	// On the wall clock, as at has no monotonic reading.
	return answeredAt(j.sentAt, polled, read.Sub(e.start), read.Sub(e.start)-read.Sub(at), trusted)
}

// answeredAt is when an answer was whole, all as offsets from the run's
// start: at stamp, when the kernel received its last bytes (h1's
// ArrivedAt), so that an answer read after the dispatcher's next send is
// not timed later than it came. The stamp is used only when it is trusted
// and falls between the send (sentAt) and the read of those bytes
// (read): else it is polled, when the wait that found the answer
// returned, as a loud loop times every answer.
func answeredAt(sentAt, polled, read, stamp time.Duration, trusted bool) time.Duration {
	if !trusted || stamp < sentAt || stamp > read {
		return polled
	}
	return stamp
}

// deadlineBy reports whether the deadline of an answer the loop awaits
// comes by at (an offset from the run's start).
func (l *answerLoop) deadlineBy(e *crew, at time.Duration) bool {
	for _, o := range l.order {
		if _, ok := l.awaits(e, o); ok {
			return o.at <= at // the earliest: order is by deadline
		}
	}
	return false
}

// read reads j's answer, whole already, and files the send, unless its
// Fallback asks for another attempt, which a worker makes.
func (l *answerLoop) read(e *crew, j *job) {
	if !l.w.send(j, &l.d) {
		e.handOff(*j)
		return
	}
	l.w.settle(j, &l.d)
}

// expire leaves to workers the sends whose deadline has passed, and
// forgets the ones settled.
func (l *answerLoop) expire(e *crew) {
	now := time.Since(e.start)
	k := 0
	for ; k < len(l.order); k++ {
		o := l.order[k]
		j, ok := l.awaits(e, o)
		if !ok {
			continue // settled
		}
		if o.at > now {
			break
		}
		l.forget(e, o.fd)
		e.handOff(j)
	}
	if k > 0 {
		l.order = append(l.order[:0], l.order[k:]...)
	}
}

// finish awaits the answers still due, up to their deadlines, then leaves
// none behind: on an interrupted run every one goes to a worker, which
// ends it as aborted. It then closes the epoll.
func (l *answerLoop) finish(e *crew) {
	if l == nil {
		return
	}
	done := e.ctx.Done()
	for l.busy() && !closed(done) {
		l.wait(e, coarseMargin)
	}
	if l.busy() {
		// Interrupted: what has come is read, as a loud loop would
		// have read it when it came, before the rest is left.
		l.wait(e, 0)
	}
	l.leaveAll(e)
	l.close(e)
}

// close closes the loop's epoll, first taking it out of e's watchers (so
// that no other loop unwatches a descriptor from what its number may
// name next), and ends its worker's Aborter's registration with the
// run's context.
func (l *answerLoop) close(e *crew) {
	e.sockets.forget(l)
	if l.stop != nil {
		l.stop()
	}
	l.set.Close()
}

// forget stops awaiting the send on descriptor fd: it was read, or goes
// to a worker, which must count it as the workers' first (handOff).
func (l *answerLoop) forget(e *crew, fd int) {
	delete(l.pending, fd)
	e.awaited.Add(-1)
}

// leaveAll leaves every answer the loop awaits to workers.
func (l *answerLoop) leaveAll(e *crew) {
	for _, o := range l.order {
		if j, ok := l.awaits(e, o); ok {
			l.forget(e, o.fd)
			e.handOff(j)
		}
	}
	l.order = l.order[:0]
}

// watchers is which loop's epoll watches each socket, among the
// dispatchers' loops: a socket one loop read an answer on rests in the
// transport's pool, and the next to write on it may be another's
// dispatcher. Safe for concurrent use.
type watchers struct {
	mu sync.Mutex
	by map[int]watcher // by descriptor; kept until the descriptor is another's (the comparison needs it)
}

// watcher is a descriptor's loop, and its connection as that loop's
// epoll has it.
type watcher struct {
	l *answerLoop
	s h1.Socket
}

// watch has l's epoll, alone, watch s, and reports whether it does.
func (ws *watchers) watch(l *answerLoop, s h1.Socket) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	was := ws.by[s.FD]
	if was.l == l && was.s == s {
		return true
	}
	if was.l != nil && was.l != l {
		// Another loop's epoll had it (or a connection closed since
		// under its number, which left that epoll by itself: then this
		// finds nothing). Left there, every answer on it would wake
		// that loop too, for nothing.
		was.l.set.Unwatch(s.FD)
	}
	// A connection this epoll has not seen under this descriptor. A
	// closed one left the epoll by itself; its descriptor may be
	// another's now. The answer may have come already: adding the
	// socket reports what is there.
	// Edge-triggered: an answer wakes the loop once, and a part again
	// when the rest comes.
	if l.set.Watch(s.FD, unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLET) != nil {
		delete(ws.by, s.FD)
		return false
	}
	if ws.by == nil {
		ws.by = map[int]watcher{}
	}
	ws.by[s.FD] = watcher{l: l, s: s}
	return true
}

// forget forgets the sockets l's epoll watches: it is closing.
func (ws *watchers) forget(l *answerLoop) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for fd, w := range ws.by {
		if w.l == l {
			delete(ws.by, fd)
		}
	}
}
