//go:build linux

package flood

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/h1"
	"golang.org/x/sys/unix"
)

// shardLog is a collector noting, per send, the shard its Answered came
// on and its Delivery.
type shardLog struct {
	settledFunc
	mu     sync.Mutex
	shards []int
	ds     []record.Delivery
}

func (s *shardLog) Answered(shard int, d *record.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shards = append(s.shards, shard)
	s.ds = append(s.ds, *d)
}

// TestDispatcherReadsWholeAnswers: the dispatcher reads the answer to a
// request it wrote itself once the whole of it has arrived (its own
// worker, shard 0), a part waiting for the rest, and
// leaves to a worker what it cannot be sure of reading without waiting
// (a chunked body, one larger than its look), and an answer that does
// not come by the send's deadline, which the worker ends as a timeout.
// The server is a real listener writing each answer as the row says.
func TestDispatcherReadsWholeAnswers(t *testing.T) {
	needAnswerLoop(t)
	big := strings.Repeat("x", answerLook)
	for _, c := range []struct {
		name    string
		parts   []string      // the answer, written part by part
		pause   time.Duration // between the parts
		timeout time.Duration // the run's per-send timeout (0: the default)
		class   record.Class  // how each send the dispatcher wrote ends
		source  sourceKind    // whether the Source says Next is ready
		byLoop  bool          // the dispatcher reads those answers itself
	}{
		// A 202 with its length: the dispatcher's to read.
		{"whole", []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok"}, 0, 0, record.Class202, alwaysReady, true},
		// Its head first, its body 30 ms later: the dispatcher waits for
		// the rest, and the send's service time holds the pause.
		{"in two parts", []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n", "ok"}, 30 * time.Millisecond, 0, record.Class202, alwaysReady, true},
		// The rest after the next send is due, the Source ready: still
		// the dispatcher's.
		{"past the next send", []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n", "ok"}, 80 * time.Millisecond, 0, record.Class202, alwaysReady, true},
		// The same from a Source whose Next may wait: the answers awaited
		// go to workers before it is called (all but the last send's).
		{"past a Next that may wait", []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n", "ok"}, 80 * time.Millisecond, 0, record.Class202, neverReady, false},
		// A Source that does not say: every answer is a worker's.
		{"a Source that does not say", []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok"}, 0, 0, record.Class202, silent, false},
		// A chunked body: a worker's.
		{"chunked", []string{"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"}, 0, 0, record.Class202, alwaysReady, false},
		// A body longer than the dispatcher's look: a worker's.
		{"larger than the look", []string{"HTTP/1.1 202 Accepted\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big}, 0, 0, record.Class202, alwaysReady, false},
		// Half an answer, and the rest after the deadline: a worker's, a
		// timeout. (The first answer on each connection comes whole, so
		// that a connection rests for the dispatcher to write on.)
		{"past the deadline", []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n", "ok"}, 400 * time.Millisecond, 150 * time.Millisecond, record.ClassTimeout, alwaysReady, false},
		// Half an answer, and then the server's close: a worker's, a
		// connection error at once, not at the deadline.
		{"a part, then the close", []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 5\r\n\r\nok", closeNow, "!!!"}, 0, 2 * time.Second, record.ClassConnError, alwaysReady, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := partsServer(t, c.parts, c.pause, c.class == record.ClassTimeout || c.class == record.ClassConnError)
			tr := NewClientTransport(TransportOptions{Client: ClientFast})
			defer tr.CloseIdleConnections()
			log := &shardLog{settledFunc: func(any, record.Outcome) {}}
			const sends = 12
			// 50 ms apart: each answer is in before the next send is due
			// (but a timed-out one, whose connection is closed).
			mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, 20), Transport: tr, Limits: Limits{MaxSends: sends, Timeout: c.timeout},
				Source: c.source.of(numbered(t, "http://"+addr+"/inbox", &eventLog{}, func(int) any { return nil }))}, log)

			if len(log.ds) != sends {
				t.Fatalf("%d answered, want %d", len(log.ds), sends)
			}
			written, byLoop := 0, 0
			var late []string
			for i, d := range log.ds {
				if d.Actual < d.Intended || d.Done < d.Picked || d.Done < d.Actual {
					t.Errorf("send %d's times are out of order: intended %v, picked %v, sent %v, done %v", i, d.Intended, d.Picked, d.Actual, d.Done)
				}
				if !d.Written {
					continue // a worker's from the start: it dialled
				}
				written++
				if d.Class != c.class {
					t.Errorf("send %d ended %v (status %d), want %v", i, d.Class, d.Status, c.class)
				}
				if c.pause > 0 && c.class == record.Class202 && d.Done-d.Actual < c.pause {
					t.Errorf("send %d was done %v after it was sent, before the rest of its answer (%v)", i, d.Done-d.Actual, c.pause)
				}
				// The dispatcher never waits for an answer: each send
				// leaves on time (within what a loaded machine adds),
				// where one that waited for a part would be 30-80 ms late.
				if i > 0 && d.Actual-d.Intended > 20*time.Millisecond {
					late = append(late, fmt.Sprintf("send %d %v", i, d.Actual-d.Intended))
				}
				if c.class == record.ClassTimeout && (d.Done-d.Actual < c.timeout || d.Done-d.Actual > c.timeout+loopWaitMax+300*time.Millisecond) {
					t.Errorf("send %d timed out %v after it was sent, want %v", i, d.Done-d.Actual, c.timeout)
				}
				if c.class == record.ClassConnError && d.Done-d.Actual > c.timeout/2 {
					t.Errorf("send %d failed %v after it was sent, want at the server's close", i, d.Done-d.Actual)
				}
				if log.shards[i] == 0 {
					byLoop++
				}
			}
			// A dispatcher that waited for answers makes every send after
			// the first late; a stall of a loaded machine (another
			// package's tests beside these) delays one or two.
			if len(late) > written/4 {
				t.Errorf("%d of %d sends written left late: %s", len(late), written, strings.Join(late, ", "))
			}
			// The first send dials; after it a connection rests before
			// most sends are due, but a machine that stalls may leave one
			// to a worker that dials: most, not all.
			if written < sends/3 {
				t.Fatalf("the dispatcher wrote %d of %d sends, too few to judge its reading", written, sends)
			}
			notByLoop := 0
			if c.source == neverReady {
				notByLoop = 1 // but the last: no Next comes after it
			}
			if c.byLoop && byLoop < written || !c.byLoop && byLoop > notByLoop {
				t.Errorf("the dispatcher read %d of the %d answers to what it wrote, want it to read them: %v", byLoop, written, c.byLoop)
			}
		})
	}
}

// offerLog is a shardLog that also notes, for each answer it hears of,
// how many sends had been offered (written) by then.
type offerLog struct {
	shardLog
	offered  atomic.Int64
	dropped  atomic.Int64
	offersAt []int64 // by answer, as shardLog's
}

func (l *offerLog) Offered(o record.Offer) {
	l.offered.Add(1)
	if o.Dropped {
		l.dropped.Add(1)
	}
}

func (l *offerLog) Answered(shard int, d *record.Delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shards = append(l.shards, shard)
	l.ds = append(l.ds, *d)
	l.offersAt = append(l.offersAt, l.offered.Load())
}

// TestQuietDispatcherTimesAnswersAtArrival: where the kernel stamps every
// socket, the dispatcher does not wake for an answer. With sends closer
// than loopWaitMax it reads each after its next send (the collector hears
// of the answer once that send is offered, not before); with sends
// further apart, within loopWaitMax, before the next send. Either way it
// times an answer when the kernel received it, not at that read. A
// dispatcher that woke for each answer would be heard of before the next
// send in the first row; one that slept to the next send in the second
// would be heard of after it; one that timed answers at the read would
// say they took about a gap.
func TestQuietDispatcherTimesAnswersAtArrival(t *testing.T) {
	needAnswerLoop(t)
	for _, c := range []struct {
		name        string
		gap         time.Duration // between sends
		sends       int
		maxInflight int  // the run's Limits.MaxInflight (0: the default)
		afterNext   bool // the dispatcher reads an answer after its next send
	}{
		// 125 sends a second: each answer is read after the next send.
		{"closer than loopWaitMax", loopWaitMax * 4 / 5, 30, 0, true},
		// 16 a second: each is read within loopWaitMax, before the next.
		{"further apart than loopWaitMax", 6 * loopWaitMax, 8, 0, false},
		// One send in flight at most: with no slot free when the next
		// send is due, the answer come since is read first, before that
		// send is offered, and frees its slot, so the send is not dropped
		// (one that was would leave the slot taken to the end).
		{"one in flight", loopWaitMax * 4 / 5, 30, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := partsServer(t, []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok"}, 0, false)
			tr := NewClientTransport(TransportOptions{Client: ClientFast})
			defer tr.CloseIdleConnections()
			log := &offerLog{shardLog: shardLog{settledFunc: func(any, record.Outcome) {}}}
			mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, float64(time.Second)/float64(c.gap)), Transport: tr, Limits: Limits{MaxSends: int64(c.sends), MaxInflight: c.maxInflight},
				Source: alwaysReady.of(numbered(t, "http://"+addr+"/inbox", &eventLog{}, func(int) any { return nil }))}, log)

			read, asWanted, slow := 0, 0, 0
			for i, d := range log.ds {
				n := int64((d.Intended + c.gap/2) / c.gap) // the send's place in the schedule
				if !d.Written || log.shards[i] != 0 || n == int64(c.sends-1) {
					continue // a worker's, or the last, read as the run ends
				}
				read++
				if (log.offersAt[i] >= n+2) == c.afterNext {
					asWanted++
				}
				if d.Done-d.Actual > c.gap/2 {
					slow++
				}
			}
			if read < c.sends/3 {
				t.Fatalf("the dispatcher read %d answers of %d sends, too few to judge", read, c.sends)
			}
			// A loopback answer comes within microseconds of the write,
			// but on a loaded machine a poll may find it sooner or later
			// than the rule: most, not all.
			if asWanted < read*3/4 {
				t.Errorf("%d of the %d answers the dispatcher read were read as wanted (after its next send: %v)", asWanted, read, c.afterNext)
			}
			if slow > read/4 {
				t.Errorf("%d of the %d answers the dispatcher read took over %v: timed when read, not when they arrived", slow, read, c.gap/2)
			}
			if n := log.dropped.Load(); n > int64(c.sends/4) {
				t.Errorf("%d of %d sends dropped for want of a slot, want few: answers come within microseconds", n, c.sends)
			}
		})
	}
}

// TestQuietDispatcherReadsBeforeADeadline: an answer whole a little
// before its send's deadline is read before it, an answer (202), not a
// timeout: near a deadline the quiet dispatcher wakes for each answer.
// Looking only every loopWaitMax, it would look first after the
// deadline, and find the answer too late; and so would a dispatcher that
// gave its whole wait to its Source's work (busyFiller, as a pipeline
// signing in the waits with its buffer short does).
func TestQuietDispatcherReadsBeforeADeadline(t *testing.T) {
	for _, busy := range []bool{false, true} {
		t.Run(map[bool]string{false: "its waits its own", true: "beside a Source working in its waits"}[busy], func(t *testing.T) {
			quietReadsBeforeADeadline(t, busy)
		})
	}
}

// busyFiller is a NextReady Source whose FillAhead always works, a
// millisecond at a time.
type busyFiller struct{ readySource }

func (busyFiller) FillAhead(time.Duration) bool {
	time.Sleep(time.Millisecond)
	return true
}

func quietReadsBeforeADeadline(t *testing.T, busy bool) {
	needAnswerLoop(t)
	const timeout = 5 * loopWaitMax
	pause := timeout - loopWaitMax/2 // the answer's rest, 5 ms before the deadline
	addr := partsServer(t, []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n", "ok"}, pause, false)
	tr := NewClientTransport(TransportOptions{Client: ClientFast})
	defer tr.CloseIdleConnections()
	log := &shardLog{settledFunc: func(any, record.Outcome) {}}
	const sends = 8
	src := alwaysReady.of(numbered(t, "http://"+addr+"/inbox", &eventLog{}, func(int) any { return nil }))
	if busy {
		src = busyFiller{src.(readySource)}
	}
	mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, float64(time.Second)/float64(2*timeout)), Transport: tr,
		Limits: Limits{MaxSends: sends, Timeout: timeout}, Source: src}, log)
	written, answered := 0, 0
	for _, d := range log.ds {
		if !d.Written {
			continue // a worker's: it dialled
		}
		written++
		if d.Class == record.Class202 {
			answered++
		}
	}
	if written < sends/3 {
		t.Fatalf("the dispatcher wrote %d of %d sends, too few to judge", written, sends)
	}
	// A loaded machine may make the server's pause overrun the 5 ms.
	if answered < written*3/4 {
		t.Errorf("%d of the %d answers whole %v before their deadline were read as answers, want all but a few", answered, written, timeout-pause)
	}
}

