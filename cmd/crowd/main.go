// Command crowd impersonates a crowd of fediverse servers: it serves a
// world of fake origins and floods an ActivityPub server under test with
// signed activities, measuring honestly what came back.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// userAgent is what the crowd's requests say they are: a real User-Agent
// (GoToSocial answers 418 to an empty one) that names the crowd.
func userAgent() string {
	return "crowd/" + version + " (+https://github.com/crowdfed/crowd)"
}

// exitCode carries a command's chosen exit status (gates: 1 for a missed
// expectation, 2 for a usage error) through cobra.
type exitCode struct {
	code int
	err  error
}

func (e exitCode) Error() string { return e.err.Error() }
func (e exitCode) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal asks the command to stop well (a partial record
	// written, the graph flushed); a second one is the user's "now": the
	// signals go back to their default, which ends the process at once.
	context.AfterFunc(ctx, func() {
		stop()
		fmt.Fprintln(os.Stderr, "crowd: stopping; interrupt again to quit at once")
	})
	os.Exit(execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// execute runs the CLI with args, reading stdin and printing to stdout and
// stderr (every command reads and writes through the streams it is handed,
// so tests can run the CLI side by side), and returns the process exit status: 0, 2 for a usage
// error, a command's own (exitCode), 130 for an error that is ctx's end
// (SIGINT, SIGTERM), 1 for any other.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	presetLogFormat(root, args)
	err := helpOfNoCommand(args)
	if err == nil {
		err = unknownSubcommand(args)
	}
	if err != nil {
		say(root, zapcore.ErrorLevel, "crowd", err.Error())
		return 2
	}
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var ec exitCode
	if errors.As(err, &ec) {
		if ec.err != nil {
			say(cmd, zapcore.ErrorLevel, "crowd", ec.err.Error())
		}
		return ec.code
	}
	say(cmd, zapcore.ErrorLevel, "crowd", err.Error())
	if isUsageError(err) {
		return 2
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The interruption itself, wherever it stopped the command (a first
		// start's key making): the status a load run's interruption has.
		return exitInterrupted
	}
	return 1
}

// newVersionCmd is `crowd version`: `crowd --version`'s line, then the
// signing backend (--crypto) that signs with this build.
func newVersionCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the crowd's version",
		Args:  noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := g.signingLine()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), "crowd version "+version+"\n"+line)
			return err
		},
	}
}

func newRoot() *cobra.Command {
	opts := &globalOptions{}
	root := &cobra.Command{
		Use:           "crowd",
		Short:         "A crowd of fake fediverse servers that floods and debugs an ActivityPub server",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          subcommandArgs,
		RunE:          showHelp,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			for _, msg := range misspeltEnv(cmd.Root(), os.Environ()) {
				warn(cmd, msg)
			}
			return opts.check()
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usage(fmt.Errorf("%w (see %s --help)", flagValueError(err), cmd.CommandPath()))
	})
	opts.register(root)
	root.AddCommand(newServeCmd(opts), newCACmd())
	root.AddCommand(newFloodCmd(opts))
	root.AddCommand(newRunCmd(opts))
	root.AddCommand(newMergeCmd(), newReportCmd(), newCompareCmd(), newResultsCmd())
	root.AddCommand(newTailCmd(), newSendCmd(), newLookupCmd())
	root.AddCommand(newVersionCmd(opts))
	root.AddCommand(newFollowsCmd())
	root.AddCommand(newKeysCmd())
	root.AddCommand(newWeatherCmd())
	return root
}

// exitInterrupted is the status of a command stopped by SIGINT or SIGTERM
// (128 + SIGINT, as shells report it): a run after its partial record is
// written (it neither met nor missed its gates), a serve or a standalone
// flood stopped while it made the world's keys.
const exitInterrupted = 130
