// The open-loop reference: the least an open-loop client can do to replay
// the presigned flood's requests at a set rate, an epoll loop a core
// driving non-blocking sockets, as wrk does, but paced as the flood is.
// Its maximum is what a sender that does nothing but send sustains under
// the flood's latency bound on this machine, where wrk's closed loop is
// held to none.

//go:build linux

package main

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/crowdfed/crowd/internal/epoll"
)

// openLoopLimits bound a trial of the open-loop reference.
type openLoopLimits struct {
	// inflight bounds the requests in flight, shared out among the loops:
	// a send due while its loop's share is busy is dropped, never delayed.
	inflight int
	// drain is how long a trial waits for the answers still due once its
	// schedule has ended; those that have not come are failures.
	drain time.Duration
}

// olConn is one connection of the open-loop client.
type olConn struct {
	fd         int
	connecting bool          // the non-blocking connect has not completed
	busy       bool          // a request is in flight on it
	out        []byte        // the request's bytes not yet written
	in         []byte        // the answer's bytes read so far
	due        time.Duration // the request's intended offset from the trial's start
	measured   bool          // the request is due after the warm-up: it counts
}

// openLoop is one loop of a trial; all of it is the loop's thread's.
type openLoop struct {
	reqs        [][]byte               // the requests' wire form, sent cycling
	sa          *syscall.SockaddrInet4 // the listener (this loop's own: Connect writes into it)
	set         *epoll.Set             // its waits are to the nanosecond where the kernel has epoll_pwait2, else rounded up to a millisecond (which shows in the trial's lateness)
	conns       map[int32]*olConn      // every open connection, by descriptor
	idle        []*olConn              // connections with nothing in flight
	busy        int                    // requests in flight
	start       time.Time              // the schedule's start, shared by the loops
	maxInflight int                    // this loop's share of the trial's limit
	drain       time.Duration
	buf         []byte // what one read takes

	// What the trial counts: connections dialled; of the sends due after
	// the warm-up, those offered, completed (answered or failed), answered
	// 2xx and dropped; their latencies and lateness in µs; the first
	// failure's reason.
	dialled                         int64
	offered, completed, ok, dropped int64
	latency, lateness               *hdrhistogram.Histogram
	firstErr                        string
}

// openLoopTrial replays reqs (each a whole request's wire form, cycling)
// to the IPv4 listener addr at rate for cfg.Trial, from one loop a core
// (GOMAXPROCS), each on its own locked OS thread with its own epoll and
// connections, loop k making sends k, k+loops, …: one thread would get
// only its share of the cores beside a sink's threads. It returns the trial
// judged by nothing yet (the caller judges it as it judges the flood's):
// the sends due in the warm-up are made but not counted, latency is from
// each send's intended time to its whole answer, and an answer that is
// not 2xx, or that this client cannot frame (see parseAnswer), fails its
// send.
func openLoopTrial(ctx context.Context, reqs [][]byte, addr string, rate float64, cfg config) outcome {
	return openLoopTrialWithin(ctx, reqs, addr, rate, cfg, openLoopLimits{inflight: openLoopMaxInflight, drain: openLoopDrain})
}