// TestAnsweredAt: an answer the loop reads is timed at the kernel's stamp
// of its last bytes when the stamp is trusted and falls between its send
// and its read, else when the wait that found it returned.
func TestAnsweredAt(t *testing.T) {
	const sent, polled, read = 10 * time.Millisecond, 30 * time.Millisecond, 31 * time.Millisecond
	for _, c := range []struct {
		name    string
		stamp   time.Duration
		trusted bool
		want    time.Duration
	}{
		// Received between the send and the wait: its stamp.
		{"before the wait", 12 * time.Millisecond, true, 12 * time.Millisecond},
		// Received while the batch was read, after the wait returned:
		// still its stamp, later than the wait.
		{"during the batch", polled + 500*time.Microsecond, true, polled + 500*time.Microsecond},
		// At the send itself: the earliest it may be.
		{"at the send", sent, true, sent},
		// Before its send: a wall clock's step, not a time: the wait's.
		{"before the send", sent - time.Microsecond, true, polled},
		// After the read: a step the other way: the wait's.
		{"after the read", read + time.Microsecond, true, polled},
		// The wall clock stepped since the last wait: the wait's.
		{"not trusted", 12 * time.Millisecond, false, polled},
	} {
		if got := answeredAt(sent, polled, read, c.stamp, c.trusted); got != c.want {
			t.Errorf("%s: answeredAt = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDispatcherReadsRateLimits: an answer the dispatcher reads itself
// (h1's ReadArrived) gives the record what a worker's reading gives: its
// status, its size and what it says of the SUT's rate limit, the fields'
// names in the server's own case.
func TestDispatcherReadsRateLimits(t *testing.T) {
	needAnswerLoop(t)
	addr := partsServer(t, []string{"HTTP/1.1 429 Too Many Requests\r\nx-ratelimit-remaining: 7\r\nRETRY-AFTER: 2\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nslow"}, 0, false)
	h := h1.NewTransport(h1.Options{})
	defer h.CloseIdleConnections()
	tr := arrivedCount{Transport: h, read: &atomic.Int64{}}
	log := &shardLog{settledFunc: func(any, record.Outcome) {}}
	const sends = 12
	mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, 20), Transport: tr, Limits: Limits{MaxSends: sends},
		Source: alwaysReady.of(numbered(t, "http://"+addr+"/inbox", &eventLog{}, func(int) any { return nil }))}, log)
	byLoop := 0
	for i, d := range log.ds {
		if d.Class != record.Class429 || d.GotBytes != 4 {
			t.Errorf("send %d ended %v with %d bytes, want a 429 of 4", i, d.Class, d.GotBytes)
		}
		rl := d.RateLimit
		if rl.Said&record.SaidRemaining == 0 || rl.Remaining != 7 || rl.Said&record.SaidRetryAfter == 0 {
			t.Errorf("send %d's rate limit %+v, want 7 remaining and a Retry-After", i, rl)
		}
		if d.Written && log.shards[i] == 0 {
			byLoop++
		}
	}
	if byLoop == 0 || tr.read.Load() != int64(byLoop) {
		t.Errorf("the dispatcher read %d answers, %d of them from the bytes it looked at; want some, all so", byLoop, tr.read.Load())
	}
}

// arrivedCount is h1's transport, counting the answers ReadArrived read
// (not left to Read).
type arrivedCount struct {
	*h1.Transport
	read *atomic.Int64
}

func (t arrivedCount) ReadArrived(w h1.Written, got []byte, keep func([]byte) bool) (h1.Answer, error) {
	a, err := t.Transport.ReadArrived(w, got, keep)
	if err != h1.ErrNotPlain {
		t.read.Add(1)
	}
	return a, err
}

// TestInterruptedRunLeavesNoAnswerAwaited: a run interrupted while the
// dispatcher awaits answers to what it wrote ends each of those sends as
// aborted, at once, not at its deadline.
func TestInterruptedRunLeavesNoAnswerAwaited(t *testing.T) {
	needAnswerLoop(t)
	// The first answer on a connection comes whole, so that it rests for
	// the dispatcher to write on; every later one is held.
	addr := partsServer(t, []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n", "ok"}, 5*time.Second, true)
	tr := NewClientTransport(TransportOptions{Client: ClientFast})
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	settledLog := &outcomeLog{}
	nexts := &eventLog{}
	began := time.Now()
	res, _ := recorded(ctx, Plan{Pacer: mustConstant(t, 50), Transport: tr, Limits: Limits{Timeout: 10 * time.Second, Duration: 2 * time.Second},
		Source: alwaysReady.of(numbered(t, "http://"+addr+"/inbox", nexts, func(int) any { return nil }))}, settledLog.collector())
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("the interrupted run took %v to end, want it to end at once", took)
	}
	if res == nil || res.Reason != record.ReasonInterrupted {
		t.Fatalf("the run ended %+v, want interrupted", res)
	}
	if len(settledLog.outcomes) != len(nexts.events) {
		t.Errorf("%d requests settled of the %d taken from the Source: none may be lost", len(settledLog.outcomes), len(nexts.events))
	}
	// The dispatcher wrote each send that found a connection resting, and
	// the server holds each of those answers past the run.
	written := 0
	for _, o := range settledLog.outcomes {
		if o.Delivery == nil || !o.Delivery.Written {
			continue
		}
		written++
		if !o.Aborted {
			t.Errorf("a send awaited when the run was interrupted ended %+v, want aborted", *o.Delivery)
		}
	}
	if written == 0 {
		t.Error("the dispatcher wrote no send: none was awaited when the run was interrupted")
	}
}

// needAnswerLoop skips t where the dispatcher reads no answer: the
// kernel refuses epoll_pwait2 (newAnswerLoop) or a real-time thread.
func needAnswerLoop(t *testing.T) {
	t.Helper()
	needLoopWaits(t)
	realtime := make(chan bool, 1)
	go func() {
		thread, restore := preciseThread(true)
		realtime <- thread.RealTime()
		restore()
	}()
	if !<-realtime {
		t.Skip("the kernel refuses the dispatcher a real-time policy: workers read every answer")
	}
}

// needLoopWaits skips t where no dispatcher reads answers: the kernel
// refuses epoll_pwait2 (newAnswerLoop).
func needLoopWaits(t *testing.T) {
	t.Helper()
	e := &crew{written: h1.NewTransport(h1.Options{}), ctx: t.Context()}
	l := newAnswerLoop(e, 0)
	if l == nil {
		t.Skip("the kernel refuses epoll_pwait2 (before Linux 5.11, or a seccomp profile): workers read every answer")
	}
	l.finish(e)
}

// closeNow, as a part, closes the connection.
const closeNow = "\x00close"

// partsServer listens on the loopback and answers every request with
// parts, pause apart (closeNow closing the connection); with firstWhole,
// the first request on a connection with them all at once, closeNow left
// out.
func partsServer(t *testing.T, parts []string, pause time.Duration, firstWhole bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				go func() { <-stop; c.Close() }()
				r := bufio.NewReader(c)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					for i, p := range parts {
						if i > 0 && !(firstWhole && n == 0) {
							select {
							case <-time.After(pause):
							case <-stop:
								return
							}
						}
						if p == closeNow {
							if firstWhole && n == 0 {
								continue
							}
							return
						}
						if _, err := io.WriteString(c, p); err != nil {
							return
						}
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// oneCPUChild is set in the environment of the test binary that
// TestOneCPUDispatcherReadsItsAnswers runs under taskset(1).
const oneCPUChild = "CROWD_TEST_ONE_CPU_CHILD"

// TestOneCPUDispatcherReadsItsAnswers: a dispatcher that may run on one
// CPU reads the answers to what it wrote itself, quiet, under the normal
// policy (asked for: on a machine of one CPU the kernel may grant the
// deadline policy, where taskset's one CPU of two it refuses), and the
// result says it had one CPU. Where the process may run on more, the test runs
// itself again under taskset(1) on its first CPU.
func TestOneCPUDispatcherReadsItsAnswers(t *testing.T) {
	if os.Getenv(oneCPUChild) == "" && threadCPUs() != 1 {
		taskset, err := exec.LookPath("taskset")
		if err != nil {
			t.Skip("no taskset(1) (util-linux) to run the test on one CPU")
		}
		var cpus unix.CPUSet
		if err := unix.SchedGetaffinity(0, &cpus); err != nil {
			t.Fatal(err)
		}
		first := 0
		for !cpus.IsSet(first) {
			first++
		}
		rerun(t, "TestOneCPUDispatcherReadsItsAnswers", oneCPUChild, taskset, "--cpu-list", strconv.Itoa(first))
		return
	}
	if n := threadCPUs(); n != 1 {
		t.Fatalf("the child may run on %d CPUs, want 1", n)
	}
	needLoopWaits(t)
	addr := partsServer(t, []string{"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok"}, 0, false)
	tr := NewClientTransport(TransportOptions{Client: ClientFast})
	defer tr.CloseIdleConnections()
	log := &shardLog{settledFunc: func(any, record.Outcome) {}}
	const sends = 60
	res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, 200), Transport: tr, Limits: Limits{MaxSends: sends}, Priority: PriorityNormal,
		Source: alwaysReady.of(numbered(t, "http://"+addr+"/inbox", &eventLog{}, func(int) any { return nil }))}, log)
	if d := res.Dispatcher; d.CPUs != 1 || d.RealTime() {
		t.Errorf("the result says the dispatcher ran under %q on %d CPUs, want the normal policy on 1", d.Policy, d.CPUs)
	}
	written, read := 0, 0
	for i, d := range log.ds {
		if d.Written {
			written++
			if log.shards[i] == 0 {
				read++
			}
		}
	}
	// A worker reads the first answers of a connection it dialled, and
	// those the loop leaves as the run ends.
	if written < sends/2 || read < written*3/4 {
		t.Errorf("the dispatcher wrote %d of %d sends and read %d of their answers itself, want most of both", written, sends, read)
	}
}
