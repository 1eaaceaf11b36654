// Command crowd impersonates a crowd of fediverse servers: it serves a
// world of fake origins and floods an ActivityPub server under test with
// signed activities, measuring honestly what came back.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
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
	os.Exit(execute(ctx, os.Args[1:]))
}

// execute runs the CLI with args and returns the process exit status.
func execute(ctx context.Context, args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ec exitCode
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintln(os.Stderr, "crowd:", ec.err)
		}
		return ec.code
	}
	fmt.Fprintln(os.Stderr, "crowd:", err)
	if isUsageError(err) {
		return 2
	}
	return 1
}

func newRoot() *cobra.Command {
	opts := &globalOptions{}
	root := &cobra.Command{
		Use:           "crowd",
		Short:         "A crowd of fake fediverse servers that floods and debugs an ActivityPub server",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return bindEnv(cmd)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see crowd %s --help)", err, cmd.Name())}
	})
	opts.register(root)
	root.AddCommand(newServeCmd(opts), newCACmd())
	root.AddCommand(newFloodCmd(opts))
	root.AddCommand(newRunCmd(opts))
	root.AddCommand(newMergeCmd(), newReportCmd(), newCompareCmd())
	root.AddCommand(newTailCmd(), newSendCmd(), newLookupCmd())
	root.AddCommand(newFollowsCmd())
	return root
}

// usageError marks a mistake in how the command was called (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func isUsageError(err error) bool {
	var u usageError
	return errors.As(err, &u)
}
