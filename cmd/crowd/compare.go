package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/results"
	"github.com/crowdfed/crowd/loadrun"
)

// compareFlags are the flags of `crowd compare`, which judges a head run
// against a base run (the record commands' exit statuses: records.go).
type compareFlags struct {
	maxRegression string
	metrics       string
	shareFloor    string
	latencyFloor  time.Duration
	force         bool
	format        string
}

// newCompareCmd is `crowd compare`.
func newCompareCmd() *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare BASE.json HEAD.json",
		Short: "Compare two run records metric by metric; exit 1 when head regressed",
		Long: `Compare a run record (HEAD) with a baseline (BASE): for each metric, overall and for every
activity type both have, the two values and the relative change. A metric regressed when it
moved the wrong way by more than --max-regression: latency up (and by at least
--latency-floor), an error share up (and by at least --share-floor percentage points, so one
error in ten thousand is not a verdict), a rate down; and by more than the two runs' sampling
noise (99 % confidence: a quantile's order-statistic interval from each histogram, a
two-proportion test for a share, Poisson counts for a rate). A quantile with fewer than 10
sends beyond it, or a max, is shown but never judged. The output states these thresholds.
A rate, or a success share (ok, status2xx, …), falls by 100 % at most, to zero: a
--max-regression of 100 % or more would never flag one, and is refused while one is compared
(--metric p95,p99,errors leaves them out).

"-" for BASE or HEAD reads that record from stdin, as crowd report - does (stdin holds one
record, so not both).

--format markdown writes the comparison for a pull request's comment (the verdicts as
headings, the tables in Markdown, the rule folded); --format json one document for tools
(schema crowd.compare: every row's values in its unit, null where the table has "-", the
verdict, and crowd run's run sections as "run"). The exit status is the same in every format.

Metrics are named as in --expect: p50 p90 p95 p99 p99.9 max (latency from the intended send
time), service.p99 lateness.p99 dispatch.p99, errors dropped status429 timeout … (shares),
rate (sent/s) and throughput (2xx/s).

Two crowd run records: after the verdict, their run sections side by side (visibility p50,
p95, p99 and the notes they rest on, never seen, buried, the drain, the home timeline probes'
p95, p99 and errors, the deliveries' p95, p99 and reach), each with its change, judged by the
same threshold, floors and noise test over independent units (a note read by several personas
arrived once; a post's deliveries are one queue's work), then their own verdict line. A
visibility latency is late by up to one probe period, so it must move by more, and is shown
only when the runs probed at different rates; seen, buried and the drain are shown only; a
record made before run sections kept histograms has its quantiles shown only. Every figure
of theirs is judged whatever --metric names (it names the flood's). A regression there exits
1 too, the error naming the figures. A flood's record against a run record gets
one line saying which has a section; a run section this crowd does not read (a newer version:
upgrade crowd; another schema; a damaged one) one saying so.

Runs that are not the same unit of work are refused: another total offered rate, activity
mix (as asked, or as sent: Follows sent as Creates, personas without posts), arrival process
or weather on the crowd (its timeline, and what it met but did not set: an origin down or
slow answers the SUT otherwise) changes the latency for reasons that are not the server's.
--force compares them anyway, saying so.

Exit status: 0 no regression, 1 a regression (of the flood's figures or a run section's),
2 no verdict (usage error, a record that does not read, runs that are not comparable, a run
that measured nothing: no measured window, no completed send, or a partial run stopped
within its first measured second).`,
		Example: `  crowd compare out/load/main.json out/load/pr.json
  crowd compare base.json head.json --max-regression 10% --metric p99,errors,throughput
  git show main:out/load/run.json | crowd compare - out/load/run.json
  crowd compare main.json pr.json --format markdown > pr-comment.md`,
		Args: exactArgsUsage(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.InOrStdin(), cmd.OutOrStdout(), args[0], args[1], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.maxRegression, "max-regression", "15%", "the relative change beyond which a metric moving the wrong way is a regression, a percentage (under 100% while a rate or a success share is compared: those fall by 100% at most)")
	fl.StringVar(&f.metrics, "metric", record.DefaultCompareMetrics(), "metrics to compare, comma-separated")
	fl.StringVar(&f.shareFloor, "share-floor", "0.1%", "the smallest change of a share (errors, dropped, …), in percentage points (0% to 100%), that can be a regression")
	fl.DurationVar(&f.latencyFloor, "latency-floor", time.Duration(record.DefaultLatencyFloor)*time.Microsecond, "the smallest change of a latency that can be a regression (below it, a machine's scheduling noise)")
	fl.BoolVar(&f.force, "force", false, "compare runs of another offered rate, mix, arrival process or weather anyway")
	fl.StringVar(&f.format, "format", "text", "text, markdown (a pull request's comment) or json (schema crowd.compare, for tools)")
	return cmd
}

