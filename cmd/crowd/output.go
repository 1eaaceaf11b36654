package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
