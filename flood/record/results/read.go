package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// maxLine bounds one line of a results file: a send line is a few hundred
// bytes, a run line a few more; anything longer is not a results file.
const maxLine = 1 << 20

// maxRun bounds the length of the runs of a results file read back,
// together, beyond what its lines allow (linesRun each): each run's
// timeline has a tick a second, so a corrupt end time years away (or a
// short file of many runs each claiming days) would otherwise be a loop and
// a timeline of years of ticks. No flood runs a week, and files of many
// floods appended (--results - >> all.ndjson) bring lines with their runs.
const maxRun = 7 * 24 * time.Hour

// linesRun is the run time each line of a results file allows beyond
// maxRun: a run of a minute has a run line and an end line at least.
const linesRun = time.Hour

// Open opens the results file at path ("-": stdin), decompressed by its
// content: a gzip or zstd stream by its magic number, whatever the name
// says (stdin, a .json name, capitals), anything else read as it is.
func Open(path string, stdin io.Reader) (io.ReadCloser, error) {
	var src io.Reader = stdin
	var f *os.File
	if path != "-" {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
		src = f
	}
	br := bufio.NewReader(src)
	head, _ := br.Peek(len(zstdMagic)) // a short file is no compressed stream; a read error shows at the first read
	r, err := compressionIn(head).reader(br)
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f == nil {
		return r, nil
	}
	return readCloser{r, f}, nil
}

// Sniff reports whether the file at path holds results, by its content,
// as SniffReader says of a stream: a compressed stream (no run record is
// compressed), and whether its first line is a results file's run line. A
// file it cannot read is not, and says why in err; nor is one that is no
// regular file (a pipe, <(…) or /dev/stdin), whose start the look would
// consume before its reader reads it: err says so, and the caller goes by
// the name (or reads it through SniffReader).
func Sniff(path string) (compressed, results bool, err error) {
	if st, err := os.Stat(path); err != nil {
		return false, false, err
	} else if !st.Mode().IsRegular() {
		return false, false, fmt.Errorf("%s is no regular file: its content is not looked into", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	compressed, results = SniffReader(bufio.NewReaderSize(f, sniffBuffer))
	return compressed, results, nil
}

// sniffBuffer is the start of a file Sniff looks at: a run line is a few
// hundred bytes, compressed or not.
const sniffBuffer = 64 << 10

// SniffReader reports whether the stream br is compressed (a gzip or zstd
// magic number) and whether its first line that is not blank is a results
// file's run line, decompressed first when it is: a compressed record is
// compressed and no results. It only peeks: br is then read whole by
// whichever reader it names (Open("-", br), or a record's), so that a pipe
// is read once. A first line longer than br's buffer (or, compressed, than
// what its compressed buffer holds) is no run line.
func SniffReader(br *bufio.Reader) (compressed, results bool) {
	if head, _ := br.Peek(len(zstdMagic)); compressionIn(head) != Plain {
		// The buffer's worth of the stream, decompressed as far as it goes:
		// a run line is its first few hundred bytes.
		b, _ := br.Peek(br.Size())
		r, err := compressionIn(head).reader(bytes.NewReader(b))
		if err != nil {
			return true, false
		}
		defer r.Close()
		return true, firstLineIsRun(r)
	}
	for n := 512; ; n *= 2 {
		n = min(n, br.Size())
		b, err := br.Peek(n)
		line := bytes.TrimLeft(b, " \t\r\n")
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			return false, firstLineIsRun(bytes.NewReader(line[:i]))
		}
		if err != nil || n == br.Size() { // the stream's end, or a line past the buffer
			return false, firstLineIsRun(bytes.NewReader(line))
		}
	}
}

// firstLineIsRun reports whether the first line of r that is not blank is
// a run line of a results file. A run record's first line is "{" alone.
func firstLineIsRun(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4<<10), maxLine)
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var head struct {
			Line   string `json:"line"`
			Schema string `json:"schema"`
		}
		return json.Unmarshal(b, &head) == nil && head.Line == LineRun && head.Schema == Schema
	}
	return false
}

type readCloser struct {
	io.ReadCloser
	f *os.File
}

func (r readCloser) Close() error { return errors.Join(r.ReadCloser.Close(), r.f.Close()) }

// ErrCut is wrapped by the error for a results file cut short: by Each's
// for one that ends in the middle of a line (a killed flood's buffered
// writes, a compressed stream that broke off), every whole line before it
// handed over; by Records' and WriteCSV's for a run without its end line
// too, after they gave what the whole lines hold.
var ErrCut = errors.New("the results file is cut short")

// ErrNoRun is the error for a file with no line in it (an empty file, or
// one of blank lines): no run to read back or convert.
var ErrNoRun = errors.New("no run in it")

