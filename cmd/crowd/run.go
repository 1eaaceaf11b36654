package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crowdfed/crowd/loadrun"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runFlags are the flags of `crowd run`: the flood's (but those that name
// personas) and the audience's.
type runFlags struct {
	flood floodFlags

	personas       string // the pattern, as in crowd flood (an integer: the count, a deprecated form)
	count          int
	sutHost        string
	personaPattern string // deprecated: --personas
	clientAPI      string
	tokens         []string
	tokensFile     string
	follows        int
	followers      int
	posts          int
	postEvery      time.Duration
	probeHz        float64
	setupTimeout   time.Duration
	drainTimeout   time.Duration
}

// floodPersonaFlags are the flood's flags that crowd run replaces with its
// own way of naming the personas.
func floodPersonaFlags() []string { return []string{"persona", "personas", "count", "personas-file"} }

func newRunCmd(g *globalOptions) *cobra.Command { return (&runFlags{}).command(g) }

// command is `crowd run` with its flags in f.
func (f *runFlags) command(g *globalOptions) *cobra.Command {
	f.flood.scn.fresh = func() *cobra.Command { return newRunCmd(g) }
	cmd := &cobra.Command{
		Use:   "run",
		Short: "A whole load run: set up an audience on the SUT, flood it, watch it from the personas' seats, keep the record",
		Long: `A whole load run against a server under test (SUT) that speaks the Mastodon client API
(Mastodon, GoToSocial, Akkoma …), driving its personas with bearer tokens: --personas PATTERN
--count N, as for crowd flood (default load0 … load2 on --sut-host):

 1. set-up: each persona follows its own share of the crowd's actors (--follows, disjoint shares
    where the crowd is big enough, so a note reaches some homes and not others), posts --posts
    times (the posts the crowd will Like), and --followers crowd actors follow each persona;
    then it waits for the Accepts (bounded by --setup-timeout);
 2. the flood, exactly as 'crowd flood' runs it, with the personas as targets; meanwhile each
    persona's home timeline is read --probe-hz times a second, and each persona posts every
    --post-every (the SUT delivers those posts to the crowd actors that follow it);
 3. the drain: after the flood, how long until the last note the SUT accepted is visible in its
    follower's home (bounded by --drain-timeout); then a sweep pages down the homes for notes
    still unseen, which a late SUT files below the newest page: found there, they count as
    buried, not as never seen.

Measured: the flood's own figures; the home timeline's latency (p50/p95/p99) and errors; the
visibility latency of every Create sent to a persona that follows its sender, from its send to
its note's first appearance in that persona's home (matched by URI), and the notes never seen;
the drain; each post's delivery to the crowd's inboxes (latency from the status's created_at,
and how many of the expected inboxes it reached).

Tokens: --token load0=TOKEN (repeatable), --tokens-file (lines name=TOKEN), or the environment
(CROWD_TOKEN_LOAD0=TOKEN). The record is the flood's JSON record with a "run" section, in
--out, with a per-note log beside it (.notes.jsonl) and a row in crowd-run.md.
Gates: --expect takes the flood's gates and the run's own, judged after the drain:
visibility.p95<5s, visibility.never_seen==0 (or <1% of the accepted notes), delivery.p99<10s,
delivery.unreached<1% (of the deliveries expected), home.p95<1s.
Exit status: 0 when every --expect holds, 1 when one is missed or the run failed (a SUT
without the client API, a refused token, a persona that does not exist), 2 for a usage error,
130 when interrupted. Every flag can also be set as CROWD_<FLAG>.`,
		Example: `  crowd run --count 3 --sut-host sut.test --tokens-file tokens.txt --rate 10 --seconds 20
  crowd run --count 3 --tokens-file tokens.txt --expect 'visibility.p95<5s' --expect 'visibility.never_seen==0'
  crowd run --rate=300 --seconds=60 --personas 'load%d@gts.test' --count=20 --follows=50`,
		Args: noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, g, f)
		},
	}
	// The flood's flags, less those that name the personas: they are
	// registered on a scratch command and moved over.
	scratch := &cobra.Command{}
	f.flood.register(scratch)
	skip := floodPersonaFlags()
	scratch.Flags().VisitAll(func(fl *pflag.Flag) {
		if !slices.Contains(skip, fl.Name) {
			cmd.Flags().AddFlag(fl)
		}
	})
	fl := cmd.Flags()
	def := loadrun.DefaultAudience()
	fl.StringVar(&f.personas, "personas", "", "persona pattern with one %d, as in crowd flood, e.g. 'load%d@sut.test', numbered 0 … --count-1 (default load%d@<sut-host>; without @host, on --sut-host)")
	fl.IntVar(&f.count, "count", def.Count, "how many personas --personas names")
	fl.StringVar(&f.sutHost, "sut-host", def.SUTHost, "the SUT's host name: the personas are NAME@sut-host")
	fl.StringVar(&f.personaPattern, "persona-pattern", "", "persona names with one %d")
	fl.MarkDeprecated("persona-pattern", "use --personas PATTERN, as in crowd flood")
	fl.StringVar(&f.clientAPI, "client-api", "", "base URL of the SUT's Mastodon client API (default https://<the personas' host>)")
	fl.StringArrayVar(&f.tokens, "token", nil, "a persona's bearer token, NAME=TOKEN (repeatable)")
	fl.StringVar(&f.tokensFile, "tokens-file", "", "file of tokens, one NAME=TOKEN a line")
	fl.IntVar(&f.follows, "follows", def.Follows, "crowd actors each persona follows (its share of the crowd)")
	fl.IntVar(&f.followers, "followers", def.Followers, "crowd actors that follow each persona (they receive its posts)")
	fl.IntVar(&f.posts, "posts", def.Posts, "posts each persona makes before the flood (the crowd likes them)")
	fl.DurationVar(&f.postEvery, "post-every", def.PostEvery, "each persona posts this often during the flood (0: never), to measure deliveries")
	fl.Float64Var(&f.probeHz, "probe-hz", def.ProbeHz, "home timeline reads per second per persona")
	fl.DurationVar(&f.setupTimeout, "setup-timeout", def.SetupTimeout, "bound on the set-up's wait for Accepts")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", def.DrainTimeout, "bound on the wait, after the flood, for the last accepted note to be visible")
	return cmd
}