// openLoopTrialWithin is openLoopTrial within lim.
func openLoopTrialWithin(ctx context.Context, reqs [][]byte, addr string, rate float64, cfg config, lim openLoopLimits) outcome {
	o := outcome{Side: "open loop", Rate: rate}
	if len(reqs) == 0 || rate <= 0 {
		o.Why = "open loop: no requests or no rate"
		return o
	}
	// A literal only: the reference resolves no name while it measures.
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		o.Why = fmt.Sprintf("open loop: %s is not an IPv4 address and port", addr)
		return o
	}
	n := runtime.GOMAXPROCS(0)
	loops := make([]*openLoop, n)
	for k := range loops {
		l := &openLoop{reqs: reqs, sa: &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, conns: map[int32]*olConn{},
			maxInflight: max(1, lim.inflight/n), drain: lim.drain,
			buf:     make([]byte, 16<<10),
			latency: hdrhistogram.New(1, 60_000_000, 3), lateness: hdrhistogram.New(1, 60_000_000, 3)}
		if l.set, err = epoll.Open(256); err != nil {
			o.Why = "open loop: " + err.Error()
			for _, l := range loops[:k] {
				l.close()
			}
			return o
		}
		loops[k] = l
	}
	before := processCPU()
	start := time.Now()
	var sent atomic.Int64
	var wg sync.WaitGroup
	for k, l := range loops {
		wg.Go(func() {
			// Locked, so that each loop is a thread of its own that the
			// kernel schedules beside the sink's, and its waits in
			// epoll never hold another goroutine's thread.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer l.close()
			sent.Add(l.run(ctx, start, rate, int64(k), int64(n), cfg.Trial, cfg.Warmup))
		})
	}
	wg.Wait()
	after := processCPU()

	latency, lateness := hdrhistogram.New(1, 60_000_000, 3), hdrhistogram.New(1, 60_000_000, 3)
	for _, l := range loops {
		o.Offered += l.offered
		o.Completed += l.completed
		o.OK += l.ok
		o.Dropped += l.dropped
		o.Conns += l.dialled
		latency.Merge(l.latency)
		lateness.Merge(l.lateness)
		if o.FirstError == "" {
			o.FirstError = l.firstErr
		}
	}
	if w := (cfg.Trial - cfg.Warmup).Seconds(); w > 0 {
		o.Achieved = float64(o.OK) / w
	}
	if o.Completed > 0 {
		o.Success = float64(o.OK) / float64(o.Completed)
	}
	o.LatencyP99MS = usToMS(latency.ValueAtQuantile(99))
	o.LatenessP99MS = usToMS(lateness.ValueAtQuantile(99))
	if user, sys := after.user-before.user, after.sys-before.sys; sent.Load() > 0 && user+sys > 0 {
		o.CPUPerSend, o.KernelShare = 1e6*(user+sys)/float64(sent.Load()), sys/(user+sys)
	}
	if ctx.Err() != nil {
		o.Why = "interrupted"
	}
	return o
}

// run makes sends first, first+step, … of the schedule at rate from start
// until the trial's end, then waits up to l.drain for the answers in
// flight, and returns the sends made.
func (l *openLoop) run(ctx context.Context, start time.Time, rate float64, first, step int64, trial, warmup time.Duration) int64 {
	interval := float64(time.Second) / rate
	due := func(n int64) time.Duration { return time.Duration(float64(n) * interval) }
	l.start = start
	var sent int64
	n := first
	for ctx.Err() == nil {
		for ; due(n) <= time.Since(l.start) && due(n) < trial; n += step {
			if l.send(due(n), due(n) >= warmup, n) {
				sent++
			}
		}
		var wait time.Duration
		switch {
		case due(n) < trial:
			wait = due(n) - time.Since(l.start)
		case l.busy == 0 || time.Since(l.start) > trial+l.drain:
			l.abandon()
			return sent
		default:
			wait = 10 * time.Millisecond
		}
		if err := l.wait(min(max(wait, 0), 10*time.Millisecond)); err != nil {
			if l.firstErr == "" {
				l.firstErr = "epoll: " + err.Error()
			}
			l.abandon()
			return sent
		}
	}
	l.abandon()
	return sent
}

// send starts request n, intended at offset due, on an idle connection or
// a new one, and reports whether it was sent (not dropped or failed at
// once).
func (l *openLoop) send(due time.Duration, measured bool, n int64) bool {
	if measured {
		l.offered++
	}
	if l.busy >= l.maxInflight {
		if measured {
			l.dropped++
		}
		return false
	}
	var c *olConn
	if k := len(l.idle); k > 0 {
		c, l.idle = l.idle[k-1], l.idle[:k-1]
	} else {
		var err error
		if c, err = l.dial(); err != nil {
			if measured {
				l.failed("dial: " + err.Error())
			}
			return false
		}
	}
	c.busy, c.due, c.measured, c.in = true, due, measured, c.in[:0]
	c.out = l.reqs[n%int64(len(l.reqs))]
	l.busy++
	if measured {
		l.lateness.RecordValue(int64((time.Since(l.start) - due) / time.Microsecond))
	}
	if !c.connecting {
		l.write(c)
	}
	return true
}

// dial opens a non-blocking connection, watched edge-triggered for both
// directions; the request waits for the connect to complete.
func (l *openLoop) dial() (*olConn, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	if err := syscall.Connect(fd, l.sa); err != nil && err != syscall.EINPROGRESS {
		syscall.Close(fd)
		return nil, err
	}
	if err := l.set.Watch(fd, unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLRDHUP|unix.EPOLLET); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	c := &olConn{fd: fd, connecting: true, in: make([]byte, 0, 512)}
	l.conns[int32(fd)] = c
	l.dialled++
	return c, nil
}

