package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/loadrun"
)

// TestUsageMistakesExit2 lists the mistakes people make on the command
// line: each exits 2, before anything runs, with a message naming the
// flag or argument at fault.
func TestUsageMistakesExit2(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		say  string // the message names this
	}{
		{[]string{"serve", "extra"}, `"extra"`},                            // serve takes no argument
		{[]string{"flood", "acct:x@y"}, "--personas"},                      // a persona as an argument: the flag it meant
		{[]string{"run", "extra"}, `"extra"`},                              // run takes no argument
		{[]string{"ca", "issue"}, "NAME"},                                  // ca issue needs a name
		{[]string{"ca", "isue", "sut.test"}, "did you mean issue"},         // a subcommand typo
		{[]string{"version", "extra"}, `"extra"`},                          // version takes no argument
		{[]string{"verison"}, "did you mean version"},                      // a command typo
		{[]string{"flod", "--rate=20"}, "did you mean flood"},              // a command typo with flags: the word is named, not a flag
		{[]string{"keys", "rotat", "--state", "x"}, "did you mean rotate"}, // a subcommand typo with flags
		{[]string{"scenario", "--help"}, `unknown command "scenario"`},     // --help after no command: refused, not the top-level help
		{[]string{"ca", "isue", "-h"}, "did you mean issue"},               // nor of no subcommand
		{[]string{"tail", "alice"}, `"alice"`},                             // tail filters with flags
		{[]string{"send", "alice@flood1.test"}, `"alice@flood1.test"`},     // send names with flags
		{[]string{"lookup"}, "one actor"},                                  // lookup needs the actor
		{[]string{"lookup", "a@b", "c@d"}, "got 2 arguments"},              // and only one
		{[]string{"merge"}, "RECORD.json"},                                 // merge needs records
		{[]string{"report", "a.json", "b.json"}, "got 2 arguments"},        // report takes one
		{[]string{"report", "a.json", "--run", "-5"}, "--run -5"},          // a run's number is 0 or more
		{[]string{"compare", "a.json"}, "BASE.json HEAD.json"},             // compare takes two
		{[]string{"flood", "--rate", "abc"}, "--rate"},                     // a bad value
		{[]string{"flood", "--rat", "100"}, "--rat"},                       // a flag typo
		{[]string{"serve", "--origins", "many"}, "--origins"},              // not a number
		{[]string{"send", "--from"}, "--from"},                             // a flag without its value
		{[]string{"tail", "--direction", "sideways"}, "--direction"},       // a value out of its set
		{[]string{"--log-level", "loud", "version"}, "--log-level"},        // a global flag's value, checked where it is used
		{[]string{"ca", "issue", "--out"}, "--out"},                        // a subcommand's flag without its value
		{[]string{"report", "--format", "pdf", "x.json"}, "--format"},
		{[]string{"run", "--count", "0"}, "--count"},                       // no personas
		{[]string{"run", "--personas", "2", "--count", "3"}, "--personas"}, // the deprecated count and the count
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != 2 || !strings.Contains(stderr, c.say) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %s", code, stderr, c.say)
			}
		})
	}
}

// TestCompletionWithFlags: shell completion asks through a hidden command
// cobra adds as it runs; a line with flags on it is completed, not refused
// as an unknown command.
func TestCompletionWithFlags(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "__complete", "flood", "--ra")
	if code != 0 || !strings.Contains(stdout, "--rate") {
		t.Errorf("crowd __complete flood --ra: exit %d, stdout %q, stderr %q; want --rate offered", code, stdout, stderr)
	}
}

// TestHelpOfACommandExits0: --help (or -h) of a command, a group, or the
// commands cobra adds itself (help, completion) prints help and exits 0;
// only help after a word that is no command is refused
// (TestUsageMistakesExit2).
func TestHelpOfACommandExits0(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"},                              // the whole program
		{"flood", "--help"},                     // a command
		{"ca", "-h"},                            // a group
		{"ca", "issue", "--help"},               // a group's command
		{"help", "flood", "-h"},                 // cobra's help command
		{"completion", "bash", "-h"},            // cobra's completion command
		{"--log-level", "error", "flood", "-h"}, // after a flag's value
	} {
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Errorf("%q: exit %d, want 0: %s", args, code, stderr)
		}
	}
}

