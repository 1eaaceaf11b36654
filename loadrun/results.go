package loadrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/results"
	"github.com/crowdfed/crowd/flood/traffic"
)

// resultsFile is --results: its Writer (nil without one), and whether a
// record said it failed already.
type resultsFile struct {
	w    *results.Writer
	said bool
}

// openResults opens --results. It runs when the run starts, so that a file
// that cannot be written is known before a send.
func (c Config) openResults() (*resultsFile, error) {
	if c.Results == "" {
		return &resultsFile{}, nil
	}
	w, err := CreateResults(c.Results, c.ResultsOut)
	if err != nil {
		return nil, usage(fmt.Errorf("--results %s cannot be written: %w", c.Results, err))
	}
	return &resultsFile{w: w}, nil
}

// CreateResults opens a results file at path ("-": stdout) as a run
// does, its lines saying what each request's ticket knows (sender,
// signature, forgery): the wiring --results runs with, for the bench to
// price.
func CreateResults(path string, stdout io.Writer) (*results.Writer, error) {
	return results.Create(path, stdout, results.Options{Describe: describeSend})
}

// describeSend is what a request's ticket says of it for its results line:
// the sender, the scheme it is signed with now (after a double knock's
// second attempt, the second's), its forgery.
func describeSend(token any) results.Sender {
	t, ok := token.(*traffic.Ticket)
	if !ok || t == nil {
		return results.Sender{}
	}
	var s results.Sender
	if k := t.Knock; k != nil {
		s.Signature = string(k.Scheme)
		if k.Sender != nil {
			s.Actor = k.Sender.ID
			if k.Sender.Origin != nil {
				s.Origin = k.Sender.Origin.Host
			}
		}
	}
	if f := t.Forgery; f != nil {
		s.Forged = string(f.Kind)
		if s.Actor == "" && f.Actor != "" {
			// A forgery is never knocked: the actor it speaks for is on its mark.
			s.Actor = f.Actor
			if u, err := url.Parse(f.Actor); err == nil {
				s.Origin = u.Host
			}
		}
	}
	return s
}

// run is the results' collector of one flood (nil without
// --results), its first line saying seed, and the flood's context,
// cancelled as soon as a results line cannot be written: a run whose
// results end silently is worse than one that stops. stop releases the
// context.
func (f *resultsFile) run(ctx context.Context, s record.Settings, seed uint64) (fctx context.Context, c flood.Collector, stop func()) {
	if f == nil || f.w == nil {
		return ctx, nil, func() {}
	}
	fctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-f.w.Failed():
			cancel()
		case <-fctx.Done():
		}
	}()
	run := f.w.Run(s)
	run.SetSeed(seed)
	return fctx, run, cancel
}

// stopped marks res stopped by the results, when they failed: not
// an interruption (exit 130) but a failure naming the file.
func (f *resultsFile) stopped(res *record.Result) {
	if f == nil || f.w == nil {
		return
	}
	if err := f.w.Err(); err != nil && res.Partial {
		res.Reason = record.ReasonError("", err)
		f.said = true
	}
}

// close closes --results and adds to *err what the run has not
// said already: a failure after the flood's end (the last flush), lines
// lost.
func (f *resultsFile) close(err *error) {
	if f == nil || f.w == nil {
		return
	}
	if cerr := f.w.Close(); cerr != nil && !f.said {
		*err = errors.Join(*err, cerr)
	}
}