func runCompare(stdin io.Reader, stdout io.Writer, basePath, headPath string, f *compareFlags) error {
	noVerdict := func(err error) error { return exitCode{2, err} }
	format := strings.ToLower(f.format)
	if format != "text" && format != "markdown" && format != "json" {
		return noVerdict(usage(fmt.Errorf("--format %q: want text, markdown or json", f.format)))
	}
	if basePath == "-" && headPath == "-" {
		return noVerdict(usage(errors.New(`BASE and HEAD are both "-": stdin holds one record: give the other as a file`)))
	}
	threshold, err := record.ParseThreshold(f.maxRegression)
	if err != nil {
		return noVerdict(fmt.Errorf("--max-regression %w", err))
	}
	floor, err := record.ParseThreshold(f.shareFloor)
	if err != nil {
		return noVerdict(fmt.Errorf("--share-floor %w", err))
	}
	if floor > 1 {
		// A share moves by 100 percentage points at most: such a floor
		// would judge no share at all.
		return noVerdict(usage(fmt.Errorf("--share-floor %s: a share changes by 100 percentage points at most: want 0%% to 100%%", f.shareFloor)))
	}
	if f.latencyFloor < 0 {
		return noVerdict(fmt.Errorf("--latency-floor %v: want 0 or more", f.latencyFloor))
	}
	metrics, err := record.ParseCompareMetrics(f.metrics)
	if err != nil {
		return noVerdict(fmt.Errorf("--metric %w", err))
	}
	if err := checkFallThreshold(f.maxRegression, threshold, metrics); err != nil {
		return noVerdict(err)
	}
	base, baseRaw, err := loadRecordArg(basePath, stdin)
	if err != nil {
		return noVerdict(err)
	}
	head, headRaw, err := loadRecordArg(headPath, stdin)
	if err != nil {
		return noVerdict(err)
	}
	basePath, headPath = recordName(basePath), recordName(headPath)
	opts := record.CompareOptions{
		Metrics: metrics, MaxRegression: threshold, ShareFloor: floor, Force: f.force,
		LatencyFloor: float64(f.latencyFloor) / float64(time.Microsecond),
	}
	c, err := record.Compare(base, head, opts)
	if err != nil && format == "json" {
		// A tool reading stdout gets a document saying why, not nothing.
		if werr := printIndentedJSON(stdout, record.RefusedDoc(err)); werr != nil {
			return noVerdict(werr)
		}
	}
	if errors.Is(err, record.ErrIncomparable) {
		return noVerdict(fmt.Errorf("%s and %s: %w (--force compares them anyway)", basePath, headPath, err))
	}
	if errors.Is(err, record.ErrUnmeasured) {
		return noVerdict(fmt.Errorf("no verdict on %s against %s: %w", headPath, basePath, err))
	}
	if err != nil {
		return noVerdict(err)
	}
	c.BaseName, c.HeadName = basePath, headPath
	// Two crowd run records: their run sections are judged too, after.
	run, runRegressed := loadrun.RunComparison(basePath, baseRaw, headPath, headRaw, opts, format)
	if err := writeComparison(stdout, c, run, format); err != nil {
		return exitCode{2, err}
	}
	switch {
	case c.Regressed() && len(runRegressed) > 0:
		return exitCode{1, fmt.Errorf("%s regressed against %s, its flood and its run section (%s)", headPath, basePath, strings.Join(runRegressed, ", "))}
	case c.Regressed():
		return exitCode{1, fmt.Errorf("%s regressed against %s", headPath, basePath)}
	case len(runRegressed) > 0:
		return exitCode{1, fmt.Errorf("%s regressed against %s in its run section: %s", headPath, basePath, strings.Join(runRegressed, ", "))}
	}
	return nil
}

// writeComparison writes c in format (text, markdown, json), then run, the
// run sections' comparison in the same format ("" for none): after the
// flood's in text and Markdown, as the document's "run" in JSON.
func writeComparison(w io.Writer, c *record.Comparison, run, format string) error {
	var err error
	switch format {
	case "json":
		doc := c.Doc()
		if run != "" {
			doc.Run = json.RawMessage(run)
		}
		return printIndentedJSON(w, doc)
	case "markdown":
		err = c.WriteMarkdown(w)
	default:
		err = c.WriteTable(w)
	}
	if err == nil && run != "" {
		_, err = io.WriteString(w, "\n"+run)
	}
	return err
}

// checkFallThreshold refuses a --max-regression of 100 % or more when a
// metric better higher (a rate, the ok share) is compared: it falls by
// 100 % at most, to zero, so it could never regress, and a gate that
// cannot fail passes a server that stopped answering.
func checkFallThreshold(flag string, threshold float64, metrics []record.CompareMetric) error {
	if threshold < 1 {
		return nil
	}
	var never []string
	for _, m := range metrics {
		if m.HigherIsBetter() {
			never = append(never, m.Name())
		}
	}
	if len(never) == 0 {
		return nil
	}
	return usage(fmt.Errorf("--max-regression %s: %s can fall by 100%% at most (to zero), never by more: want less than 100%%, or leave %s out of --metric",
		flag, strings.Join(never, ", "), strings.Join(never, ",")))
}

// recordName is what crowd compare calls the record at path: "stdin" for
// "-", since "- regressed" would name nothing.
func recordName(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}

// loadRecordArg reads the record at path (a file, or a pipe such as a
// shell's <(…)), or from stdin for "-", and
// returns its bytes too: read once (stdin or a pipe can be read no more),
// its run section is in them. A results file, plain or compressed, is
// said to be one by its content, a file's or a stream's alike (the
// stream peeked at, not consumed); failing, exit 1.
func loadRecordArg(path string, stdin io.Reader) (*record.Record, []byte, error) {
	name, src := recordName(path), stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, exitCode{1, err}
		}
		defer f.Close()
		src = f
	}
	br := bufio.NewReaderSize(src, 64<<10)
	compressed, res := results.SniffReader(br)
	if err := resultsNotRecord(name, path, compressed, res); err != nil {
		return nil, nil, exitCode{1, err}
	}
	rec, raw, _, err := readRecord(name, br)
	return rec, raw, err
}