// wait waits up to d for the sockets' events and handles them.
func (l *openLoop) wait(d time.Duration) error {
	events, err := l.set.Wait(d)
	if err != nil {
		return err
	}
	for _, ev := range events {
		if c := l.conns[ev.Fd]; c != nil {
			l.handle(c, ev.Events)
		}
	}
	return nil
}

// handle is c's share of an epoll wake-up.
func (l *openLoop) handle(c *olConn, events uint32) {
	if c.connecting && events&(syscall.EPOLLOUT|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
		c.connecting = false
		if soErr, err := syscall.GetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_ERROR); err != nil || soErr != 0 {
			l.drop(c, fmt.Sprintf("connect: %v", orErrno(err, syscall.Errno(soErr))))
			return
		}
	}
	if c.busy && len(c.out) > 0 {
		l.write(c)
	}
	if events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && l.conns[int32(c.fd)] == c {
		l.read(c, events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0)
	}
}

// orErrno is err, or else errno.
func orErrno(err error, errno syscall.Errno) error {
	if err != nil {
		return err
	}
	return errno
}

// write writes what is left of c's request, as far as the socket takes it.
func (l *openLoop) write(c *olConn) {
	for len(c.out) > 0 {
		w, err := syscall.Write(c.fd, c.out)
		switch {
		case err == syscall.EAGAIN:
			return
		case err == syscall.EINTR:
			continue
		case err != nil:
			l.drop(c, "write: "+err.Error())
			return
		}
		c.out = c.out[w:]
	}
}

// read reads what has arrived on c, and settles its request once the
// whole answer is there; ending is whether the server's close (or an
// error) came with it, so that c is not kept for another request.
func (l *openLoop) read(c *olConn, ending bool) {
	for {
		r, err := syscall.Read(c.fd, l.buf)
		switch {
		case err == syscall.EAGAIN:
			return
		case err == syscall.EINTR:
			continue
		case err != nil:
			l.drop(c, "read: "+err.Error())
			return
		case r == 0:
			l.drop(c, "the server closed the connection")
			return
		}
		if !c.busy {
			l.drop(c, "an answer nobody asked for")
			return
		}
		c.in = append(c.in, l.buf[:r]...)
		a, err := parseAnswer(c.in)
		if err != nil {
			l.drop(c, err.Error())
			return
		}
		if a.size == 0 {
			continue // not whole yet
		}
		if a.size < len(c.in) {
			l.drop(c, "bytes after the answer")
			return
		}
		why := ""
		if a.status < 200 || a.status > 299 {
			why = fmt.Sprintf("%d", a.status)
		}
		c.busy = false
		l.busy--
		l.settle(c, why == "", why)
		if a.close || ending {
			l.discard(c)
			return
		}
		l.idle = append(l.idle, c)
		// Read on to EAGAIN: a close that came right behind the answer
		// shows now (a read of 0 discards c), not on the next send.
	}
}

// settle counts c's request, if it is measured: answered ok, or failed
// for why.
func (l *openLoop) settle(c *olConn, ok bool, why string) {
	switch {
	case !c.measured:
	case ok:
		l.completed++
		l.ok++
		l.latency.RecordValue(int64((time.Since(l.start) - c.due) / time.Microsecond))
	default:
		l.failed(why)
	}
}

// failed counts a measured send that failed for why.
func (l *openLoop) failed(why string) {
	l.completed++
	if l.firstErr == "" {
		l.firstErr = why
	}
}

// drop fails c's request in flight, if any, for why, and closes c.
func (l *openLoop) drop(c *olConn, why string) {
	if c.busy {
		c.busy = false
		l.busy--
		l.settle(c, false, why)
	}
	l.discard(c)
}

// discard closes c and forgets it, taking it off the idle list.
func (l *openLoop) discard(c *olConn) {
	delete(l.conns, int32(c.fd))
	syscall.Close(c.fd)
	for i, ic := range l.idle {
		if ic == c {
			l.idle = append(l.idle[:i], l.idle[i+1:]...)
			break
		}
	}
}

// abandon fails every request still in flight: its answer did not come
// within the drain.
func (l *openLoop) abandon() {
	for _, c := range l.conns {
		if c.busy {
			l.drop(c, "no answer within the trial and its drain")
		}
	}
}

// close closes every connection and the epoll instance.
func (l *openLoop) close() {
	for _, c := range l.conns {
		syscall.Close(c.fd)
	}
	l.set.Close()
}
