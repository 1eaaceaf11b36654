package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"time"
)

// Row keys, in table order. Every run prints one row per key, with an
// error in place of figures when that measurement could not be made.
const (
	rowPipeline     = "pipeline"
	rowPresigned    = "presigned"
	rowInbox        = "inbox"
	rowActor        = "actor"
	rowWebFinger    = "webfinger"
	rowRSS          = "rss"
	rowStartup      = "startup"
	rowCPU          = "cpu_per_activity"
	rowStartupScale = "startup_origins"
	rowMemoryScale  = "memory_origins"
	rowLiveMetrics  = "live_metrics"
	// What --results costs (results.go).
	rowResultsPipeline  = "results_pipeline"
	rowResultsPresigned = "results_presigned"
)

// rowKeys is every row of the table, in order.
func rowKeys() []string {
	keys := append([]string{rowPipeline, rowPresigned}, clientKeys(rowPresignedWrk)...)
	keys = append(keys, rowPresignedOpenLoop)
	keys = append(keys, rowInbox, rowActor, rowWebFinger, rowRSS, rowStartup, rowCPU, rowStartupScale, rowMemoryScale,
		rowSignLibcrypto, rowPipelineLibcrypto)
	keys = append(keys, clientKeys(rowPipelineCombined)...)
	keys = append(keys, rowPipelineVsGo, rowPipelineOneCore, rowPipelineRealtime, rowPresignedRealtime, rowInboxLibcrypto, rowInboxLibcryptoVsGo, rowLiveMetrics,
		rowResultsPipeline, rowResultsPresigned, rowWeatherDocuments, rowWeatherInbox)
	return append(keys, append(scaleRowKeys(), verbRowKeys()...)...)
}

// Row is one line of the table: a figure of the crowd beside its ceiling
// (or reference) and their ratio.
type Row struct {
	Key         string  `json:"key"`                    // stable identifier (see rowKeys)
	Name        string  `json:"name"`                   // what is measured
	Value       float64 `json:"value"`                  // the crowd's figure, in Unit
	Unit        string  `json:"unit"`                   // "/s", "MiB", "ms", "ms/activity"
	Ceiling     float64 `json:"ceiling,omitempty"`      // the reference figure, in Unit
	CeilingName string  `json:"ceiling_name,omitempty"` // what the reference is
	Ratio       float64 `json:"ratio,omitempty"`        // Value / Ceiling
	Target      string  `json:"target"`                 // the goal, in words
	Met         *bool   `json:"met,omitempty"`          // whether the goal was met; nil when it has none
	Notes       string  `json:"notes,omitempty"`
	Error       string  `json:"error,omitempty"` // why the row has no figures
}

// Machine describes where the bench ran.
type Machine struct {
	GOOS, GOARCH string
	GoVersion    string `json:"go_version"`
	NumCPU       int    `json:"num_cpu"`
	GOMAXPROCS   int    `json:"gomaxprocs"`
	CPU          string `json:"cpu,omitempty"`
	LoadBefore   string `json:"load_before"` // /proc/loadavg at the start
	LoadAfter    string `json:"load_after"`  // and at the end
	// Kernel is what a page fault, a system call and a thread's wake-up
	// cost here, measured at the start: what the sends' kernel entries
	// (the combined rows' notes) are priced at.
	Kernel kernelCosts `json:"kernel"`
}

// Report is the whole run: rows, notes, and the trials behind them.
type Report struct {
	Command string         `json:"command"`
	Started time.Time      `json:"started"`
	Seconds float64        `json:"seconds"`
	Machine Machine        `json:"machine"`
	Rows    []Row          `json:"rows"`
	Notes   []string       `json:"notes"`
	Details map[string]any `json:"details"`
}

// row returns the report's row for key, adding it (with a "not measured"
// error) when missing.
func (r *Report) row(key string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Key == key {
			return &r.Rows[i]
		}
	}
	r.Rows = append(r.Rows, Row{Key: key, Error: "not measured"})
	return &r.Rows[len(r.Rows)-1]
}

// set stores row under its key.
func (r *Report) set(row Row) { *r.row(row.Key) = row }

// fail marks row key as failed with err (keeping its name and target).
func (r *Report) fail(key, name, target string, err error) {
	r.set(Row{Key: key, Name: name, Target: target, Error: err.Error()})
}

