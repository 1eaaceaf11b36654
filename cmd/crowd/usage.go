package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crowdfed/crowd/flood/record"
)

// Usage mistakes (a flag, an argument, a value) are the program's one
// usage-error type, *record.UsageError, whatever finds them: cobra's flag
// parsing (the root's FlagErrorFunc), the Args validators below, a
// command's own checks, or the flood's and the load run's parsers.
// execute maps it to exit status 2.

// flagValueError is err, from cobra's parsing of a flag's value, as
// valueError says it; any other error is err itself.
func flagValueError(err error) error {
	var invalid *pflag.InvalidValueError
	if !errors.As(err, &invalid) || invalid.GetFlag() == nil {
		return err
	}
	cause := errors.Unwrap(invalid)
	if cause == nil {
		return err
	}
	return valueError(invalid.GetFlag(), invalid.GetValue(), cause)
}

// valueError is cause, the error of f's Set(value), as a user reads it,
// whether the value came from the command line, the environment or a
// scenario file: "invalid argument VALUE for --FLAG: what it wants". pflag
// words a value that is no number as its parser's error
// ("strconv.ParseFloat: parsing \"5s\": invalid syntax"), which names
// neither what the flag wants nor an example ("--seconds=5s" is a natural
// slip), so a numeric or duration flag's says what it wants, with its
// default as the example (a boolean's, true or false). The crowd's own
// parsers name the value and the flag as they begin (they also read files
// and the admin API, where nothing else does), which is said already:
// that beginning goes.
func valueError(f *pflag.Flag, value string, cause error) error {
	said := func(what string) error {
		return fmt.Errorf("invalid argument %q for --%s: %s", value, f.Name, what)
	}
	var want string
	var num *strconv.NumError
	switch typ := f.Value.Type(); {
	case typ == "duration":
		want = "a duration"
	case !errors.As(cause, &num):
		// A parser's own words, less its repeat of the value and flag.
		what := strings.TrimPrefix(cause.Error(), strconv.Quote(value)+": ")
		what = strings.TrimPrefix(what, "--"+f.Name+" "+strconv.Quote(value)+": ")
		return said(strings.TrimPrefix(what, "--"+f.Name+": "))
	case wholeNumber(typ):
		want = "a whole number"
	case typ == "float32" || typ == "float64":
		want = "a number"
	case typ == "bool":
		return said("want true or false")
	default:
		return said(cause.Error())
	}
	if num != nil && errors.Is(num.Err, strconv.ErrRange) {
		want += " in range"
	}
	if f.DefValue == "" || f.DefValue == "0" || f.DefValue == "0s" {
		return said("want " + want)
	}
	return said(fmt.Sprintf("want %s, as in --%s=%s", want, f.Name, f.DefValue))
}

// wholeNumber reports whether typ is the Type name of one of pflag's
// integer flags (not of their slices, whose text is a list).
func wholeNumber(typ string) bool {
	switch typ {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return true
	}
	return false
}

// usage marks err as a mistake in how the command was called (exit 2).
func usage(err error) error { return record.Usage(err) }

// isUsageError reports whether err is, or wraps, a usage error.
func isUsageError(err error) bool {
	var u *record.UsageError
	return errors.As(err, &u)
}

// noArgsUsage refuses positional arguments as a usage error (exit 2).
func noArgsUsage(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usage(fmt.Errorf("%s takes no arguments, got %q (see %s --help)", cmd.CommandPath(), args, cmd.CommandPath()))
	}
	return nil
}

// noArgsHint is noArgsUsage whose message adds hint: the flag that the
// argument probably meant.
func noArgsHint(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := noArgsUsage(cmd, args); err != nil {
			return usage(fmt.Errorf("%w; %s", err, hint))
		}
		return nil
	}
}

// argsWanted is what cmd's Use says it takes ("RECORD.json...").
func argsWanted(cmd *cobra.Command) string {
	_, want, _ := strings.Cut(cmd.Use, " ")
	return want
}

// minArgsUsage wants at least n positional arguments (else exit 2).
func minArgsUsage(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usage(fmt.Errorf("%s wants %s (see %s --help)", cmd.CommandPath(), argsWanted(cmd), cmd.CommandPath()))
		}
		return nil
	}
}

// exactArgsUsage wants exactly n positional arguments (else exit 2).
func exactArgsUsage(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usage(fmt.Errorf("%s wants %s, got %d %s (see %s --help)",
				cmd.CommandPath(), argsWanted(cmd), len(args), record.Plural(len(args), "argument", "arguments"), cmd.CommandPath()))
		}
		return nil
	}
}

// subcommandArgs is the Args of a command that only groups subcommands
// (crowd, crowd ca): an argument is an unknown subcommand (exit 2, with
// cobra's suggestions); with none, the command prints its help.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	cmd.SuggestionsMinimumDistance = max(cmd.SuggestionsMinimumDistance, 2) // cobra's own default
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usage(fmt.Errorf("%s (see %s --help)", msg, cmd.CommandPath()))
}

// helpOfNoCommand is subcommandArgs's error for args that ask for help
// (--help, -h) after a word that is no command ("crowd scenario --help"),
// where cobra would print the group's help and exit 0, as though the word
// were one; nil otherwise. It reads args on a command tree of its own.
func helpOfNoCommand(args []string) error {
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--help" || a == "-h" }) {
		return nil
	}
	root := newRoot()
	// The commands cobra adds as it executes, so that they are found.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	cmd, rest, err := root.Find(args)
	if err != nil || !cmd.HasSubCommands() {
		return nil // cobra says what is wrong
	}
	cmd.InitDefaultHelpFlag() // as cobra does before it parses
	if cmd.ParseFlags(rest) != nil {
		return nil
	}
	return subcommandArgs(cmd, cmd.Flags().Args())
}

// unknownSubcommand is subcommandArgs's error for args whose first word
// after a group of commands (the root, crowd keys, …) is no command of it,
// where flags follow: cobra parses the flags first and blames the first
// one the group lacks ("crowd flod --rate=20": "unknown flag: --rate"),
// not the word. nil otherwise; cobra's own message stands.
func unknownSubcommand(args []string) error {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return nil // shell completion's hidden command, which cobra adds as it executes
	}
	root := newRoot()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	cmd, rest, err := root.Find(args)
	if err != nil || !cmd.HasSubCommands() || len(rest) < 2 || strings.HasPrefix(rest[0], "-") {
		return nil
	}
	if !slices.ContainsFunc(rest[1:], func(a string) bool { return strings.HasPrefix(a, "-") }) {
		return nil // no flag to be blamed: cobra names the word itself
	}
	return subcommandArgs(cmd, rest[:1])
}

// showHelp is the RunE of a command that only groups subcommands.
func showHelp(cmd *cobra.Command, _ []string) error { return cmd.Help() }
