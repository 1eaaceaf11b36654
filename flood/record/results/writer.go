package results

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// DefaultBuffer is how many lines a Writer queues by default between the
// send path and its one writing goroutine: a second or more of a fast
// flood, so that a disk's hiccup costs no line.
const DefaultBuffer = 1 << 14

// flushEvery bounds how long a written line waits in the buffers, so that
// a reader (jq at the other end of a pipe) sees the run as it goes and a
// full disk is known within that time, not at the end.
const flushEvery = 200 * time.Millisecond

// Options configures a Writer. Every field may be zero.
type Options struct {
	// Describe says who sent the request a token rides on, and how it was
	// signed (Sender). It runs on the send path (Collector.Settled), so it
	// must be cheap and safe for concurrent use. nil: no sender is written.
	Describe func(token any) Sender
	// Buffer is how many lines may wait for the writing goroutine; a line
	// that finds it full is lost and counted (EndLine.Lost, Close's error).
	// 0 = DefaultBuffer.
	Buffer int
}

// Writer writes the sends of one or more runs (Writer.Run) as NDJSON, from
// one goroutine fed through a bounded queue, so that writing never blocks a
// send. The first write that fails (a full disk, a closed pipe) is kept:
// Failed closes, Err says which file and why, and nothing more is written;
// the run that feeds it should stop (what loadrun does), since every line
// after it would be a silent gap.
type Writer struct {
	name  string
	o     Options
	queue chan entry
	done  chan struct{} // the writing goroutine returned

	failed  chan struct{}
	failure sync.Once
	err     error // set before failed closes

	lost atomic.Int64 // lines the full queue refused, every run
	runs int          // runs begun: the next one's index

	// The writing goroutine's alone.
	out   *bufio.Writer
	comp  flushCloser   // nil: not compressed
	to    io.Writer     // comp, or out: where a line goes
	enc   *json.Encoder // writes a line to to
	line  []byte        // a send line appended (appendSendLine), reused
	made  lineScratch   // a send line made, reused
	close func() error
	// wrote: a line was handed to the output. Until then nothing is
	// flushed, nor a compressed stream ended: a run that failed before its
	// first line leaves the file as it found it. Read by Close after the
	// goroutine ended.
	wrote bool
}

// entry is one line for the writing goroutine, or a request to flush.
type entry struct {
	head    *RunLine
	end     *EndLine
	flushed chan struct{} // a flush: closed once written through
	send    send
}

// send is what Settled heard of one request, copied off the worker's
// Delivery (valid only during the call).
type send struct {
	run     int
	sent    bool
	aborted bool
	offered bool
	d       record.Delivery
	o       record.Offer
	who     Sender
}

// Create opens path for results, compressed by its name (.gz gzip, .zst
// zstd); "-" writes to stdout instead, which Close leaves open. A file that
// exists is replaced when the first line is written, not before: a run that
// fails before its first line (a persona not found) leaves an earlier run's
// results as they were, and a file Create made for it is removed.
func Create(path string, stdout io.Writer, o Options) (*Writer, error) {
	if path == "-" {
		return NewWriter(stdout, "stdout", CompressionOf(""), o)
	}
	_, statErr := os.Stat(path)
	existed := statErr == nil
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("results: %w", err)
	}
	w, err := NewWriter(&replacedOnWrite{f: f, regular: info.Mode().IsRegular()}, path, CompressionOf(path), o)
	if err != nil {
		f.Close()
		return nil, err
	}
	inner := w.close
	w.close = func() error {
		err := errors.Join(inner(), f.Close())
		if !w.wrote && !existed {
			os.Remove(path) // made for a run that wrote nothing
		}
		return err
	}
	return w, nil
}

// replacedOnWrite is a results file opened without truncation, truncated
// at its first write (a regular file's; a pipe or a device has nothing to
// truncate), so that what it held survives a run that never wrote.
type replacedOnWrite struct {
	f       *os.File
	regular bool
	begun   bool
}

func (r *replacedOnWrite) Write(p []byte) (int, error) {
	if !r.begun {
		r.begun = true
		if r.regular {
			if err := r.f.Truncate(0); err != nil {
				return 0, err
			}
		}
	}
	return r.f.Write(p)
}

// NewWriter writes results to dst, compressed with c; name says where in
// errors. Close does not close dst.
func NewWriter(dst io.Writer, name string, c Compression, o Options) (*Writer, error) {
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	w := &Writer{name: name, o: o, queue: make(chan entry, o.Buffer), done: make(chan struct{}), failed: make(chan struct{})}
	w.out = bufio.NewWriterSize(dst, 64<<10)
	var to io.Writer = w.out
	comp, err := c.writer(w.out)
	if err != nil {
		return nil, fmt.Errorf("results %s: %w", name, err)
	}
	if comp != nil {
		w.comp, to = comp, comp
	}
	w.to = to
	w.enc = json.NewEncoder(to)
	w.enc.SetEscapeHTML(false) // URLs stay as they are
	w.close = func() error { return nil }
	go w.loop()
	return w, nil
}