// Each calls fn with every line of a results file in order: its kind (the
// field "line") and its bytes, valid only during the call. An error names
// the line; a last line cut short is ErrCut.
func Each(r io.Reader, fn func(kind string, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var head struct {
		Line    string `json:"line"`
		Schema  string `json:"schema"`
		Version int    `json:"version"`
	}
	first := true
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		head.Line, head.Schema, head.Version = "", "", 0
		if err := json.Unmarshal(b, &head); err != nil {
			if first {
				// A run record is one indented document: its first line is "{".
				return fmt.Errorf("line %d: not a results file, whose every line is a JSON object (a run record is its own kind of file): %w", n, err)
			}
			if !sc.Scan() && (sc.Err() == nil || errors.Is(sc.Err(), io.ErrUnexpectedEOF)) {
				// The last line, and not whole.
				return fmt.Errorf("line %d: %w: its last line is not whole", n, ErrCut)
			}
			return fmt.Errorf("line %d: not a results line: %w", n, err)
		}
		switch {
		case first && head.Line != LineRun:
			return fmt.Errorf("line %d: not a results file: want a %q line first, got %q", n, LineRun, head.Line)
		case head.Line == LineRun && (head.Schema != Schema || head.Version < MinVersion || head.Version > Version):
			return fmt.Errorf("line %d: schema %q version %d: this crowd reads %s versions %d to %d", n, head.Schema, head.Version, Schema, MinVersion, Version)
		case head.Line != LineRun && head.Line != LineSend && head.Line != LineEnd:
			return fmt.Errorf("line %d: unknown line kind %q", n, head.Line)
		}
		first = false
		if err := fn(head.Line, b); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w (its compressed stream ends early)", ErrCut)
	} else if err != nil {
		return fmt.Errorf("reading results: %w", err)
	}
	return nil
}

