package e2e

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// effectsRecord is the part of a record TestForgeryEffectsRealFedify
// reads: its security section (flood/record/SCHEMA.md), verdicts by effect.
type effectsRecord struct {
	Security *record.Security `json:"security"`
}

// fedifyForgeries is the Fedify SUT's GET /forgeries: what its forgery
// mode answered 202 and dropped, or kept.
type fedifyForgeries struct {
	Mode    string          `json:"mode"`
	Dropped []fedifyForgery `json:"dropped"`
	Kept    []fedifyForgery `json:"kept"`
}

// fedifyForgery is one forged request in Fedify's forgery log.
type fedifyForgery struct {
	Type, ID, Actor string
}

// forgeryEffects is one forgery run judged by effect: the record, the
// output, and what Fedify itself says it did.
type forgeryEffects struct {
	rec    effectsRecord
	output string
	log    fedifyForgeries
	// rejected is how many inbox POSTs Fedify answered 4xx during the run.
	rejected int64
}

// TestForgeryEffectsRealFedify floods one real Fedify 1.5.9 with forged
// requests it answers 202, playing in turn the two kinds of inbox a 202
// cannot tell apart (its forgery mode, switched through its control API),
// and judges the crowd's verdicts by effect against Fedify's own log of
// what it dropped or kept. The personas' client-API tokens (`--post-token`)
// let the crowd look where each forgery would land.
func TestForgeryEffectsRealFedify(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	var personas []struct{ Name, Token string }
	f.call(t, "GET", fedifyCtl+"/personas", nil, &personas)
	if len(personas) != 3 {
		t.Fatalf("Fedify's personas: %+v, want 3", personas)
	}
	var tokens []string
	for _, p := range personas {
		tokens = append(tokens, "--post-token", p.Name+"="+p.Token)
	}

	// As Mastodon: a wrong-key forgery (a valid signature by another actor's
	// key) answered 202 and dropped. Every one is "answered 2xx without
	// effect", the preset's gate forged_effective=0 holds, exit 0.
	t.Run("drop-wrong-key", func(t *testing.T) {
		r, c := f.forgeryEffectsRun(t, "drop-wrong-key", "wrong-key", 0, tokens)
		if c.NoEffect != c.Accepted || c.Effective != 0 {
			t.Errorf("wrong-key %+v: want every one answered 2xx without effect", c)
		}
		for _, fd := range r.rec.Security.Findings {
			if fd.Effect != record.EffectNone || fd.Seen != "" || fd.Status != 202 {
				t.Errorf("finding %+v: want answered 202 without effect", fd)
			}
		}
		// Fedify's log of what it dropped is the record's findings, one for one.
		r.matchFedify(t, "dropped", r.log.Dropped, r.log.Kept)
		r.says(t,
			fmt.Sprintf("Forged requests: %d sent, 0 refused, %d answered 2xx (0 took effect, %d without effect, 0 effect unknown), 0 without a verdict: every forged request was refused or answered 2xx and dropped.", c.Sent, c.Accepted, c.NoEffect),
			fmt.Sprintf("wrong-key        sent %d, refused 0, 2xx without effect %d, took effect 0, accepted effect unknown 0, no verdict 0\n", c.Sent, c.NoEffect),
			"expect forged_effective = 0 (want == 0): met")
		if strings.Contains(r.output, "finding:") || strings.Contains(r.output, "SECURITY") {
			t.Errorf("a dropped forgery reported as a finding:\n%s", r.output)
		}
	})

	// As an inbox built on go-fed/httpsig: a body forgery (the Digest no
	// longer matches the body) kept as the actor's. Every one accepted is
	// seen where it landed, named in the record and the output; exit 1.
	t.Run("keep-body", func(t *testing.T) {
		r, c := f.forgeryEffectsRun(t, "keep-body", "body", 1, tokens)
		if c.Effective != c.Accepted || c.NoEffect != 0 {
			t.Errorf("body %+v: want every one answered 2xx seen to take effect", c)
		}
		// Where each was seen: a forged note in its persona's notifications
		// (carrying the forgery's marker), a Like or Announce on the post, a
		// Follow among the persona's followers (or each in the notifications).
		where := regexp.MustCompile(`^the (notifications of load\d@sut\.test \(a (mention of https://flood\d+\.test/\S+ carrying the forgery's marker|(favourite|reblog|follow) by leaver_\S+@flood\d+\.test, the actor the forgery spoke for)\)` +
			`|(favourites|boosts) of https://sut\.test/users/load\d/posts/\d+ \(leaver_\S+@flood\d+\.test, the actor the forgery spoke for\)` +
			`|followers of load\d@sut\.test \(leaver_\S+@flood\d+\.test, the actor the forgery spoke for\))$`)
		mentions, places := 0, map[string]string{}
		for i, fd := range r.rec.Security.Findings {
			if fd.Effect != record.EffectSeen || !where.MatchString(fd.Seen) {
				t.Errorf("finding %+v: want seen, named where", fd)
			}
			if strings.Contains(fd.Seen, "a mention of") {
				mentions++
			}
			place, _, _ := strings.Cut(fd.Seen, " of ")
			places[place] = fd.Seen
			line := fmt.Sprintf("finding: body forgery %s answered %d at %s took effect: seen in %s\n", fd.Activity, fd.Status, fd.Inbox, fd.Seen)
			if i < 20 && !strings.Contains(r.output, line) { // the table shows the first 20
				t.Errorf("the output does not name finding %d: %q\n%s", i, line, r.output)
			}
		}
		for _, seen := range places {
			t.Logf("seen in %s", seen)
		}
		if mentions == 0 {
			t.Errorf("no forged note seen in a persona's notifications: %+v", r.rec.Security.Findings)
		}
		r.matchFedify(t, "kept", r.log.Kept, r.log.Dropped)
		r.says(t,
			fmt.Sprintf("Forged requests: %d sent, 0 refused, %d answered 2xx (%d took effect, 0 without effect, 0 effect unknown), 0 without a verdict: SECURITY: %d forged request(s) took effect.", c.Sent, c.Accepted, c.Effective, c.Effective),
			fmt.Sprintf("body             sent %d, refused 0, 2xx without effect 0, took effect %d, accepted effect unknown 0, no verdict 0  <- TOOK EFFECT\n", c.Sent, c.Effective),
			fmt.Sprintf("expect forged_effective = %d (want == 0): missed", c.Effective))
	})
}