// note adds a line under the table.
func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// complete puts the rows in table order, adding any that is missing.
func (r *Report) complete() {
	rows := make([]Row, 0, len(r.Rows))
	for _, k := range rowKeys() {
		rows = append(rows, *r.row(k))
	}
	r.Rows = rows
}

func newMachine() Machine {
	return Machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPU: cpuModel(), LoadBefore: loadAvg()}
}

// loadAvg is the first three fields of /proc/loadavg ("" elsewhere).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuModel is the processor's name from /proc/cpuinfo ("" elsewhere).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// write prints the table (stdout, or stderr when the JSON goes to stdout)
// and the JSON report where cfg.JSON says.
func (r *Report) write(cfg config, stdout, stderr io.Writer) error {
	r.complete()
	table := stdout
	if cfg.JSON == "-" {
		table = stderr
	}
	if err := r.markdown(table); err != nil {
		return err
	}
	if cfg.JSON == "" {
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if cfg.JSON == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(cfg.JSON, b, 0o644)
}

// markdown writes the table, then the machine and the notes.
func (r *Report) markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| measure | crowd | ceiling / reference | ratio | target | met | notes |\n")
	b.WriteString("|---|--:|---|--:|---|:-:|---|\n")
	for _, row := range r.Rows {
		if row.Error != "" {
			fmt.Fprintf(&b, "| %s | — | — | — | %s | — | error: %s |\n", cell(row.Name, row.Key), cell(row.Target, ""), cell(row.Error, ""))
			continue
		}
		ceiling := "—"
		if row.Ceiling != 0 || row.CeilingName != "" {
			ceiling = formatValue(row.Ceiling, row.Unit)
			if row.CeilingName != "" {
				ceiling += " (" + row.CeilingName + ")"
			}
		}
		ratio := "—"
		if row.Ratio != 0 {
			ratio = fmt.Sprintf("%.2f", row.Ratio)
		}
		met := "—"
		if row.Met != nil {
			met = map[bool]string{true: "yes", false: "**no**"}[*row.Met]
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(row.Name, row.Key), formatValue(row.Value, row.Unit),
			cell(ceiling, ""), ratio, cell(row.Target, ""), met, cell(row.Notes, ""))
	}
	m := r.Machine
	fmt.Fprintf(&b, "\nMachine: %s, %d cores (GOMAXPROCS %d), %s %s/%s; %s; load average %s at the start, %s at the end; the run took %.0f s.\n",
		orDash(m.CPU), m.NumCPU, m.GOMAXPROCS, m.GoVersion, m.GOOS, m.GOARCH, m.Kernel, orDash(m.LoadBefore), orDash(m.LoadAfter), r.Seconds)
	if r.Command != "" {
		fmt.Fprintf(&b, "Command: `%s`\n", r.Command)
	}
	for _, n := range r.Notes {
		b.WriteString("\n- " + n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell makes s safe inside a Markdown table cell (def when s is empty).
func cell(s, def string) string {
	if s == "" {
		s = def
	}
	if s == "" {
		return "—"
	}
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// formatValue prints v in unit: rates with thousands separated, times
// and sizes with a sensible precision.
func formatValue(v float64, unit string) string {
	switch unit {
	case "/s":
		return thousands(v) + "/s"
	case "MiB":
		return fmt.Sprintf("%.1f MiB", v)
	case "ms":
		if v < 10 {
			return fmt.Sprintf("%.2f ms", v)
		}
		return fmt.Sprintf("%.0f ms", v)
	case "ms/activity":
		return fmt.Sprintf("%.3f ms/activity", v)
	case "µs":
		return fmt.Sprintf("%.1f µs", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}

// thousands formats v rounded to an integer with a thin space between
// groups of three digits ("20 480").
func thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ' ')
		}
		out = append(out, s[i])
	}
	if v < 0 {
		return "-" + string(out)
	}
	return string(out)
}

// met is a *bool for Row.Met.
func met(ok bool) *bool { return &ok }

// judged is a row's Met: met(ok) for a row held to its target, nil (no
// goal) for a reference row.
func judged(held, ok bool) *bool {
	if !held {
		return nil
	}
	return met(ok)
}

// ms converts a duration (or microseconds from a histogram) to
// milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func usToMS(us int64) float64 { return float64(us) / 1000 }
