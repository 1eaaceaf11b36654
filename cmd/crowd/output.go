package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/report"
	"github.com/crowdfed/crowd/loadrun"
	"go.uber.org/zap"
)

// indentedJSONText indents a JSON document for people; what is not JSON is
// returned as it is.
func indentedJSONText(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// printIndentedJSON writes v indented, HTML left readable (--json outputs).
func printIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runShow draws a load run as flood/report renders it: the live line redraws in place when
// stderr is a terminal, and a ladder's rung lines line up with its header.
func runShow(terminal bool) loadrun.Show {
	return loadrun.Show{
		Live:  func(w io.Writer) loadrun.LiveLine { return report.NewLive(w, terminal) },
		Table: report.WriteTable,
		Rung: func(w io.Writer, row record.RungRow, header bool) {
			if header {
				fmt.Fprint(w, strings.ReplaceAll(report.LadderHeader(), "\t", "  "))
			}
			fmt.Fprint(w, strings.ReplaceAll(report.LadderRowLine(row), "\t", "  "))
		},
		Ladder: report.WriteLadder,
	}
}

// jsonShow is show for JSON logs asked for by name (a fleet's pods):
// what it draws on stderr (the live line, a ladder's rung lines, the
// run's news) are log lines with their figures as fields, so the
// collector that reads stderr reads every line; the tables, on stdout,
// stay as they are.
func jsonShow(show loadrun.Show, log *zap.Logger) loadrun.Show {
	show.Live = func(io.Writer) loadrun.LiveLine { return jsonLive{log} }
	show.Rung = func(_ io.Writer, row record.RungRow, _ bool) {
		log.Info("rung", zap.Int("rung", row.Index+1), zap.Float64("rate", row.Rate), zap.Bool("shoulder", row.Shoulder),
			zap.String("row", strings.Join(strings.Fields(report.LadderRowLine(row)), " ")))
	}
	show.Note = func(_ io.Writer, line string) { log.Info(line) }
	return show
}

// jsonLive is the live line as a log line a second.
type jsonLive struct{ log *zap.Logger }

func (l jsonLive) Update(p record.Progress) {
	t := p.Tick
	l.log.Info("progress", zap.Float64("t_s", p.Elapsed.Seconds()), zap.Float64("rate", t.SentRate()),
		zap.Int64("offered", p.Offered), zap.Int64("sent", p.Sent), zap.Int64("dropped", p.Dropped), zap.Int64("starved", p.Starved),
		zap.Int64("p50_us", t.LatencyP50), zap.Int64("p99_us", t.LatencyP99), zap.Int64("max_us", t.LatencyMax),
		zap.Int64("late_p99_us", t.LatenessP99), zap.Int64("ok", p.OK), zap.Int64("status429", p.Status429),
		zap.Int64("errors", p.Errors), zap.Int64("inflight", p.Inflight), zap.Bool("warmup", p.Warmup), zap.Bool("end", p.Final))
}

func (jsonLive) Done() {}

// checkOutput refuses (a usage error naming -o) an output file that is the
// input: the atomic write would replace what the command reads with what it
// rendered. An output that does not exist yet is no input, whatever its
// name; stdin and stdout ("-") are no files.
func checkOutput(in, out string) error {
	if in == "-" || out == "" || out == "-" {
		return nil
	}
	fi, errIn := os.Stat(in)
	fo, errOut := os.Stat(out)
	if errIn == nil && errOut == nil && os.SameFile(fi, fo) {
		return usage(fmt.Errorf("-o %s is the input file: writing it would replace %s with what is made of it; give -o another name", out, in))
	}
	return nil
}
