package record_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

// mergeable gives each security section a shard's record around it, so
// that Merge takes them (and the trip through JSON keeps them).
func mergeable(t *testing.T, secs ...*record.Security) []*record.Record {
	t.Helper()
	var out []*record.Record
	for i, sec := range secs {
		res := recordtest.Run(t0, time.Second, map[string]*record.Stats{
			"Create": recordtest.Sends(10, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
		r := recordtest.MustRecord(t, res, record.Settings{Shard: string(rune('1'+i)) + "/2"})
		r.Security = sec
		out = append(out, recordtest.RoundTrip(t, r))
	}
	return out
}

// TestSecurityCounts covers the section's counting, merging, lines and
// gates.
func TestSecurityCounts(t *testing.T) {
	var a record.Security
	a.Add("body", "https://flood1.test/users/alice/notes/1", "https://sut.test/inbox", record.Class202, 202) // accepted: a finding
	a.Add("body", "https://flood1.test/users/alice/notes/2", "https://sut.test/inbox", record.Class401, 401) // refused
	a.Add("date", "https://flood1.test/users/bob/notes/3", "https://sut.test/inbox", record.ClassTimeout, 0) // no verdict
	if c := a.Kinds["body"]; *c != (record.ForgeryCounts{Sent: 2, Accepted: 1, Refused: 1}) {
		t.Fatalf("body %+v", c)
	}
	if len(a.Findings) != 1 || a.Findings[0].Status != 202 || a.Findings[0].Kind != "body" {
		t.Fatalf("findings %+v", a.Findings)
	}
	b := a.Clone()
	b.Add("date", "x", "y", record.Class401, 401)
	if a.Kinds["date"].Sent != 1 {
		t.Fatal("Clone shares its counts")
	}
	merged, err := record.Merge(mergeable(t, &a, b)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := merged.Security.Total(); got != (record.ForgeryCounts{Sent: 7, Accepted: 2, Refused: 3, Failed: 2}) {
		t.Fatalf("merged %+v", got)
	}
	lines := strings.Join(merged.Security.SecurityLines(1), "\n")
	for _, want := range []string{"SECURITY: 2 forged request(s) accepted", "body             sent 4, refused 2, accepted 2", "… 1 more findings"} {
		if !strings.Contains(lines, want) {
			t.Errorf("lines lack %q:\n%s", want, lines)
		}
	}
	gates, err := record.ParseGates([]string{"forged_accepted=0", "date.forged_accepted=0", "wrong_key.forged_accepted=0"})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := record.CheckGates(merged, gates)
	if res[0].Holds || res[0].Actual != 2 || !res[1].Holds || res[2].Known {
		t.Fatalf("gates %v", res) // 2 accepted; no date accepted; no wrong-key sent: no data
	}
	res, _ = record.CheckGates(&record.Record{}, gates[:1])
	if res[0].Known || res[0].Holds {
		t.Fatalf("forged_accepted=0 on a run without forgeries: %v, want no data (missed)", res[0])
	}
}

// TestParseForgedGates: the security counters parse, over every kind or
// one ('_' for '-'), and '=' reads as '=='.
func TestParseForgedGates(t *testing.T) {
	for _, tc := range []struct{ expr, canon string }{
		{"forged_accepted=0", "forged_accepted==0"},                                // the forgery gate
		{"digest_unsigned.forged_accepted<1", "digest_unsigned.forged_accepted<1"}, // one tamper kind
		{"forged_sent>0", "forged_sent>0"},                                         // forgeries were sent
		{"forged_accepted<1%", "forged_accepted<1%"},                               // a share of those sent
	} {
		g, err := record.ParseGate(tc.expr)
		if err != nil || g.String() != tc.canon {
			t.Errorf("%q: %v, canonical %q, want %q", tc.expr, err, g.String(), tc.canon)
		}
	}
}

// TestSecurityBounds: findings past MaxFindings are counted, not listed,
// also when merged.
func TestSecurityBounds(t *testing.T) {
	var s record.Security
	for range record.MaxFindings + 2 {
		s.Add("body", "a", "i", record.Class202, 202)
	}
	if len(s.Findings) != record.MaxFindings || s.FindingsOmitted != 2 || s.Kinds["body"].Accepted != record.MaxFindings+2 {
		t.Fatalf("%d findings, %d omitted, %+v", len(s.Findings), s.FindingsOmitted, s.Kinds["body"])
	}
	m, err := record.Merge(mergeable(t, &s, s.Clone())...)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Security.Findings) != record.MaxFindings || m.Security.FindingsOmitted != record.MaxFindings+4 {
		t.Fatalf("merged: %d findings, %d omitted", len(m.Security.Findings), m.Security.FindingsOmitted)
	}
}
