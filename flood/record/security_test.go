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
	for _, want := range []string{"SECURITY: 2 forged request(s) accepted, effect unknown", "body             sent 4, refused 2, 2xx without effect 0, took effect 0, accepted effect unknown 2", "… 1 more findings"} {
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

// TestForgeryAnswersThatJudge: which answers to a forged request count as
// its refusal. Those that answer about the inbox or the load (an honest
// request there draws them too) are no verdict: a typo in the inbox or a
// rate-limited SUT must not pass a forgery it never checked.
func TestForgeryAnswersThatJudge(t *testing.T) {
	for _, c := range []struct {
		class record.Class
		want  record.ForgeryCounts
	}{
		{record.Class202, record.ForgeryCounts{Sent: 1, Accepted: 1}},     // taken: a finding
		{record.Class401, record.ForgeryCounts{Sent: 1, Refused: 1}},      // the signature refused
		{record.Class403, record.ForgeryCounts{Sent: 1, Refused: 1}},      // forbidden
		{record.ClassOther4xx, record.ForgeryCounts{Sent: 1, Refused: 1}}, // 400, 422: a bad request
		{record.Class404, record.ForgeryCounts{Sent: 1, Failed: 1}},       // no such inbox: nothing judged
		{record.Class410, record.ForgeryCounts{Sent: 1, Failed: 1}},       // gone: nothing judged
		{record.Class429, record.ForgeryCounts{Sent: 1, Failed: 1}},       // rate limited: nothing judged
		{record.Class503, record.ForgeryCounts{Sent: 1, Failed: 1}},       // unavailable
		{record.ClassTimeout, record.ForgeryCounts{Sent: 1, Failed: 1}},   // no answer
	} {
		var s record.Security
		s.Add("date", "https://flood1.test/users/alice/notes/1", "https://sut.test/inbox", c.class, 0)
		if got := s.Total(); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.class, got, c.want)
		}
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
		if err != nil || record.CanonicalGate(g) != tc.canon {
			t.Errorf("%q: %v, canonical %q, want %q", tc.expr, err, record.CanonicalGate(g), tc.canon)
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

// TestSecurityVerdicts: the summary's verdict and the gates follow what
// the look-up made of the 2xx answers, and never claim every forgery
// refused while some got no verdict.
func TestSecurityVerdicts(t *testing.T) {
	const inbox = "https://sut.test/inbox"
	for _, tc := range []struct {
		name      string
		answers   []record.Class // one forged "body" request each, activity a0, a1, …
		effects   []string       // Judge's effect for a0, a1, … ("" leaves it)
		judged    bool           // the section has an EffectLookup
		verdict   string         // in the summary line
		accepted  int64          // forged_accepted
		effective int64          // forged_effective; -1: no data
	}{
		// Two refused, eight timed out: no claim that every one was refused.
		{"no verdict", []record.Class{record.Class401, record.Class401, record.ClassTimeout, record.ClassTimeout, record.ClassTimeout, record.ClassTimeout, record.ClassTimeout, record.ClassTimeout, record.ClassTimeout, record.ClassTimeout},
			nil, false, "8 forged request(s) got no verdict; none seen accepted", 0, 0},
		// Every one refused: the only case that says so.
		{"all refused", []record.Class{record.Class401, record.Class401}, nil, false, "every forged request was refused", 0, 0},
		// A 2xx without a look-up: accepted, effect unknown; forged_effective has no data.
		{"unknown", []record.Class{record.Class202, record.Class401}, nil, false, "SECURITY: 1 forged request(s) accepted, effect unknown", 1, -1},
		// A 2xx looked for and not found: dropped, so neither gate counts it.
		{"dropped", []record.Class{record.Class202, record.Class401}, []string{record.EffectNone}, true, "every forged request was refused or answered 2xx and dropped", 0, 0},
		// A 2xx whose marker was found: the finding.
		{"took effect", []record.Class{record.Class202, record.Class202}, []string{record.EffectSeen, record.EffectNone}, true, "SECURITY: 1 forged request(s) took effect", 1, 1},
		// One judged, one not: forged_effective cannot say.
		{"partly judged", []record.Class{record.Class202, record.Class202}, []string{record.EffectNone}, true, "SECURITY: 1 forged request(s) accepted, effect unknown", 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s record.Security
			for i, c := range tc.answers {
				s.Add("body", "a"+string(rune('0'+i)), inbox, c, 202)
			}
			for i, e := range tc.effects {
				if e != "" && !s.Judge("a"+string(rune('0'+i)), e, "the notifications of load0@sut.test") {
					t.Fatalf("Judge a%d %q: not judged", i, e)
				}
			}
			if tc.judged {
				s.Effects = &record.EffectLookup{Via: "the Mastodon client API at https://sut.test", SettleSeconds: 5}
			}
			lines := strings.Join(s.SecurityLines(10), "\n")
			if !strings.Contains(lines, tc.verdict+".") {
				t.Errorf("lines lack %q:\n%s", tc.verdict, lines)
			}
			if strings.Contains(lines, "every forged request was refused.") && tc.verdict != "every forged request was refused" {
				t.Errorf("claims every forgery refused:\n%s", lines)
			}
			gates, err := record.ParseGates([]string{"forged_accepted=0", "forged_effective=0", "body.forged_effective=0"})
			if err != nil {
				t.Fatal(err)
			}
			r := &record.Record{Security: &s}
			res, _ := record.CheckGates(r, gates)
			if res[0].Actual != float64(tc.accepted) {
				t.Errorf("forged_accepted = %v, want %d", res[0].Actual, tc.accepted)
			}
			for _, g := range res[1:] {
				if (tc.effective < 0) == g.Known || (g.Known && g.Actual != float64(tc.effective)) {
					t.Errorf("%s: known %v actual %v, want %d (-1: no data)", g.Gate.Expr, g.Known, g.Actual, tc.effective)
				}
			}
		})
	}
}

// TestReplaysJudgeNothing: a replay answered 2xx is no finding (a correct
// server takes a verified duplicate and drops it by its id), so it draws
// no SECURITY line and no gate over every kind; it is counted in its row
// and replay.forged_accepted still gates it. Forgeries of which the SUT
// judged none (replays taken, 429s) give the gates no data: missed.
func TestReplaysJudgeNothing(t *testing.T) {
	const inbox = "https://sut.test/inbox"
	for _, tc := range []struct {
		name     string
		add      func(*record.Security)
		verdict  string  // in the summary line
		accepted float64 // forged_accepted over every kind; -1: no data
	}{
		// Replays taken beside other kinds refused: those kinds' verdict, the replays said apart.
		{"replays taken, the rest refused", func(s *record.Security) {
			s.Add("replay", "a0", inbox, record.Class202, 202)
			s.Add("replay", "a1", inbox, record.Class202, 202)
			s.Add("date", "a2", inbox, record.Class401, 401)
		}, "every forged request was refused; 2 replay(s) answered 2xx, which judges nothing", 0},
		// Replays taken alone: nothing judged, said so, and no data for the gate.
		{"replays alone", func(s *record.Security) {
			s.Add("replay", "a0", inbox, record.Class202, 202)
		}, "no forged request whose answer judges the SUT (only replays answered 2xx); 1 replay(s) answered 2xx", -1},
		// Replays refused or unanswered still count: no claim that every one was refused.
		{"replays unanswered", func(s *record.Security) {
			s.Add("replay", "a0", inbox, record.Class401, 401)
			s.Add("replay", "a1", inbox, record.ClassTimeout, 0)
			s.Add("date", "a2", inbox, record.Class401, 401)
		}, "1 forged request(s) got no verdict; none seen accepted", 0},
		// Every forgery answered 429: the SUT judged none, and the gate cannot say it refused them.
		{"all rate limited", func(s *record.Security) {
			s.Add("date", "a0", inbox, record.Class429, 429)
			s.Add("body", "a1", inbox, record.Class429, 429)
		}, "2 forged request(s) got no verdict; none seen accepted", -1},
		// Another kind taken: still the finding it is.
		{"a date forgery taken", func(s *record.Security) {
			s.Add("replay", "a0", inbox, record.Class202, 202)
			s.Add("date", "a1", inbox, record.Class202, 202)
		}, "SECURITY: 1 forged request(s) accepted, effect unknown", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s record.Security
			tc.add(&s)
			lines := strings.Join(s.SecurityLines(10), "\n")
			if !strings.Contains(lines, tc.verdict) {
				t.Errorf("lines lack %q:\n%s", tc.verdict, lines)
			}
			if strings.Contains(lines, "finding: replay") {
				t.Errorf("a replay listed as a finding:\n%s", lines)
			}
			gates, err := record.ParseGates([]string{"forged_accepted=0", "replay.forged_accepted=0", "forged_sent>0"})
			if err != nil {
				t.Fatal(err)
			}
			res, _ := record.CheckGates(&record.Record{Security: &s}, gates)
			if (tc.accepted < 0) == res[0].Known || (res[0].Known && res[0].Actual != tc.accepted) {
				t.Errorf("forged_accepted: known %v actual %v, want %g (-1: no data)", res[0].Known, res[0].Actual, tc.accepted)
			}
			if r := s.Kinds["replay"]; r == nil && res[1].Known {
				t.Errorf("replay.forged_accepted: %v with no replay sent, want no data", res[1])
			} else if r != nil && (!res[1].Known || res[1].Actual != float64(r.Accepted)) {
				t.Errorf("replay.forged_accepted: %v, want the replays taken", res[1])
			}
			if !res[2].Known || res[2].Actual != float64(s.Total().Sent) {
				t.Errorf("forged_sent: %v, want every forged request", res[2])
			}
		})
	}
}

