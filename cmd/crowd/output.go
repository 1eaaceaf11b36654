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
