package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
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

// TestForgedApartNoted: a run with forged requests (--tamper) says under
// its types table, in the table, the Markdown and the page, that the "all"
// row's errors count the forgeries' refusals, and gives the honest
// requests' errors as a gate counts them; a run without says nothing.
func TestForgedApartNoted(t *testing.T) {
	ms := func(int) time.Duration { return time.Millisecond }
	res := recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{
		// 100 honest Creates, 2 of them refused with a 503.
		"Create": recordtest.Sends(100, ms, recordtest.Every(50, record.Class503)),
		// 20 forgeries, every one refused: the right answer.
		string(record.TypeForged): recordtest.Sends(20, ms, recordtest.Always(record.Class401)),
	})
	r, err := res.Record(record.Settings{Arrivals: "constant", Mix: "create=1"})
	if err != nil {
		t.Fatal(err)
	}
	note := `errors in "all" count the Forged row's refusals, the right answer to a forgery; the honest requests' alone: 2.0% (2 of 100), as --expect counts them`
	checkRenderings(t, []rendering{
		{"table", func(b *bytes.Buffer) error { return WriteTable(b, r) }, []string{"\n  " + note + "\n"}},
		{"markdown", func(b *bytes.Buffer) error { return WriteMarkdown(b, r, "r.json") }, []string{`the honest requests' alone: 2.0% (2 of 100)`}},
		{"html", func(b *bytes.Buffer) error { return WriteHTML(b, r) }, []string{`the honest requests&#39; alone: 2.0% (2 of 100), as --expect counts them.`}},
	})
	var b bytes.Buffer
	if err := WriteTable(&b, reportRecord(t)); err != nil || strings.Contains(b.String(), "Forged") {
		t.Errorf("a run without forgeries has the note (%v):\n%s", err, b.String())
	}
}
