package report

import (
	"bytes"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestSecurityShown: a record with forged requests shows them, and the
// finding, in the table, the Markdown and the page; the scenario is named.
func TestSecurityShown(t *testing.T) {
	r := reportRecord(t)
	r.Settings.Scenario = "forgery"
	r.Security = &record.Security{}
	r.Security.Add("body", "https://flood1.test/users/alice/notes/1/activity", "https://sut.test/inbox", record.Class202, 202)
	r.Security.Add("date", "https://flood1.test/users/bob/notes/2/activity", "https://sut.test/inbox", record.Class401, 401)
	checkRenderings(t, []rendering{
		{"table", func(b *bytes.Buffer) error { return WriteTable(b, r) }, []string{"scenario forgery", "SECURITY: 1 forged request(s) accepted, effect unknown", "<- ACCEPTED, EFFECT UNKNOWN", "finding: body forgery https://flood1.test/users/alice/notes/1/activity answered 202"}},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "r.json") }, []string{"**Forged requests: 2 sent", "- finding: body forgery"}},
		{"html", func(b *bytes.Buffer) error { return WriteHTML(b, r) }, []string{`id="security"`, "scenario forgery", "finding: body forgery"}},
	})
}