// Records rebuilds the record of each run in a results file, in order: the
// counts, histograms and timeline a Recorder would have composed from the
// same sends (record.Replay). What only the crowd's bookkeeping knows
// (signatures, security, fetch-back, the audience) is not in the results.
// A file cut short (a killed flood: a run without its end line, a last line
// not whole, a compressed stream that breaks off) gives the record of every
// run its whole lines hold, the cut one ending at its last answer and marked
// partial with the cut as its reason, and an error wrapping ErrCut; any
// other error gives no record.
func Records(r io.Reader) ([]*record.Record, error) {
	var recs []*record.Record
	var cur *replay
	var lines int64
	var spent time.Duration // what the runs read lasted, together
	finish := func(end *EndLine, cut string) error {
		rec, span, err := cur.record(end, cut, maxRun+time.Duration(lines)*linesRun-spent)
		if err != nil {
			return err
		}
		recs, cur, spent = append(recs, rec), nil, spent+span
		return nil
	}
	unended := false // a run of the file has no end line
	err := Each(r, func(kind string, b []byte) error {
		lines++
		if kind != LineRun && cur == nil {
			return fmt.Errorf("a %s line outside a run (after its end line)", kind)
		}
		switch kind {
		case LineRun:
			if cur != nil {
				unended = true
				if err := finish(nil, noEndLine); err != nil {
					return err
				}
			}
			var h RunLine
			if err := json.Unmarshal(b, &h); err != nil {
				return err
			}
			cur = newReplay(h)
		case LineSend:
			var l SendLine
			if err := json.Unmarshal(b, &l); err != nil {
				return err
			}
			return cur.add(&l)
		case LineEnd:
			var e EndLine
			if err := json.Unmarshal(b, &e); err != nil {
				return err
			}
			return finish(&e, "")
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrCut):
		if cur != nil {
			if ferr := finish(nil, err.Error()); ferr != nil { // the reason names the line cut
				return nil, ferr
			}
		}
		return recs, err
	case err != nil:
		return nil, err
	case cur != nil:
		unended = true
		if err := finish(nil, noEndLine); err != nil {
			return nil, err
		}
	}
	if unended {
		return recs, fmt.Errorf("%w (a run has no end line)", ErrCut)
	}
	return recs, nil
}

// noEndLine is the partial reason of a run read back without its end line.
const noEndLine = "the results file is cut short: the run has no end line"

// replay is one run being read back.
type replay struct {
	head    RunLine
	p       *record.Replay
	lastEnd time.Duration
}

func newReplay(h RunLine) *replay {
	s := record.Schedule{Start: h.Start, Rate: h.RateHz, Duration: us(&h.DurationUS), Warmup: us(&h.WarmupUS),
		MaxSends: h.MaxSends, MaxInflight: h.MaxInflight, Timeout: us(&h.TimeoutUS), Total: us(&h.TotalUS)}
	if h.Dispatcher != nil {
		s.Dispatcher = *h.Dispatcher
	}
	return &replay{head: h, p: record.NewReplay(s)}
}

// add feeds one send line to the replay: an offer for every send that was
// due, a delivery for every one sent.
func (r *replay) add(l *SendLine) error {
	if l.Run != r.head.Run {
		return fmt.Errorf("a send of run %d inside run %d", l.Run, r.head.Run)
	}
	if l.Outcome == OutcomeUnsent {
		return nil
	}
	if l.IntendedUS == nil {
		return fmt.Errorf("a %s send without intended_us", l.Outcome)
	}
	o := record.Offer{Type: l.Type, Due: us(l.IntendedUS), Measured: l.Measured, Starved: l.Starved, Dropped: l.Outcome == OutcomeDropped,
		Written: l.Written}
	r.p.Offered(o)
	if o.Dropped {
		return nil
	}
	d, err := delivery(l)
	if err != nil {
		return err
	}
	r.lastEnd = max(r.lastEnd, d.Done)
	r.p.Answered(d)
	return nil
}

// record ends the replay as end says; without end (the file stops before
// the run's last line), at its last answer, marked partial for the reason
// cut ("the results file is cut short …"). It refuses a run that would last
// longer than left, and says how long this one lasted.
func (r *replay) record(end *EndLine, cut string, left time.Duration) (*record.Record, time.Duration, error) {
	st := record.Stop{End: r.head.Start.Add(r.lastEnd), WindowEnd: r.lastEnd, Partial: true,
		Reason: record.StopReason(cut)}
	if end != nil {
		st = record.Stop{End: end.End, WindowEnd: us(&end.WindowEndUS),
			Partial: end.Partial, Reason: record.StopReason(end.Reason)}
		if end.Error != "" {
			st.Err = errors.New(end.Error)
		}
	}
	d := st.End.Sub(r.head.Start)
	switch {
	case d < 0:
		return nil, 0, fmt.Errorf("run %d ends %v before its start", r.head.Run, -d)
	case d > left:
		return nil, 0, fmt.Errorf("run %d ends %v after its start: more than the crowd's runs last, with the runs before it and as few lines as the file has (at most %v, and %v a line)",
			r.head.Run, d, maxRun, linesRun)
	}
	rec, err := r.p.Result(st).Record(r.head.Settings)
	if err == nil && len(rec.Parts) > 0 {
		rec.Parts[0].Seed = r.head.Seed
	}
	return rec, d, err
}

func us(v *int64) time.Duration {
	if v == nil {
		return 0
	}
	return time.Duration(*v) * time.Microsecond
}

// delivery is the Delivery a sent send's line was written from.
func delivery(l *SendLine) (record.Delivery, error) {
	d := record.Delivery{Type: l.Type, Measured: l.Measured, Starved: l.Starved, Written: l.Written, Intended: us(l.IntendedUS),
		Picked: us(l.PickedUS), Done: us(l.DoneUS), Aborted: l.Outcome == OutcomeAborted, Status: l.Status,
		Attempts: l.Attempts, SentBytes: l.RequestBytes, GotBytes: l.ResponseBytes}
	if d.Aborted {
		d.Actual = d.Picked
		return d, nil
	}
	if l.SentUS == nil {
		return d, fmt.Errorf("a %s send without sent_us", l.Outcome)
	}
	d.Actual = us(l.SentUS)
	c, ok := classNamed(l.Class)
	if !ok {
		return d, fmt.Errorf("unknown class %q", l.Class)
	}
	d.Class = c
	d.NoAnswer = l.NoAnswer
	d.RateLimit = sample(l)
	return d, nil
}

// classNamed is the record's status class of that name.
func classNamed(name string) (record.Class, bool) {
	for c := range record.NumClasses {
		if c.String() == name {
			return c, true
		}
	}
	return 0, false
}

// sample is what the line says the answer said of the rate limit.
func sample(l *SendLine) record.RateLimitSample {
	var s record.RateLimitSample
	if l.RetryAfter {
		s.Said |= record.SaidRetryAfter
	}
	if l.RateLimitIETF {
		s.Said |= record.SaidIETF
	}
	if l.RateLimitLimit != nil {
		s.Said, s.Limit = s.Said|record.SaidLimit, *l.RateLimitLimit
	}
	if l.RateLimitRemaining != nil {
		s.Said, s.Remaining = s.Said|record.SaidRemaining, *l.RateLimitRemaining
	}
	if l.RateLimitWindowUS != nil {
		s.Said, s.Window = s.Said|record.SaidWindow, us(l.RateLimitWindowUS)
	}
	if l.RateLimitResetUS != nil {
		s.Said, s.ResetIn = s.Said|record.SaidReset, us(l.RateLimitResetUS)
		if l.RateLimitResetAt != nil {
			s.ResetAt = *l.RateLimitResetAt
		}
	}
	return s
}