// Failed is closed once a write failed (Err says why).
func (w *Writer) Failed() <-chan struct{} { return w.failed }

// Err is the first write's failure, naming the file; nil while every line
// was written.
func (w *Writer) Err() error {
	select {
	case <-w.failed:
		return w.err
	default:
		return nil
	}
}

// Lost is how many send lines found the queue full, in every run so far.
func (w *Writer) Lost() int64 { return w.lost.Load() }

// Close writes what is queued, ends the compression and closes the file
// (never stdout). Its error is the first write's failure, or a count of
// lines lost, or the close's own; each names the file. Close the Writer
// once, after the last run ended.
func (w *Writer) Close() error {
	close(w.queue)
	<-w.done
	err := w.Err()
	if err == nil && w.comp != nil && w.wrote {
		err = w.wrap(w.comp.Close())
	}
	if err == nil && w.wrote {
		err = w.wrap(w.out.Flush())
	}
	err = errors.Join(err, w.wrap(w.close()))
	if n := w.lost.Load(); n > 0 && w.Err() == nil {
		err = errors.Join(err, fmt.Errorf("results %s: %d send lines lost: the writer fell behind the flood (write to a faster disk, or without compression)", w.name, n))
	}
	return err
}

func (w *Writer) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("results %s: %w", w.name, err)
}

// fail keeps the first failure and says so.
func (w *Writer) fail(err error) {
	w.failure.Do(func() {
		w.err = w.wrap(err)
		close(w.failed)
	})
}

// gatherPause is how long the writing goroutine lets lines gather in the
// queue after it wrote what was there, when the queue holds at least
// gatherMinBuffer lines. Woken for each line, it cost a fast flood a
// wake-up a send. Each pause costs wake-ups of its own (the goroutine
// parked on a timer, a thread woken for it): at 2 ms a presigned flood at
// 1 000/s took 1.4-1.5 context switches and 31-41 µs of CPU a send more
// with --results than without; at 20 ms, 0.3-0.4 and 9-16 µs
// (BenchmarkResultsAtModerateRate in the bench). A line reaches the file
// within flushEvery and one pause (220 ms, against 202), and the default
// queue takes 800 000 lines a second in a pause. A writer slower than its
// lines (compressing near its speed) loses none where rate × (the pause +
// its drain) stays within the queue.
const gatherPause = 20 * time.Millisecond

// gatherMinBuffer is the least queue that pauses, and takes 409 600 lines
// a second in a pause: a smaller one (a caller's choice) is written as its
// lines come, so that it loses no more of them than it did.
const gatherMinBuffer = 8192

// loop writes the queue's lines until Close, flushing every flushEvery;
// after a failure it drains the queue without writing, so that no send
// ever waits for it. Woken by a line, it writes what else is queued,
// then, when the queue holds gatherMinBuffer lines or more, pauses
// (gatherPause) for more to gather.
func (w *Writer) loop() {
	defer close(w.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	pause := cap(w.queue) >= gatherMinBuffer
	for {
		select {
		case e, ok := <-w.queue:
			if !ok {
				return
			}
			w.write(e)
			if !w.drain() {
				return
			}
			if pause {
				time.Sleep(gatherPause)
				// A flush due in the pause goes first: the queue is
				// ready after every pause, and a select taking it over
				// and over would hold the flush back a pause each time.
				select {
				case <-tick.C:
					w.flush()
				default:
				}
			}
		case <-tick.C:
			w.flush()
		}
	}
}

// drain writes the lines queued now, without waiting for more; false
// once the queue is closed (Close).
func (w *Writer) drain() bool {
	for {
		select {
		case e, ok := <-w.queue:
			if !ok {
				return false
			}
			w.write(e)
		default:
			return true
		}
	}
}

// write writes one entry, unless a write failed before.
func (w *Writer) write(e entry) {
	if e.flushed != nil {
		w.flush()
		close(e.flushed)
		return
	}
	if w.Err() != nil {
		return
	}
	w.wrote = true
	var v any
	switch {
	case e.head != nil:
		v = e.head
	case e.end != nil:
		v = e.end
	default:
		l := w.made.line(&e.send)
		if line, ok := appendSendLine(w.line[:0], l); ok {
			w.line = line
			if _, err := w.to.Write(line); err != nil {
				w.fail(err)
			}
			return
		}
		v = l
	}
	if err := w.enc.Encode(v); err != nil {
		w.fail(err)
	}
}

// flush pushes what is buffered (and compressed) to the file; before the
// first line there is nothing, and a compressor's header alone would
// replace the file.
func (w *Writer) flush() {
	if w.Err() != nil || !w.wrote {
		return
	}
	if w.comp != nil {
		if err := w.comp.Flush(); err != nil {
			w.fail(err)
			return
		}
	}
	if err := w.out.Flush(); err != nil {
		w.fail(err)
	}
}
