package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/fetchkind"
)

// fetchRow is one kind of request the SUT made, formatted.
type fetchRow struct {
	Kind, Fetches, AfterEnd, Signed, Unsigned, Status, P50, P95, P99, Max string
}

// ampRow is one row of fetch amplification, formatted.
type ampRow struct {
	Type, Accepted, Fetches, PerActivity string
}

// fetchView is the fetch-back section as the documents show it.
type fetchView struct {
	Kinds []fetchRow
	Amp   []ampRow
	Notes []string
}

// fetchViewOf formats r's fetch-back section; nil when it has none.
func fetchViewOf(r *record.Record) *fetchView {
	fb := r.Fetchback
	if fb == nil {
		return nil
	}
	v := &fetchView{}
	row := func(name string, k *record.FetchKind) fetchRow {
		return fetchRow{Kind: name, Fetches: strconv.FormatInt(k.Fetches, 10), AfterEnd: strconv.FormatInt(k.AfterEnd, 10),
			Signed: strconv.FormatInt(k.Signed, 10), Unsigned: strconv.FormatInt(k.Unsigned, 10), Status: statusCounts(k.Status),
			P50: record.FormatMicros(k.Latency.P50), P95: record.FormatMicros(k.Latency.P95),
			P99: record.FormatMicros(k.Latency.P99), Max: record.FormatMicros(k.Latency.Max)}
	}
	for _, name := range fetchKinds(fb) {
		v.Kinds = append(v.Kinds, row(name, fb.Kinds[name]))
	}
	v.Kinds = append(v.Kinds, row("all", &fb.Total))
	for _, a := range fb.Amplification {
		per := "-"
		if a.Accepted > 0 {
			per = strconv.FormatFloat(a.PerActivity, 'f', 3, 64)
		}
		v.Amp = append(v.Amp, ampRow{Type: a.Type, Accepted: strconv.FormatInt(a.Accepted, 10),
			Fetches: strconv.FormatInt(a.Fetches, 10), PerActivity: per})
	}
	v.Notes = append(v.Notes, fmt.Sprintf("counted from the first send to %.0fs after the last answer (after end: within that grace)", fb.GraceSeconds))
	if r.Settings.Warmup > 0 {
		v.Notes = append(v.Notes, "the fetches of the warm-up are counted, its sends are not: amplification is an upper bound")
	}
	if k := fb.Kinds[fetchkind.Leaver]; k != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("leaver: %d fetches of accounts the run deleted or whose notes it boosted (%d answered 410: fetched once their Delete was drafted, credited to Delete; the others to Announce)",
			k.Fetches, k.Status["410"]))
	}
	if len(fb.Objects) > 0 {
		var parts []string
		for _, seg := range slices.Sorted(maps.Keys(fb.Objects)) {
			parts = append(parts, fmt.Sprintf("%s %d", seg, fb.Objects[seg]))
		}
		v.Notes = append(v.Notes, "objects fetched: "+strings.Join(parts, ", "))
	}
	return v
}

// fetchKinds are fb's kinds in the order the crowd names them
// (fetchkind.All), then any other by name.
func fetchKinds(fb *record.Fetchback) []string {
	var out []string
	for _, k := range fetchkind.All() {
		if fb.Kinds[k] != nil {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fb.Kinds)) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// statusCounts is "2xx 10, 4xx 1", classes sorted.
func statusCounts(m map[string]int64) string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", c, m[c]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// writeFetchbackTable is the text table's fetch-back part: the requests by
// kind, then the amplification.
func writeFetchbackTable(b *strings.Builder, r *record.Record) error {
	v := fetchViewOf(r)
	if v == nil {
		return nil
	}
	b.WriteString("\nfetched back by the SUT from the crowd (latency as served):\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tfetches\tafter end\tsigned\tunsigned\tp50\tp95\tp99\tmax\tstatus\t")
	for _, k := range v.Kinds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k.Kind, k.Fetches, k.AfterEnd, k.Signed, k.Unsigned, k.P50, k.P95, k.P99, k.Max, k.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fetch amplification\t2xx sends\tfetches\tper activity\t")
	for _, a := range v.Amp {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", a.Type, a.Accepted, a.Fetches, a.PerActivity)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range v.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
	return nil
}

// writeFetchbackMarkdown is the Markdown document's fetch-back part.
func writeFetchbackMarkdown(b *strings.Builder, r *record.Record) {
	v := fetchViewOf(r)
	if v == nil {
		return
	}
	b.WriteString("\nFetched back by the SUT from the crowd (latency as served):\n\n")
	b.WriteString("| kind | fetches | after end | signed | unsigned | p50 | p95 | p99 | max | status |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range v.Kinds {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", k.Kind, k.Fetches, k.AfterEnd, k.Signed, k.Unsigned, k.P50, k.P95, k.P99, k.Max, k.Status)
	}
	b.WriteString("\n| fetch amplification | 2xx sends | fetches | per activity |\n|---|---|---|---|\n")
	for _, a := range v.Amp {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", a.Type, a.Accepted, a.Fetches, a.PerActivity)
	}
	b.WriteString("\n")
	for _, n := range v.Notes {
		fmt.Fprintf(b, "- %s\n", record.EscapeMarkdown(n))
	}
	b.WriteString("\n")
}

// fetchbackTemplate is the HTML page's fetch-back part.
const fetchbackTemplate = `{{with .Fetchback}}
<h2>Fetched back by the SUT</h2>
<table id="fetchback">
<thead><tr><th>kind</th><th>fetches</th><th>after end</th><th>signed</th><th>unsigned</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>status</th></tr></thead>
<tbody>
{{range .Kinds}}<tr{{if eq .Kind "all"}} class="all"{{end}}><td>{{.Kind}}</td><td>{{.Fetches}}</td><td>{{.AfterEnd}}</td><td>{{.Signed}}</td><td>{{.Unsigned}}</td><td>{{.P50}}</td><td>{{.P95}}</td><td>{{.P99}}</td><td>{{.Max}}</td><td>{{.Status}}</td></tr>
{{end}}</tbody>
</table>
<table id="amplification">
<thead><tr><th>fetch amplification</th><th>2xx sends</th><th>fetches</th><th>per activity</th></tr></thead>
<tbody>
{{range .Amp}}<tr{{if eq .Type "all"}} class="all"{{end}}><td>{{.Type}}</td><td>{{.Accepted}}</td><td>{{.Fetches}}</td><td>{{.PerActivity}}</td></tr>
{{end}}</tbody>
</table>
<p>Latency as the crowd served each request. An object fetch counts for the activity type that makes the SUT fetch that kind of object (a note: an Announce of it, else a Create); every other fetch (actor, key, WebFinger, NodeInfo, collection) only in "all".</p>
<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
{{end}}`
