package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/report"
	"github.com/crowdfed/crowd/internal/atomicfile"
	"github.com/crowdfed/crowd/loadrun"
)

// The record commands read run records (flood/record/SCHEMA.md) and never send
// anything. Exit status: 0 done; 1 a record could not be read or merged,
// or (compare) a metric regressed; 2 a usage error, and for compare
// anything that prevented a verdict.

// newMergeCmd is `crowd merge`.
func newMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge RECORD.json...",
		Short: "Combine the records of several generators (--shard=i/n) into one, exactly",
		Long: `Combine the run records of generators that flooded together (on several machines or
containers, each a crowd flood attached to a crowd serve --shard=i/n, or a crowd flood
--standalone --shard=i/n) into one record: counts and status tallies add up and the HDR
histograms merge bucket by bucket, so the merged percentiles are those of one histogram of
every send, not an average of percentiles. Records whose settings differ in anything but the
shard are refused, naming the setting: give every generator's flood the same settings and the
same --label (their records then share a name: gather each generator's in a folder of its own).
So are records that did not flood together, any two sharing less than half of the shorter
one's span from start to end: the merged rate would be one the SUT never met.

"-" reads one record from stdin. The merged record is written to -o (JSON; the file is
replaced) and its table printed; without
-o the JSON goes to stdout and the table to stderr. Exits 2 for a usage error, 1 when a record
cannot be read or the records cannot be merged (nothing is written then).`,
		Example: `  crowd merge gathered/*/*-fleet.json -o merged.json
  crowd merge a.json b.json > merged.json
  zstd -dc a.json.zst | crowd merge - b.json -o merged.json`,
		Args: minArgsUsage(1), // one record merges into itself: a one-shard fleet's Job does so
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMerge(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the merged record to this file (default: stdout)")
	return cmd
}