// TestEveryCommandRefusesUnknownFlagsAndArguments walks the command tree,
// so that a new command is covered: an unknown flag exits 2 naming it; a
// command that takes no arguments refuses one (exit 2, naming it); a
// command that groups others refuses an unknown subcommand.
func TestEveryCommandRefusesUnknownFlagsAndArguments(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Name() == "help" || c.Name() == "completion" || c.Hidden {
			return
		}
		t.Run(strings.Join(append([]string{"crowd"}, path...), " "), func(t *testing.T) {
			if code, _, stderr := runCLI(t, append(path, "--no-such-flag")...); code != 2 || !strings.Contains(stderr, "--no-such-flag") {
				t.Errorf("an unknown flag: exit %d, stderr %q; want exit 2 naming it", code, stderr)
			}
			_, takes, _ := strings.Cut(c.Use, " ")
			if takes != "" {
				return // its arguments are checked in TestUsageMistakesExit2
			}
			if code, _, stderr := runCLI(t, append(path, "stray")...); code != 2 || !strings.Contains(stderr, "stray") {
				t.Errorf("a stray argument: exit %d, stderr %q; want exit 2 naming it", code, stderr)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(newRoot(), nil)
}

// TestOneUsageErrorType: a usage mistake found in any room (the flood's
// parsers, the record's, the CLI's own checks) is the one usage-error
// type, so the CLI exits 2 on it however deeply it is wrapped.
func TestOneUsageErrorType(t *testing.T) {
	t.Parallel()
	_, signingErr := traffic.ParseSigning("batch")
	_, gateErr := record.ParseGates([]string{"p95<<1s"})
	for _, c := range []struct {
		name  string
		err   error
		usage bool
	}{
		// A flood parser's refusal (--signing).
		{"flood parser", signingErr, true},
		// A record parser's refusal (--expect).
		{"record parser", gateErr, true},
		// A load run wraps a parser's refusal in its own words.
		{"wrapped", fmt.Errorf("the run: %w", signingErr), true},
		// The CLI's own check.
		{"cli", usage(errors.New("--out is empty")), true},
		// A failure of the run is not the user's mistake.
		{"failure", errors.New("connection refused"), false},
	} {
		if got := isUsageError(c.err); got != c.usage {
			t.Errorf("%s: isUsageError(%v) = %v, want %v", c.name, c.err, got, c.usage)
		}
	}
}

// TestFlagValueError: a value that is no number, given to a numeric flag,
// or no duration, given to a duration flag, is said as what the flag
// wants, with its default as the example (a boolean's, true or false); a
// value the crowd's own parser refuses is said in its words, the value and
// the flag named once; an error that is no value's is left as pflag words
// it.
func TestFlagValueError(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		// A duration where a number of seconds goes: the newcomer's slip.
		{"a float flag", []string{"--seconds=5s"}, `invalid argument "5s" for --seconds: want a number, as in --seconds=60`},
		// A word where a count goes.
		{"an int flag", []string{"--origins=many"}, `invalid argument "many" for --origins: want a whole number, as in --origins=20`},
		// Too large for the flag's type.
		{"out of range", []string{"--origins=99999999999999999999"}, `invalid argument "99999999999999999999" for --origins: want a whole number in range, as in --origins=20`},
		// A default of 0 is no example.
		{"no example", []string{"--max-sends=x"}, `invalid argument "x" for --max-sends: want a whole number`},
		// A word where a duration goes.
		{"a duration flag", []string{"--grace=soon"}, `invalid argument "soon" for --grace: want a duration, as in --grace=5s`},
		// A duration flag whose default is none.
		{"no duration example", []string{"--settle=later"}, `invalid argument "later" for --settle: want a duration`},
		// The crowd's parser of rates, given one that is no number: the
		// value once, not thrice.
		{"a rate", []string{"--rate=abc"}, `invalid argument "abc" for --rate: want a number > 0, as in --rate=300, or a ladder, as in --rate=100,300,600`},
		// One rung of a ladder: the rung named.
		{"a ladder's rung", []string{"--rate=100,x,600"}, `invalid argument "100,x,600" for --rate: rung "x": want a number > 0, as in --rate=100,300,600`},
		// A parser that names the flag itself: the flag once.
		{"a word flag", []string{"--client=curl"}, `invalid argument "curl" for --client: want nethttp or fast`},
		// A parser that names the flag and the value: each once.
		{"a flag and value named", []string{"--signer-nice=30"}, `invalid argument "30" for --signer-nice: want auto, or 0 (unchanged) to 19`},
		// A boolean flag given a word of neither kind.
		{"a bool flag", []string{"--fetchback=maybe"}, `invalid argument "maybe" for --fetchback: want true or false`},
		// Not a value at all.
		{"an unknown flag", []string{"--nope"}, "unknown flag: --nope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("crowd", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.Float64("seconds", 60, "")
			fs.Int("origins", 20, "")
			fs.Int64("max-sends", 0, "")
			fs.Duration("grace", 5*time.Second, "")
			fs.Duration("settle", 0, "")
			fs.Bool("fetchback", true, "")
			var cfg loadrun.Config
			fs.Var(loadrun.RateValue(&cfg), "rate", "")
			fs.Var(loadrun.ClientValue(&cfg.Client), "client", "")
			fs.Var(loadrun.SignerNiceValue(&cfg.SignerNice), "signer-nice", "")
			err := fs.Parse(c.args)
			if err == nil {
				t.Fatal("parsed")
			}
			if got := flagValueError(err).Error(); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}
