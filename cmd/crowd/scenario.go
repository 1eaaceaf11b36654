package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/loadrun"
)

// scenarioFlags are the flags of crowd flood and crowd run that name a
// scenario and what it adds beyond the other flags.
type scenarioFlags struct {
	// fresh makes the command anew, its flags at their defaults: a value
	// the command line overrides is still checked there (apply).
	fresh       func() *cobra.Command
	scenario    string
	tamper      string
	tamperShare float64
	originZipf  float64
	targetPosts int
	settle      time.Duration
}

func (s *scenarioFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&s.scenario, "scenario", "", "a preset scenario by name, or a scenario file: mix, senders, timing and forgeries as data ('--scenario help' lists them); flags given on the command line win")
	fl.StringVar(&s.tamper, "tamper", "", "forged requests to send among the others: all, or some of body, digest-unsigned, wrong-key, date, created, target, replay, unknown-key (each counted apart; a 2xx to one is a security finding)")
	fl.Float64Var(&s.tamperShare, "tamper-share", 0.5, "with --tamper: the share of sends forged, above 0 and at most 1")
	fl.Float64Var(&s.originZipf, "origin-zipf", 0, "draw the senders' origins from a Zipf distribution with this exponent (> 1): a few busy servers and a long tail; 0 = uniform")
	fl.DurationVar(&s.settle, "forgery-settle", 5*time.Second, "with --tamper and a client-API token (--post-token, or crowd run's audience): how long the SUT has after the flood to process the forgeries it answered 2xx before their effect is looked for")
	fl.IntVar(&s.targetPosts, "target-posts", 0, "Likes (and Announces) go to each persona's N newest posts only (0: any of its posts)")
}

// apply reads --scenario and sets each flag of cmd it names that neither
// the command line nor the environment set; every value it holds is read
// as its flag reads it either way (a gate of --expect or --stop-when
// too), so that a file is refused as soon as a value is wrong, not
// the day it runs without the override. Checks made later, across flags
// (the flood's config), see only the values that won. help is true for
// '--scenario help', whose list it prints to cmd's output. It returns the
// scenario's name ("" with none).
func (s *scenarioFlags) apply(cmd *cobra.Command) (name string, help bool, err error) {
	if s.scenario == "" {
		return "", false, nil
	}
	cat, err := loadrun.Scenarios()
	if err != nil {
		return "", false, err
	}
	if s.scenario == "help" {
		fmt.Fprint(cmd.OutOrStdout(), cat.Help())
		return "", true, nil
	}
	sc, err := cat.Load(s.scenario)
	if err != nil {
		return "", false, usage(fmt.Errorf("--scenario: %w", err))
	}
	set, seen := map[string]bool{}, map[string]bool{}
	var probe *cobra.Command               // made once a value is overridden
	replacedGates := map[string][]string{} // a list flag → the scenario's values it dropped
	for _, st := range sc.Settings {
		where := fmt.Sprintf("--scenario %s (%s:%d)", sc.Name, sc.Source, st.Line)
		f := cmd.Flags().Lookup(st.Key)
		if f == nil {
			return "", false, usage(fmt.Errorf("%s: %q is not a flag of crowd %s", where, st.Key, cmd.Name()))
		}
		if why := notAScenarios(st.Key); why != "" {
			return "", false, usage(fmt.Errorf("%s: --%s %s", where, st.Key, why))
		}
		if _, list := f.Value.(pflag.SliceValue); seen[st.Key] && !list {
			return "", false, usage(fmt.Errorf("%s: --%s is set twice", where, st.Key))
		}
		seen[st.Key] = true
		if f.Changed && !set[st.Key] {
			// The command line (or CROWD_<FLAG>) wins; the value is
			// checked on a command of its own.
			if probe == nil && s.fresh != nil {
				probe = s.fresh()
			}
			if err := probeValue(probe, st.Key, st.Value); err != nil {
				return "", false, usage(fmt.Errorf("%s: %v (the command line's --%s overrides it, but the file is wrong)", where, err, st.Key))
			}
			if (st.Key == "expect" || st.Key == "stop-when") && !slices.Contains(gatesGiven(f), canonicalGate(st.Value)) {
				replacedGates[st.Key] = append(replacedGates[st.Key], st.Value)
			}
			continue
		}
		if err := cmd.Flags().Set(st.Key, st.Value); err != nil {
			// FlagSet.Set words the value's error as pflag does, and
			// valueError would say it twice: the value's own error, read
			// on a command of its own, is said as the command line's.
			if probe == nil && s.fresh != nil {
				probe = s.fresh()
			}
			if perr := probeValue(probe, st.Key, st.Value); perr != nil {
				return "", false, usage(fmt.Errorf("%s: %v", where, perr))
			}
			return "", false, usage(fmt.Errorf("%s: %v", where, valueError(f, st.Value, err)))
		}
		set[st.Key] = true
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[fromScenario] = []string{sc.Name}
	}
	for _, key := range []string{"expect", "stop-when"} {
		dropped := replacedGates[key]
		if len(dropped) == 0 {
			continue
		}
		// A list given replaces the scenario's, as any flag given does; a
		// gate the scenario holds the run to (the forgery preset's
		// forged_effective=0) gone without a word would pass a run it fails.
		by := "--" + key
		if !onCommandLine(cmd, key) {
			by = envName(key)
		}
		warn(cmd, fmt.Sprintf("%s replaces the scenario %s's gates %s: give them too to keep them",
			by, sc.Name, strings.Join(dropped, ", ")))
	}
	return sc.Name, false, nil
}

