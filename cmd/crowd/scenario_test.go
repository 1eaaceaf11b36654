package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/loadrun"
)

// TestScenarioApply: a scenario sets the flags the command line left,
// the command line wins, list flags take every line, and a file's
// mistakes are usage errors naming file and line.
func TestScenarioApply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.scenario", "name = mine\nrate = 7\nmix = like=1\nexpect = p95<1s\nexpect = errors<1%\ntamper = date\n")
	cmd := newFloodCmd(&globalOptions{})
	f := &floodFlags{}
	cmd.ResetFlags()
	f.register(cmd)
	if err := cmd.ParseFlags([]string{"--scenario", good, "--mix", "create=1"}); err != nil {
		t.Fatal(err)
	}
	name, help, err := f.scn.apply(cmd)
	if err != nil || help || name != "mine" {
		t.Fatalf("apply: %q %v %v", name, help, err)
	}
	rate, mix := cmd.Flags().Lookup("rate").Value.String(), f.cfg.Mix.String()
	expect := gatesValue{&f.cfg.Expect}.GetSlice()
	if rate != "7" || mix != "create=1" || strings.Join(expect, ";") != "p95<1s;errors<1%" || f.scn.tamper != "date" {
		t.Fatalf("rate %s (scenario's), mix %s (the command line's), expect %v, tamper %q", rate, mix, expect, f.scn.tamper)
	}
	if c := f.scn.config(name); c == nil || c.Name != "mine" || c.Tamper != "date" {
		t.Fatalf("config %+v", c)
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown.scenario", "name = x\nbogus = 1\n", "unknown.scenario:2"},                                                     // not a flag
		{"twice.scenario", "name = x\nrate = 1\nrate = 2\n", "set twice"},                                                       // a scalar set twice
		{"bad.scenario", "name = x\nseconds = soon\n", `bad.scenario:2): invalid argument "soon" for --seconds: want a number`}, // a value the flag refuses, said as the command line's
		{"gate.scenario", "name = x\nexpect = p95<\n", `gate.scenario:2): invalid argument "p95<" for --expect: want metric`},   // a gate that is none, said once
		{"syntax.scenario", "name = x\nrate 1\n", "syntax.scenario:2"},                                                          // not key = value
		{"no name.scenario", "rate = 1\n", "no name = line"},                                                                    // neither a name nor a file name that is one
		{"unnamed.scenario", "rate = 1\nbogus = 1\n", "unnamed.scenario:2"},                                                     // named after its file: its own mistake is the one said
		{"empty.scenario", "# nothing yet\n", "empty.scenario: no settings"},                                                    // an empty file is not the defaults
		{"help.scenario", "name = x\nhelp = true\n", `--help is no setting`},                                                    // help is no setting
		{"nested.scenario", "name = x\nscenario = boost-storm\n", "a scenario does not name another"},                           // one scenario a run
		{"public.scenario", "name = x\nallow-public-target = true\n", "command line only"},                                      // the public-target switch is the user's
		// Where the run writes, listens, and which crowd it uses are the user's, not shared data's.
		{"writes.scenario", "name = x\nresults = victim.txt\n", "--results is where the run writes"},
		{"out.scenario", "name = x\nout = elsewhere\n", "--out is where the run writes"},
		{"listens.scenario", "name = x\nmetrics-addr = 0.0.0.0:9100\n", "--metrics-addr is where the run listens"},
		{"state.scenario", "name = x\nstate = /tmp/other\n", "--state names the crowd the run uses"},
		{"tokens.scenario", "name = x\npost-api = http://10.0.0.9\n", "--post-api is the user's credentials or where they are sent"},
		{"targets.scenario", "name = x\npersonas-file = /etc/passwd\n", "--personas-file names the run's targets"},
		{"standalone.scenario", "name = x\nstandalone = true\n", "--standalone names the crowd the run uses"},
	} {
		code, _, errOut := runCLI(t, "flood", "--scenario", write(tc.name, tc.text), "--standalone")
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "scenario: scenario") || strings.Count(errOut, "invalid argument") > 1 {
			t.Errorf("%s: exit %d, want 2 naming %q (and errors said once):\n%s", tc.name, code, tc.want, errOut)
		}
	}
	// A value the command line overrides is still checked, and so is a
	// scalar set twice: the file is wrong whichever wins.
	for _, tc := range []struct {
		name, text, want string
	}{
		{"overridden.scenario", "name = x\nrate = fast\n", `overridden.scenario:2): invalid argument "fast" for --rate: want a number > 0`},    // a rate that is none
		{"twice-overridden.scenario", "name = x\nrate = 1\nrate = 2\n", "set twice"},                                                           // set twice
		{"gate-overridden.scenario", "name = x\nexpect = p95<<1s\n", "gate-overridden.scenario:2): invalid argument \"p95<<1s\" for --expect"}, // a gate that is none
	} {
		code, _, errOut := runCLI(t, "flood", "--scenario", write(tc.name, tc.text), "--standalone", "--rate", "5", "--expect", "p95<1m")
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s with --rate 5: exit %d, want 2 naming %q:\n%s", tc.name, code, tc.want, errOut)
		}
	}
	for _, c := range []string{"flood", "run"} {
		code, out, errOut := runCLI(t, c, "--scenario", "help")
		if code != 0 || !strings.Contains(out, "boost-storm") || !strings.Contains(out, "incident:") {
			t.Errorf("crowd %s --scenario help: exit %d\n%s\n%s", c, code, out, errOut)
		}
		if code, _, errOut := runCLI(t, c, "--scenario", "nope"); code != 2 || !strings.Contains(errOut, "neither a preset") {
			t.Errorf("crowd %s --scenario nope: exit %d\n%s", c, code, errOut)
		}
	}
	// A flag that does not exist on crowd run (its personas are its own).
	run := write("run.scenario", "name = r\npersonas-file = x\n")
	if code, _, errOut := runCLI(t, "run", "--scenario", run); code != 2 || !strings.Contains(errOut, "not a flag of crowd run") {
		t.Errorf("crowd run with a flood-only flag: exit %d\n%s", code, errOut)
	}
}