// TestSecurityEffectsMerge: the look-up's counts, findings' effects and
// lookup survive JSON and add up in Merge.
func TestSecurityEffectsMerge(t *testing.T) {
	var a, b record.Security
	a.Add("wrong-key", "x1", "i", record.Class202, 202)
	a.Judge("x1", record.EffectNone, "")
	a.Effects = &record.EffectLookup{Via: "api A", SettleSeconds: 5, Unread: []string{"followers of p"}}
	b.Add("body", "y1", "i", record.Class202, 202)
	b.Add("body", "y2", "i", record.Class202, 202)
	b.Judge("y1", record.EffectSeen, "the notifications of load0@sut.test")
	b.Effects = &record.EffectLookup{Via: "api B", SettleSeconds: 8}
	m, err := record.Merge(mergeable(t, &a, &b)...)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Security.Total()
	if got != (record.ForgeryCounts{Sent: 3, Accepted: 3, Effective: 1, NoEffect: 1}) || got.Unknown() != 1 {
		t.Fatalf("merged %+v", got)
	}
	e := m.Security.Effects
	if e == nil || e.Via != "api A; api B" || e.SettleSeconds != 8 || len(e.Unread) != 1 {
		t.Fatalf("merged lookup %+v", e)
	}
	if f := m.Security.Findings[1]; f.Effect != record.EffectSeen || f.Seen != "the notifications of load0@sut.test" {
		t.Fatalf("finding %+v", f)
	}
}
