package loadrun

import (
	"math"
	"time"

	"github.com/crowdfed/crowd/flood/scenario"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// ScenarioConfig is what a scenario adds to a load run beyond the flood's
// other flags (Config.Scenario): its name, senders by origin, forged
// requests, the posts Likes go to. The zero value adds nothing.
type ScenarioConfig struct {
	// Name is the scenario's (--scenario), recorded in the settings; ""
	// when none was named.
	Name string
	// Tamper lists the forged kinds to send (--tamper: kinds, comma-
	// separated, or "all"); TamperShare is the share of sends forged
	// (--tamper-share, in (0, 1]).
	Tamper      string
	TamperShare float64
	// OriginZipf draws the senders' origins by Zipf (--origin-zipf, > 1;
	// 0 uniform).
	OriginZipf float64
	// TargetPosts, when > 0, sends Likes (and Announces) to each
	// persona's TargetPosts newest posts only (--target-posts): one post
	// boosted by the crowd, as a boost storm is.
	TargetPosts int
	// ForgerySettle is how long the SUT has, after the flood, to process
	// the forgeries it answered 2xx before their effect is looked for
	// through its client API (--forgery-settle, 0 to MaxForgerySettle).
	ForgerySettle time.Duration
}

// MaxForgerySettle bounds --forgery-settle: a look-up that waits longer
// waits for nothing a server queues.
const MaxForgerySettle = 10 * time.Minute

// scenarioPlan is a checked ScenarioConfig.
type scenarioPlan struct {
	name        string
	draws       *traffic.Draws // nil: none
	targetPosts int
	settle      time.Duration // before the forgeries' effects are looked for
}

// checkScenario reads c.Scenario into p, every problem naming its flag.
func (c Config) checkScenario(p *plan, bad func(string, ...any)) {
	s := c.Scenario
	if s == nil {
		return
	}
	sp := &scenarioPlan{name: s.Name, targetPosts: s.TargetPosts, settle: s.ForgerySettle}
	p.scenario = sp
	kinds, err := signing.ParseTampers(s.Tamper)
	if err != nil {
		bad("--tamper %q: want all, or some of %s", s.Tamper, signing.TamperNames())
	}
	if len(kinds) > 0 && !(s.TamperShare > 0 && s.TamperShare <= 1) {
		bad("--tamper-share %g: want a share above 0, at most 1 (1: every send forged)", s.TamperShare)
	}
	if s.OriginZipf != 0 && !(s.OriginZipf > 1 && !math.IsInf(s.OriginZipf, 0)) {
		bad("--origin-zipf %g: want a number > 1, or 0 for uniform origins", s.OriginZipf)
	}
	if s.ForgerySettle < 0 || s.ForgerySettle > MaxForgerySettle {
		bad("--forgery-settle %v: want 0 to %v", s.ForgerySettle, MaxForgerySettle)
	}
	if s.TargetPosts < 0 {
		bad("--target-posts %d: want >= 0 (0: every post)", s.TargetPosts)
	}
	if len(kinds) > 0 || s.OriginZipf != 0 {
		sp.draws = &traffic.Draws{OriginZipf: s.OriginZipf, Tamper: kinds, TamperShare: s.TamperShare}
	}
}

// draws are the generator's Draws (nil: none).
func (p *plan) draws() *traffic.Draws {
	if p.scenario == nil {
		return nil
	}
	return p.scenario.draws
}

// forging reports whether the run sends forged requests.
func (p *plan) forging() bool { d := p.draws(); return d != nil && len(d.Tamper) > 0 }

// scenarioName is the name the record gives the run's scenario.
func (p *plan) scenarioName() string {
	if p.scenario == nil {
		return ""
	}
	return p.scenario.name
}

// trimPosts keeps each persona's TargetPosts newest posts (the outbox
// lists them newest first), and says so.
func (r *runner) trimPosts(personas []*traffic.Persona) {
	if r.p.scenario == nil || r.p.scenario.targetPosts == 0 {
		return
	}
	n := r.p.scenario.targetPosts
	for _, ps := range personas {
		if len(ps.Posts) > n {
			ps.Posts = ps.Posts[:n]
		}
	}
	r.c.Show.note(r.c.Stderr, "Likes go to each persona's %d newest post(s) (--target-posts)", n)
}

// Scenarios is the catalog --scenario names its presets from (the CLI
// reaches the scenario package through the load run).
func Scenarios() (*scenario.Catalog, error) { return scenario.Presets() }