// TestScenarioGatesReplacedAreSaid: --expect replaces a scenario's gates,
// as any flag given replaces its value, and says which it replaced: the
// forgery preset's forged_effective=0 gone without a word would pass a run
// it fails. Gates of the scenario alone are no news.
func TestScenarioGatesReplacedAreSaid(t *testing.T) {
	t.Parallel()
	// --step without a ladder stops the run after the scenario is applied, before any flood.
	_, _, errOut := runCLI(t, "flood", "--standalone", "--scenario", "forgery", "--expect", "errors<1%", "--step", "1s")
	if !strings.Contains(errOut, "crowd flood: --expect replaces the scenario forgery's gates forged_effective=0: give them too to keep them") {
		t.Errorf("the replaced gate is not said:\n%s", errOut)
	}
	_, _, errOut = runCLI(t, "flood", "--standalone", "--scenario", "forgery", "--step", "1s")
	if strings.Contains(errOut, "replaces") {
		t.Errorf("the scenario's own gates reported replaced:\n%s", errOut)
	}
	// Its gate given again (in another spelling) beside another: nothing was dropped, nothing to say.
	_, _, errOut = runCLI(t, "flood", "--standalone", "--scenario", "forgery", "--expect", "forged_effective == 0", "--expect", "errors<1%", "--step", "1s")
	if strings.Contains(errOut, "replaces") {
		t.Errorf("a gate kept on the command line reported replaced:\n%s", errOut)
	}
}

// TestPresetsApply applies every preset to crowd flood and crowd run: each
// key is a flag of both and each value one the flag takes, and every
// preset validates whole (the vocabulary's verbs included).
func TestPresetsApply(t *testing.T) {
	t.Parallel()
	cat, err := loadrun.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range cat.Names() {
		for _, mk := range []func() (*cobra.Command, *floodFlags){
			func() (*cobra.Command, *floodFlags) {
				f := &floodFlags{}
				c := &cobra.Command{Use: "flood"}
				f.register(c)
				return c, f
			},
			func() (*cobra.Command, *floodFlags) {
				r := &runFlags{}
				c := r.command(&globalOptions{})
				return c, &r.flood
			},
		} {
			cmd, f := mk()
			if err := cmd.ParseFlags([]string{"--scenario", name, "--standalone", "--out", t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			got, _, err := f.scn.apply(cmd)
			if err != nil || got != name {
				t.Fatalf("%s on crowd %s: %v", name, cmd.Name(), err)
			}
			c, err := f.config(cmd)
			if err != nil {
				t.Fatal(err)
			}
			c.Scenario = f.scn.config(got)
			if errs := c.Validate(); len(errs) != 0 {
				t.Errorf("%s on crowd %s: %v", name, cmd.Name(), errs)
			}
		}
	}
}

// TestPresetsSelfFlood floods the crowd's own inboxes with two presets of
// the vocabulary's verbs (shortened by flags, which win): each sends its
// verbs, every one answered 2xx, and the record names the scenario.
func TestPresetsSelfFlood(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		types []string // the per-type rows the preset's mix makes
	}{
		// Boosts and Likes, senders drawn by origin.
		{"boost-storm", []string{"Announce", "Like"}},
		// Account deletions of leavers.
		{"delete-storm", []string{"Delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // its own state
			state, out := t.TempDir(), t.TempDir()
			code, stdout, stderr := runCLIContext(t, context.Background(),
				standalone(state, out, "--scenario", tc.name, "--seconds", "2", "--rate", "20", "--signing", "jit")...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			recs := records(t, out)
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			r := recs[0]
			o := r.Overall
			if r.Settings.Scenario != tc.name || o.Counts.Sent == 0 || o.Tally.Classes[record.Class202] != o.Counts.Sent {
				t.Fatalf("scenario %q, sent %d, tally %+v: want %s, every send answered 202", r.Settings.Scenario, o.Counts.Sent, o.Tally, tc.name)
			}
			for _, typ := range tc.types {
				if tr, ok := r.Types[typ]; !ok || tr.Counts.Sent == 0 {
					t.Errorf("no %s sent (types %v)", typ, r.TypeNames())
				}
			}
		})
	}
}