// forgeryEffectsRun switches Fedify to mode (which clears its forgery log),
// zeroes its counters, and floods it for 3 s with the forgery scenario
// forging only tamper, the personas' tokens given so the crowd judges each
// 2xx by its effect 2 s after the flood. The run must exit with exit, have
// forged only tamper, and have every forgery answered 2xx (the mode's
// point); c is that kind's counts.
func (f *federation) forgeryEffectsRun(t *testing.T, mode, tamper string, exit int, tokens []string) (r forgeryEffects, c record.ForgeryCounts) {
	t.Helper()
	if code := f.call(t, "POST", fedifyCtl+"/forgery-mode", map[string]string{"mode": mode}, nil); code != 200 {
		t.Fatalf("POST /forgery-mode %s: %d", mode, code)
	}
	f.call(t, "POST", fedifyCtl+"/stats/reset", nil, nil)
	args := append([]string{"--scenario", "forgery", "--tamper", tamper, "--seconds", "3", "--forgery-settle", "2s", "--timeout", "30s"}, tokens...)
	_, output, code := f.floodExit(t, "forgery-"+mode, &r.rec, args...)
	r.output = string(output)
	if r.rec.Security == nil {
		t.Fatalf("exit %d, the record has no security section\n%s", code, output)
	}
	if k := r.rec.Security.Kinds[tamper]; k != nil {
		c = *k
	}
	if code != exit {
		t.Errorf("exit %d, want %d\n%s", code, exit, output)
	}
	if len(r.rec.Security.Kinds) != 1 || c.Sent == 0 || c.Accepted != c.Sent {
		t.Errorf("%s %+v (kinds %v): want only %s forged, every one answered 2xx", tamper, c, slices.Collect(maps.Keys(r.rec.Security.Kinds)), tamper)
	}
	switch e := r.rec.Security.Effects; {
	case e == nil:
		t.Errorf("no effect look-up ran\n%s", output)
	case len(e.Unread) != 0 || e.SettleSeconds != 2 || !strings.Contains(e.Via, "https://sut.test"):
		t.Errorf("look-up %+v: want the client API at https://sut.test read whole, 2 s after", e)
	}
	if r.rec.Security.FindingsOmitted != 0 {
		t.Fatalf("%d findings omitted: the run is too long to compare one for one", r.rec.Security.FindingsOmitted)
	}
	f.call(t, "GET", fedifyCtl+"/forgeries", nil, &r.log)
	var stats struct {
		RejectedTotal int64 `json:"rejectedTotal"`
	}
	f.call(t, "GET", fedifyCtl+"/stats", nil, &stats)
	r.rejected = stats.RejectedTotal
	for kind, k := range r.rec.Security.Kinds {
		t.Logf("%s: sent %d, refused %d, 2xx %d (took effect %d, without effect %d), no verdict %d; Fedify dropped %d, kept %d",
			kind, k.Sent, k.Refused, k.Accepted, k.Effective, k.NoEffect, k.Failed, len(r.log.Dropped), len(r.log.Kept))
	}
	return r, c
}

// matchFedify checks Fedify's side of the run: it refused no inbox POST
// (each forgery answered 202), its forgery log (what it did: "dropped" or
// "kept") names exactly the forged activities of the record's findings,
// each once, and it did nothing else with any (other is empty).
func (r forgeryEffects) matchFedify(t *testing.T, did string, log, other []fedifyForgery) {
	t.Helper()
	if r.rejected != 0 {
		t.Errorf("Fedify answered %d inbox POSTs 4xx: forgeries its mode should have answered 202", r.rejected)
	}
	if len(other) != 0 {
		t.Errorf("Fedify in mode %q did otherwise than %s with %d forgeries: %+v", r.log.Mode, did, len(other), other)
	}
	var got, want []string
	for _, e := range log {
		got = append(got, e.ID)
	}
	for _, fd := range r.rec.Security.Findings {
		want = append(want, fd.Activity)
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("Fedify (mode %q) %s %d forgeries, the record lists %d findings: they differ\nFedify: %v\nrecord: %v", r.log.Mode, did, len(got), len(want), got, want)
	}
}

// says checks that the run's output has each of lines.
func (r forgeryEffects) says(t *testing.T, lines ...string) {
	t.Helper()
	for _, want := range lines {
		if !strings.Contains(r.output, want) {
			t.Errorf("the output does not say %q:\n%s", want, r.output)
		}
	}
}
