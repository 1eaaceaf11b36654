package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/results"
	"github.com/crowdfed/crowd/internal/atomicfile"
)

// isResults reports whether path is a results file (crowd flood
// --results) rather than a record: by its content (a compressed stream, a
// first line that is a results run line), whatever it is named, and else
// by a name that only results take (.ndjson, .jsonl, .gz, .zst), so that a
// damaged one gets the results reader's word for what is wrong. "-" (stdin)
// is one, as crowd flood --results - writes.
func isResults(path string) bool {
	if path == "-" {
		return true
	}
	if compressed, res, err := results.Sniff(path); err == nil && (compressed || res) {
		return true
	}
	if results.CompressionOf(path) != results.Plain {
		return true
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".ndjson", ".jsonl":
		return true
	}
	return false
}

// loadReported is the record `crowd report` renders: the record at path,
// or run (-1: the only one) of the results file at path (stdin for "-").
// A results file cut short (a killed flood) gives the record its whole
// lines hold (the cut run marked partial) and cut, the ErrCut that says
// so, for the report to exit 1 with once written, as crowd results csv does.
func loadReported(path string, run int, stdin io.Reader) (rec *record.Record, cut, err error) {
	rec, _, cut, err = loadReportedRaw(path, run, stdin)
	return rec, cut, err
}

// loadReportedRaw is loadReported that also returns, for a record, its
// bytes: read once (a stream can be read no more), its run section is in
// them.
func loadReportedRaw(path string, run int, stdin io.Reader) (rec *record.Record, raw []byte, cut, err error) {
	openPath, src := path, stdin
	if st, serr := os.Stat(path); path == "-" || serr == nil && !st.Mode().IsRegular() {
		// A stream: looked at by peeking, then read by one reader.
		if path != "-" {
			f, err := os.Open(path)
			if err != nil {
				return nil, nil, nil, exitCode{1, err}
			}
			defer f.Close()
			src = f
		}
		br := bufio.NewReaderSize(src, 64<<10)
		if compressed, res := results.SniffReader(br); !compressed && !res {
			if run >= 0 {
				return nil, nil, nil, usage(fmt.Errorf("--run %d: %s is a record, not a results file", run, path))
			}
			return readRecord(path, br)
		}
		openPath, src = "-", br
	} else if !isResults(path) {
		if run >= 0 {
			return nil, nil, nil, usage(fmt.Errorf("--run %d: %s is a record, not a results file", run, path))
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, nil, exitCode{1, err}
		}
		defer f.Close()
		return readRecord(path, f)
	}
	f, err := results.Open(openPath, src)
	if err != nil {
		return nil, nil, nil, exitCode{1, err}
	}
	defer f.Close()
	recs, err := results.Records(f)
	if errors.Is(err, results.ErrCut) && len(recs) > 0 {
		cut = err
	} else if err != nil {
		return nil, nil, nil, exitCode{1, fmt.Errorf("%s: %w", path, err)}
	}
	switch {
	case len(recs) == 0:
		return nil, nil, nil, exitCode{1, fmt.Errorf("%s: %w", path, results.ErrNoRun)}
	case run < 0 && len(recs) > 1:
		return nil, nil, nil, usage(fmt.Errorf("%s holds %d runs (a ladder's rungs): name one with --run 0 … %d", path, len(recs), len(recs)-1))
	case run < 0:
		return recs[0], nil, cut, nil
	case run >= len(recs):
		return nil, nil, nil, usage(fmt.Errorf("--run %d: %s holds %d %s (--run 0 … %d)", run, path, len(recs), record.Plural(len(recs), "run", "runs"), len(recs)-1))
	case run < len(recs)-1:
		return recs[run], nil, nil, nil // whole: a cut is the last run's
	}
	return recs[run], nil, cut, nil
}

// readRecord reads the record at path from r whole and decodes it, its
// errors naming path, as record.LoadRecord's do; the bytes come back too.
func readRecord(path string, r io.Reader) (rec *record.Record, raw []byte, cut, err error) {
	if raw, err = io.ReadAll(r); err != nil {
		return nil, nil, nil, exitCode{1, fmt.Errorf("%s: %w", path, err)}
	}
	rec, err = record.DecodeRecord(bytes.NewReader(raw))
	if errors.Is(err, record.ErrNotRecord) {
		return nil, nil, nil, exitCode{1, fmt.Errorf("%s is %w", path, err)}
	} else if err != nil {
		return nil, nil, nil, exitCode{1, fmt.Errorf("%s: %w", path, err)}
	}
	return rec, raw, nil, nil
}

// newResultsCmd is `crowd results`: what to do with a results file.
func newResultsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "results",
		Short: "Convert a results file (crowd flood --results) for other tools",
		Long: `A results file holds every send of a flood as a line of NDJSON (crowd flood --results;
fields in flood/record/SCHEMA.md, "Results"). jq, pandas and DuckDB read it as it is;
'crowd results csv' makes it a spreadsheet's, and 'crowd report' reads it back into
the run's tables and HTML page.`,
		Args: subcommandArgs,
		RunE: showHelp,
	}
	cmd.AddCommand(newResultsCSVCmd())
	return cmd
}

// newResultsCSVCmd is `crowd results csv`.
func newResultsCSVCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "csv RESULTS.ndjson[.gz|.zst]",
		Short: "Convert a results file's sends to CSV: a header of the field names, a row per send",
		Long: `Write a row per send of a results file (all its runs; the run column says which),
under a header of the send line's field names; null is an empty cell. "-" reads stdin. A file
that ends before a run of it did (a killed flood) is converted all the same, every row it holds,
and the exit status is then 1, saying so. A file with no run in it (empty), or that is no results
file, gets no CSV, not even the header: exit 1, as crowd report.`,
		Example: `  crowd results csv sends.ndjson.gz -o sends.csv
  crowd flood --standalone --seconds 10 --results - | crowd results csv - > sends.csv`,
		Args: exactArgsUsage(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return resultsCSV(cmd.InOrStdin(), cmd.OutOrStdout(), args[0], out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

func resultsCSV(stdin io.Reader, stdout io.Writer, path, out string) error {
	if err := checkOutput(path, out); err != nil {
		return err
	}
	if c := results.CompressionOf(strings.ToLower(out)); c != results.Plain {
		// The CSV is written as it is: a compressed name would lie about it.
		tool := map[results.Compression]string{results.Gzip: "gzip", results.Zstd: "zstd"}[c]
		return usage(fmt.Errorf("-o %s: crowd results csv writes plain CSV, and %s names a compressed file: name it .csv, or pipe it: crowd results csv %s | %s > %s",
			out, filepath.Ext(out), path, tool, out))
	}
	f, err := results.Open(path, stdin)
	if err != nil {
		return exitCode{1, err}
	}
	defer f.Close()
	// A file cut short still converts, every row it holds; the exit says so.
	var cut error
	if out == "" || out == "-" {
		if err := results.WriteCSV(stdout, f); errors.Is(err, results.ErrCut) {
			cut = err
		} else if err != nil {
			return exitCode{1, fmt.Errorf("%s: %w", path, err)}
		}
	} else {
		var b bytes.Buffer
		if err := results.WriteCSV(&b, f); errors.Is(err, results.ErrCut) {
			cut = err
		} else if err != nil {
			return exitCode{1, fmt.Errorf("%s: %w", path, err)}
		}
		if err := atomicfile.Write(out, b.Bytes(), 0o644); err != nil {
			return exitCode{1, err}
		}
	}
	if cut != nil {
		return exitCode{1, fmt.Errorf("%s: %w; its every whole send line was written", path, cut)}
	}
	return nil
}
