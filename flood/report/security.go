package report

import (
	"fmt"
	"strings"

	"github.com/crowdfed/crowd/flood/record"
)

// findingsShown bounds the findings the table and the Markdown list; the
// record keeps them all (up to record.MaxFindings).
const findingsShown = 20

// writeSecurity writes the record's security section (forged requests by
// kind, the findings), nothing when the run forged none.
func writeSecurity(b *strings.Builder, r *record.Record) {
	for _, l := range r.Security.SecurityLines(findingsShown) {
		fmt.Fprintln(b, l)
	}
}

// writeSecurityMarkdown is writeSecurity for a pull request: a bold
// verdict line, then the rest as a list.
func writeSecurityMarkdown(b *strings.Builder, r *record.Record) {
	lines := r.Security.SecurityLines(findingsShown)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "**%s**\n\n", record.EscapeMarkdown(lines[0]))
	for _, l := range lines[1:] {
		fmt.Fprintf(b, "- %s\n", record.EscapeMarkdown(strings.TrimSpace(l)))
	}
	b.WriteString("\n")
}