// loadRecords reads every record (stdin for one "-"), failing (exit 1)
// on the first that does not read; a results file or a compressed one,
// known by its content, is said to be one. Each is read once, so a pipe
// (a shell's <(zstd -dc …)) reads as a file does.
func loadRecords(paths []string, stdin io.Reader) ([]*record.Record, error) {
	if stdins := slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return p != "-" }); len(stdins) > 1 {
		return nil, usage(errors.New(`"-" twice: stdin holds one record: give the others as files`))
	}
	recs := make([]*record.Record, 0, len(paths))
	for _, p := range paths {
		r, _, err := loadRecordArg(p, stdin)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// resultsNotRecord is the refusal of name (what the user gave, arg, "-"
// for stdin) when its content is results or compressed (Sniff's or
// SniffReader's word), nil when it is neither: what it is, and the
// commands that take it.
func resultsNotRecord(name, arg string, compressed, res bool) error {
	switch {
	case res:
		return fmt.Errorf("%s is a results file (crowd flood --results), not a record: crowd compare and crowd merge take records "+
			"(crowd flood's or crowd run's JSON in out/load/, or crowd merge's); crowd report %s renders a results file, and crowd results csv converts it", name, arg)
	case compressed:
		return fmt.Errorf("%s is compressed and holds no results: a record is plain JSON (crowd flood's or crowd run's in out/load/): decompress it first", name)
	}
	return nil
}

// recordLink is how a Markdown report written to out links the record at
// path: relative to out's folder, so the link works where the file is; the
// record's file name when the report goes to stdout (pasted beside it, as
// runs.md sits beside the records) or the record came from stdin.
func recordLink(path, out string) string {
	if out == "" || out == "-" || path == "-" {
		return filepath.Base(path)
	}
	absOut, err1 := filepath.Abs(out)
	absRec, err2 := filepath.Abs(path)
	rel, err := filepath.Rel(filepath.Dir(absOut), absRec)
	if err1 != nil || err2 != nil || err != nil {
		return filepath.Base(path)
	}
	return filepath.ToSlash(rel)
}

// recordRefPattern finds "record N" in Merge's errors, to name the file.
const recordRefPattern = `record (\d+)`

func runMerge(stdin io.Reader, stdout, stderr io.Writer, paths []string, out string) error {
	for _, p := range paths {
		if err := checkOutput(p, out); err != nil {
			return err
		}
	}
	switch ext := strings.ToLower(filepath.Ext(out)); ext {
	case "", ".json":
	default:
		// The merged record is JSON whatever the name: m.html would hold it.
		return usage(fmt.Errorf("-o %s: the merged record is JSON, and %s names another format: end the name in .json (crowd report renders it)", out, ext))
	}
	recs, err := loadRecords(paths, stdin)
	if err != nil {
		return err
	}
	m, err := record.Merge(recs...)
	if err != nil {
		return exitCode{1, fmt.Errorf("%w%s", err, nameRecords(err.Error(), paths))}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return exitCode{1, err}
	}
	data = append(data, '\n')
	table := stdout
	if out == "" || out == "-" {
		if _, err := stdout.Write(data); err != nil {
			return exitCode{1, err}
		}
		table = stderr
	} else if err := atomicfile.Write(out, data, 0o644); err != nil {
		return exitCode{1, err}
	}
	if err := report.WriteTable(table, m); err != nil {
		return exitCode{1, err}
	}
	if out != "" && out != "-" {
		fmt.Fprintf(table, "merged %d %s into %s\n", len(recs), record.Plural(len(recs), "record", "records"), out)
	}
	for _, p := range paths {
		if extra, _ := runSections(p); len(extra) > 0 {
			// The flood's figures merge exactly; what the personas' homes
			// showed is per run and does not add up: said, not dropped unseen.
			fmt.Fprintf(stderr, "crowd merge: %s is a crowd run's record: its run section (the personas' homes, the drain, the deliveries) is not in the merged record; crowd report %s shows it\n", p, p)
		}
	}
	return nil
}

// nameRecords turns the "record N" that msg mentions into file names:
// " (record 2 is b.json, record 1 is a.json)".
func nameRecords(msg string, paths []string) string {
	var names []string
	seen := map[int]bool{}
	for _, m := range regexp.MustCompile(recordRefPattern).FindAllStringSubmatch(msg, -1) {
		i, err := strconv.Atoi(m[1])
		if err != nil || i < 1 || i > len(paths) || seen[i] {
			continue
		}
		seen[i] = true
		names = append(names, fmt.Sprintf("record %d is %s", i, paths[i-1]))
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// newReportCmd is `crowd report`.
func newReportCmd() *cobra.Command {
	var format, out string
	var run int
	cmd := &cobra.Command{
		Use:   "report RECORD.json | RESULTS.ndjson[.gz|.zst]",
		Short: "Render a run record (or a results file) as text, Markdown, or an HTML page with plots",
		Long: `Render a run record (crowd flood's JSON in out/load/, or crowd merge's) for people:

  text      the final table crowd flood prints (default)
  markdown  the runs.md row and a per-type table, for a pull request or an issue; its
            link to the record is relative to the -o file's folder (to stdout: the
            record's name, for a file beside it)
  html      one self-contained page (no script, nothing fetched): latency over time,
            offered and achieved rate, the percentile distribution of latency, service
            time and lateness from the HDR histograms, status classes over time, the
            summary, the bottleneck verdict, the per-type table and the settings

Without --format, an -o file ending in .html or .md picks the format (.txt or none: text;
another ending, as .pdf or .json, is refused).

A results file (crowd flood --results; known by its content, plain, gzip or zstd, whatever
its name) is read back into the record its sends make: the same counts, histograms and timeline
(what only the crowd's bookkeeping knows, as signatures and forgeries, is not in it).
A file of several runs (a ladder's rungs) takes --run. "-" reads stdin, a record or a results
file; a pipe (<(…)) is read once, known by its content too.
A results file cut short (a killed flood) is rendered from its whole lines, the cut run
marked PARTIAL, and the exit status is then 1, saying so on stderr, as crowd results csv's.
A crowd run record's run section follows the flood's parts; one this crowd does not read is
a line in its place (a newer version: upgrade crowd), and one that does not decode (a damaged
record) a line saying why, the flood's parts rendered all the same and the exit status 1.
Exits 2 for a usage error, 1 when the file cannot be read or the report written.`,
		Example: `  crowd report out/load/20261130-120000-smoke.json
  crowd report merged.json -o merged.html
  crowd report run.json --format markdown >> pr-comment.md
  crowd report sends.ndjson.gz -o sends.html`,
		Args: exactArgsUsage(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Not given is the only run; the flag's zero default keeps -1, which
			// is refused, out of the help.
			if !cmd.Flags().Changed("run") {
				run = -1
			} else if run < 0 {
				return usage(fmt.Errorf("--run %d: want a run's number, 0 or more", run))
			}
			if !cmd.Flags().Changed("format") {
				switch ext := strings.ToLower(filepath.Ext(out)); ext {
				case ".html", ".htm":
					format = "html"
				case ".md", ".markdown":
					format = "markdown"
				case "", ".txt", ".text", ".log", ".out":
				default:
					// x.pdf or x.json would get the text table under a name
					// that promises something else.
					return usage(fmt.Errorf("-o %s: a report is text, markdown or html, and %s names none of them: end the name in .html, .md or .txt, or give --format", out, ext))
				}
			}
			return runReport(cmd.InOrStdin(), cmd.OutOrStdout(), args[0], format, out, run)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text, markdown or html")
	cmd.Flags().IntVar(&run, "run", 0, "of a results file of several runs, the one to report (0, 1, …; default: a file's only run)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

// runSections are the sections beyond the flood's of the record file at
// path, read again (crowd merge's records are read before): see sectionsOf.
// None for a results file or a stream, which cannot be read again.
func runSections(path string) ([]report.Section, error) {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || isResults(path) {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil // the record itself was read: a file gone since says nothing of its run
	}
	return sectionsOf(raw)
}

// sectionsOf are the report's sections beyond the flood's in a record's
// bytes: a crowd run record's audience measures (what the personas' homes
// showed, the drain, the deliveries to the crowd), as crowd run printed
// them. None for a flood's record, or no bytes. A run section that does
// not decode (a damaged record) is one line in its place saying why, and
// comes back as damaged too: the flood's parts read and are rendered, but
// a damaged record exits 1, as a results file cut short does.
func sectionsOf(raw []byte) (sections []report.Section, damaged error) {
	if raw == nil {
		return nil, nil
	}
	lines, err := loadrun.RunSummary(raw)
	if err != nil {
		lines = []string{fmt.Sprintf("%v: a damaged record, so crowd report exits 1, though it shows the flood's parts", err)}
	}
	if lines == nil {
		return nil, nil
	}
	return []report.Section{{Title: "crowd run: the personas' homes, the drain and the deliveries to the crowd", Lines: lines}}, err
}

func runReport(stdin io.Reader, stdout io.Writer, path, format, out string, run int) error {
	if err := checkOutput(path, out); err != nil {
		return err
	}
	var render func(io.Writer, *record.Record, []report.Section) error
	switch strings.ToLower(format) {
	case "text", "txt":
		render = report.WriteTableWith
	case "markdown", "md":
		render = func(w io.Writer, r *record.Record, extra []report.Section) error {
			return report.WriteMarkdownWith(w, r, recordLink(path, out), extra)
		}
	case "html":
		render = report.WriteHTMLWith
	default:
		return usage(fmt.Errorf("--format %q: want text, markdown or html", format))
	}
	rec, raw, cut, err := loadReportedRaw(path, run, stdin)
	if err != nil {
		return err
	}
	extra, damaged := sectionsOf(raw) // a record's bytes (none for results, which have no run section)
	var b bytes.Buffer
	if err := render(&b, rec, extra); err != nil {
		return exitCode{1, fmt.Errorf("%s: %w", path, err)}
	}
	if out == "" || out == "-" {
		_, err = stdout.Write(b.Bytes())
	} else {
		err = atomicfile.Write(out, b.Bytes(), 0o644)
	}
	if err != nil {
		return exitCode{1, err}
	}
	if cut != nil {
		// Rendered, from a file cut short: exit 1 all the same, as crowd
		// results csv does, so that a script notices.
		shown := "the report shows what its whole lines hold"
		if rec.Partial {
			shown += ", marked PARTIAL"
		}
		return exitCode{1, fmt.Errorf("%s: %w; %s", path, cut, shown)}
	}
	if damaged != nil {
		// Rendered, the section's place saying why: exit 1 all the same,
		// as for a cut file, so that a script notices the broken record.
		return exitCode{1, fmt.Errorf("%s: %w; the report shows the flood's parts, and why in the run section's place", path, damaged)}
	}
	return nil
}