// gatesGiven are the gates a gate list flag holds now (the command line's
// or the environment's), each as canonicalGate writes it.
func gatesGiven(f *pflag.Flag) []string {
	sv, ok := f.Value.(pflag.SliceValue)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range sv.GetSlice() {
		out = append(out, canonicalGate(v))
	}
	return out
}

// canonicalGate is expr as the crowd writes a gate, so that two spellings
// of one gate (forged_effective=0, forged_effective==0) are one; expr
// itself when it is no gate (the flag refuses it elsewhere).
func canonicalGate(expr string) string {
	g, err := record.ParseGate(expr)
	if err != nil {
		return strings.TrimSpace(expr)
	}
	return g.Canonical()
}

// notAScenarios says why a scenario may not set flag key ("" when it may).
// A scenario is data people share, so what reaches beyond the flood's own
// shape is the user's own act: where the run writes (a shared file's
// results = ~/.bashrc), where it listens, which crowd and state it uses,
// whom it floods (and which local file names them), the client-API tokens
// and the host they go to, and reaching a public address (a flood is a
// denial of service).
func notAScenarios(key string) string {
	switch key {
	case "scenario":
		return "is the command line's: a scenario does not name another"
	case "help":
		return "is no setting"
	case "allow-public-target":
		return "is given on the command line only, never by a scenario"
	case "out", "results":
		return "is where the run writes: the command line's, never a scenario's"
	case "https", "http", "dns", "metrics-addr":
		return "is where the run listens: the command line's, never a scenario's"
	case "state", "admin", "admin-token", "crowd-https", "standalone":
		return "names the crowd the run uses: the command line's, never a scenario's"
	case "persona", "personas", "personas-file", "count":
		return "names the run's targets: the command line's, never a scenario's"
	case "token", "tokens-file", "post-token", "post-api", "client-api":
		return "is the user's credentials or where they are sent: the command line's, never a scenario's"
	}
	return ""
}

// probeValue reads value as probe's flag key reads it. Without
// probe or such a flag (a flag of the whole program, which probe, not
// under the root, lacks) there is nothing to read it with: nil.
func probeValue(probe *cobra.Command, key, value string) error {
	if probe == nil {
		return nil
	}
	f := probe.Flags().Lookup(key)
	if f == nil {
		return nil
	}
	if err := f.Value.Set(value); err != nil {
		return valueError(f, value, err)
	}
	return nil
}

// config is what the scenario flags add to a load run.
func (s *scenarioFlags) config(name string) *loadrun.ScenarioConfig {
	c := &loadrun.ScenarioConfig{Name: name, Tamper: s.tamper, TamperShare: s.tamperShare, OriginZipf: s.originZipf,
		TargetPosts: s.targetPosts, ForgerySettle: s.settle}
	if *c == (loadrun.ScenarioConfig{TamperShare: c.TamperShare, ForgerySettle: c.ForgerySettle}) {
		return nil
	}
	return c
}
