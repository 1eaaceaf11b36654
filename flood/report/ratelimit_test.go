package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// TestReportRateLimits: a run whose 429s carried X-RateLimit-* and no
// Retry-After says in its table and its Markdown what the SUT advertised,
// beside "Retry-After seen 0"; a run without them says nothing more.
func TestReportRateLimits(t *testing.T) {
	r := reportRecord(t)
	var plain bytes.Buffer
	if err := WriteTable(&plain, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "rate limits") {
		t.Errorf("a run without rate-limit fields mentions them:\n%s", plain.String())
	}
	reset := t0.Add(5 * time.Minute)
	for range 60 {
		r.Overall.RateLimits.Add(record.Class429, record.RateLimitSample{
			Said: record.SaidLimit | record.SaidRemaining | record.SaidReset, Limit: 300, ResetIn: 4 * time.Minute, ResetAt: reset})
	}
	want := "429: 60 answers, limit 300, remaining 0, reset within 240s (latest 2026-11-30T12:05:00Z), 60 without Retry-After"
	var table, md bytes.Buffer
	if err := WriteTable(&table, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r, "x.json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "rate limits advertised: "+want+"\n") {
		t.Errorf("table lacks the rate limits:\n%s", table.String())
	}
	if !strings.Contains(md.String(), "Rate limits advertised: "+record.EscapeMarkdown(want)) {
		t.Errorf("markdown lacks the rate limits:\n%s", md.String())
	}
}