// audience reads the run's own flags into the audience of a load run;
// loadrun's Validate checks them.
func (f *runFlags) audience(cmd *cobra.Command) (*loadrun.AudienceConfig, error) {
	pattern, count, err := f.personaSpec(cmd)
	if err != nil {
		return nil, err
	}
	return &loadrun.AudienceConfig{Pattern: pattern, Count: count, SUTHost: f.sutHost, ClientAPI: f.clientAPI,
		Tokens: f.tokens, TokensFile: f.tokensFile, Env: os.LookupEnv, Follows: f.follows, Followers: f.followers,
		Posts: f.posts, PostEvery: f.postEvery, ProbeHz: f.probeHz, SetupTimeout: f.setupTimeout,
		DrainTimeout: f.drainTimeout}, nil
}

// personaSpec reads --personas and --count as crowd flood does, and two
// deprecated forms: --personas N, read as the count with a warning, and
// --persona-pattern.
func (f *runFlags) personaSpec(cmd *cobra.Command) (pattern string, count int, err error) {
	pattern, count = strings.TrimSpace(f.personas), f.count
	if n, convErr := strconv.Atoi(pattern); convErr == nil {
		if cmd.Flags().Changed("count") {
			return "", 0, usage(fmt.Errorf("--personas %s with --count %d: --personas takes the pattern (e.g. 'load%%d@sut.test'), --count the number", pattern, count))
		}
		warn(cmd, fmt.Sprintf("--personas %d read as --count %d; --personas is the persona pattern, as in crowd flood (write --count %d)", n, n, n))
		pattern, count = "", n
	}
	if f.personaPattern != "" {
		if pattern != "" {
			return "", 0, usage(errors.New("--persona-pattern and --personas both give the pattern: keep --personas"))
		}
		pattern = f.personaPattern
	}
	return pattern, count, nil
}

func runRun(cmd *cobra.Command, g *globalOptions, f *runFlags) error {
	// The scenario first, so the flags it sets are read with the rest
	// (runLoad applies it again: a no-op once its flags are set).
	if _, help, err := f.flood.scn.apply(cmd); help || err != nil {
		return err
	}
	a, err := f.audience(cmd)
	if err != nil {
		return err
	}
	return runLoad(cmd, g, &f.flood, a)
}
