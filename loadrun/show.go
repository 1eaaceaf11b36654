package loadrun

import (
	"fmt"
	"io"

	"github.com/crowdfed/crowd/flood/record"
)

// Show is how a person sees a run: the CLI fills it from flood/report, so loadrun decides
// when something is shown and never how a record looks. A nil field shows nothing.
type Show struct {
	// Live starts the live line of one flood, drawn on w.
	Live func(w io.Writer) LiveLine
	// Table writes one finished run's table.
	Table func(io.Writer, *record.Record) error
	// Rung is a ladder rung's line as the ladder goes; header is true for the first.
	Rung func(w io.Writer, row record.RungRow, header bool)
	// Ladder writes the finished ladder's table.
	Ladder func(io.Writer, record.LadderResult) error
	// Note writes one line of the run's own news on w (the seed, the
	// presigning, the boosters followed…); nil writes it as it is.
	Note func(w io.Writer, line string)
}

// LiveLine is the once-a-second line of a running flood.
type LiveLine interface {
	Update(record.Progress)
	Done()
}

// quietLine is the live line of a run with nothing to show it on.
type quietLine struct{}

func (quietLine) Update(record.Progress) {}
func (quietLine) Done()                  {}

func (s Show) live(w io.Writer) LiveLine {
	if s.Live == nil {
		return quietLine{}
	}
	return s.Live(w)
}

func (s Show) note(w io.Writer, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if s.Note != nil {
		s.Note(w, line)
		return
	}
	fmt.Fprintln(w, line)
}

func (s Show) table(w io.Writer, rec *record.Record) error {
	if s.Table == nil {
		return nil
	}
	return s.Table(w, rec)
}

func (s Show) rung(w io.Writer, row record.RungRow, header bool) {
	if s.Rung != nil {
		s.Rung(w, row, header)
	}
}

func (s Show) ladder(w io.Writer, res record.LadderResult) error {
	if s.Ladder == nil {
		return nil
	}
	return s.Ladder(w, res)
}
