package loadrun

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// TestScenarioConfig: what a scenario adds is checked with the rest, each
// problem naming its flag, and read into the generator's draws.
func TestScenarioConfig(t *testing.T) {
	c := valid(t)
	c.Scenario = &ScenarioConfig{Name: "x", Tamper: "body,nope", TamperShare: 0, OriginZipf: 0.5, TargetPosts: -1, ForgerySettle: -time.Second}
	var all []string
	for _, e := range c.Validate() {
		all = append(all, e.Error())
	}
	text := strings.Join(all, "\n")
	for _, flag := range []string{"--tamper ", "--origin-zipf", "--target-posts", "--forgery-settle"} {
		if !strings.Contains(text, flag) {
			t.Errorf("no problem names %s:\n%s", flag, text)
		}
	}
	c.Scenario = &ScenarioConfig{Name: "forgery", Tamper: "date", TamperShare: 0}
	if errs := c.Validate(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "--tamper-share") {
		t.Errorf("a tamper list with no share: %v", errs)
	}
	c.Scenario = &ScenarioConfig{Name: "forgery", Tamper: "all", TamperShare: 0.5, OriginZipf: 1.3, TargetPosts: 1}
	p, errs := c.plan()
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	d := p.draws()
	if p.scenarioName() != "forgery" || !p.forging() || d.OriginZipf != 1.3 || !slices.Equal(d.Tamper, signing.Tampers()) {
		t.Fatalf("plan: %q %+v", p.scenarioName(), d)
	}
	r := &runner{c: c, p: p}
	r.c.Stderr = io.Discard
	ps := []*traffic.Persona{{Posts: []string{"new", "old"}}, {}}
	r.trimPosts(ps)
	if !slices.Equal(ps[0].Posts, []string{"new"}) || len(ps[1].Posts) != 0 {
		t.Fatalf("--target-posts 1 kept %v, %v", ps[0].Posts, ps[1].Posts)
	}
}
