package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/loadrun"
	"github.com/crowdfed/crowd/pasture"
)

// newFollowsCmd is `crowd follows`, the crowd's own follow relations.
func newFollowsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "follows",
		Short: "The crowd's own Follows: find and clear those a server never answered",
		Args:  noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usage(errors.New("crowd follows wants a subcommand: prune (see crowd follows --help)"))
		},
	}
	cmd.AddCommand(newFollowsPruneCmd())
	return cmd
}

type pruneFlags struct {
	admin     adminFlags
	state     string
	stopped   bool // the command line named --state: prune that stopped crowd's state
	olderThan time.Duration
	dryRun    bool
}

func newFollowsPruneCmd() *cobra.Command {
	f := &pruneFlags{}
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "List and forget the crowd's Follows still pending (no Accept, no Reject) after --older-than",
		Long: `A Follow the crowd sent stays pending in its follow graph until the server answers it with an
Accept or a Reject. One that was never answered keeps its pair (crowd actor, followed actor) from
being followed again by later floods. prune lists the crowd's Follows pending for longer than
--older-than, oldest first, and forgets them (--dry-run only lists them).

It asks the running crowd serve at --admin; with --state it works on the follow graph of a
crowd that is not running.`,
		Example: `  crowd follows prune --dry-run
  crowd follows prune --older-than 10m
  crowd follows prune --state crowd-state`,
		Args: noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// CROWD_STATE fills --state too (the image sets it for every
			// command), but it names the running crowd's state, whose
			// token file the admin client then reads: only the command
			// line makes prune work on a stopped crowd's.
			f.stopped = onCommandLine(cmd, "state") && strings.TrimSpace(f.state) != ""
			return runPrune(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.state, "state", "", "work on this (stopped) crowd's state directory instead of asking the running crowd at --admin (from CROWD_STATE it names the running crowd's, whose token file is then read)")
	f.admin.register(cmd) // after --state: without it, the admin token is read from the default one
	fl.DurationVar(&f.olderThan, "older-than", loadrun.DefaultPruneAge, "how long a Follow may stay pending before it is pruned")
	fl.BoolVar(&f.dryRun, "dry-run", false, "list the stale Follows, remove nothing")
	return cmd
}

func runPrune(ctx context.Context, stdout io.Writer, f *pruneFlags) error {
	if f.olderThan < 0 {
		return usage(fmt.Errorf("--older-than %v: want 0 or more", f.olderThan))
	}
	var res adminapi.PruneResult
	if f.stopped {
		var err error
		if res, err = pasture.PruneState(f.state, f.olderThan, f.dryRun); errors.Is(err, statedir.ErrNotDir) {
			return usage(err)
		} else if err != nil {
			return err
		}
	} else {
		c, err := f.admin.client()
		if err != nil {
			return err
		}
		res, err = c.Prune(ctx, adminapi.PruneRequest{OlderThan: f.olderThan.String(), DryRun: f.dryRun})
		if err != nil {
			var nc *adminapi.UnreachableError
			if errors.As(err, &nc) {
				return fmt.Errorf("%w; or pass --state DIR to prune a stopped crowd's follow graph", err)
			}
			return err
		}
	}
	writePruned(stdout, res, f.olderThan, f.dryRun, time.Now())
	return nil
}

// writePruned prints the stale Follows, oldest first, and what was done.
func writePruned(w io.Writer, res adminapi.PruneResult, olderThan time.Duration, dryRun bool, now time.Time) {
	for _, r := range res.Stale {
		fmt.Fprintf(w, "pending %s (since %s): %s → %s (%s)\n", now.Sub(r.Since).Round(time.Second),
			r.Since.UTC().Format("2006-01-02 15:04:05"), r.Local, r.Remote, r.FollowID)
	}
	switch {
	case len(res.Stale) == 0:
		fmt.Fprintf(w, "no Follow pending for more than %v\n", olderThan)
	case dryRun:
		fmt.Fprintf(w, "%d Follows pending for more than %v (dry run: none removed)\n", len(res.Stale), olderThan)
	default:
		fmt.Fprintf(w, "%d Follows pending for more than %v: %d removed\n", len(res.Stale), olderThan, res.Removed)
	}
}
