package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/pasture"
)

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage the crowd's actor keys: rotate them",
		Args:  noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usage(errors.New("crowd keys wants a subcommand: rotate (see crowd keys --help)"))
		},
	}
	cmd.AddCommand(newKeysRotateCmd())
	return cmd
}

type rotateFlags struct {
	world   worldFlags
	origins []string
	actors  []string
	retire  bool
	newID   bool
}

func newKeysRotateCmd() *cobra.Command {
	f := &rotateFlags{}
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Give chosen actors new keys, and tell the servers that know them (Update(Person)); or retire the old keys",
		Long: `Rotate the keys of a stopped crowd's actors (--state), in the world its crowd serve last served
from that state (recorded there: no world flags are needed, and ones that ask for another world
are refused, since they would make keys for actors nobody serves; a state an older crowd served
records none, and needs its world flags). Each chosen actor (--origin HOST, --actor NAME@HOST,
repeatable; none: every actor) gets a new RSA key, kept in --state, under the key id it had
(#main-key), as real servers rotate: a SUT that refetches an actor when a signature fails with a
known key id (Mastodon, Fedify) takes the new key at the first request signed with it. With --new-key-id the new key goes by the next key id
(#main-key-2, #main-key-3 …) instead, and the old public key keeps answering at its key id (the
actor document lists it in additionalPublicKeys) until 'crowd keys rotate --retire', which stops
serving the retained keys: requests signed with them are refused from then on. docs/debugging.md
says what each kind of server needs to accept a rotation.

Each rotated actor's Update(Person), carrying its new document, is queued in the crowd's delivery
queue for every server its follow graph relates it to and every inbox its activity log sent to; the
next 'crowd serve' delivers them, signed with the new key. A flood after the rotation counts, per
key, the SUT's 401s until it accepted the new key (the record's security.key_refusals).

The crowd must be stopped: its state directory is taken as crowd serve takes it.`,
		Example: `  crowd keys rotate --state crowd-state --actor alice@flood3.test
  crowd keys rotate --state crowd-state --origin flood1.test --origin flood2.test
  crowd keys rotate --state crowd-state --actor alice@flood3.test --retire`,
		Args: noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRotate(cmd.OutOrStdout(), cmd.Flags(), f)
		},
	}
	f.world.register(cmd)
	fl := cmd.Flags()
	for _, name := range []string{"origins", "actors", "domain", "shard", "key-pool"} {
		fl.Lookup(name).Usage = "only for a state without world.json (else it must be the served world's): " + fl.Lookup(name).Usage
	}
	fl.StringArrayVar(&f.origins, "origin", nil, "rotate every actor of this origin (repeatable)")
	fl.StringArrayVar(&f.actors, "actor", nil, "rotate this actor, NAME@HOST (repeatable)")
	fl.BoolVar(&f.retire, "retire", false, "instead of new keys, stop serving the old keys the last rotations kept")
	fl.BoolVar(&f.newID, "new-key-id", false, "give the new key the next key id (#main-key-2 …) and keep serving the old one at its id, instead of keeping the key id")
	return cmd
}

func runRotate(w io.Writer, fl *pflag.FlagSet, f *rotateFlags) error {
	if f.retire && f.newID {
		return usage(errors.New("--new-key-id makes a new key; --retire makes none: give one of them"))
	}
	done, err := pasture.RotateKeys(pasture.RotateConfig{World: f.world.cfg, WorldGiven: f.world.given(fl),
		Origins: f.origins, Actors: f.actors, Retire: f.retire, NewKeyID: f.newID})
	none := 0 // actors with no old key to retire
	for _, r := range done {
		switch {
		case f.retire && r.Retired == 0:
			none++
		case f.retire:
			fmt.Fprintf(w, "%s: %d old key(s) retired; its key is %s\n", r.Acct, r.Retired, r.KeyID)
		default:
			fmt.Fprintf(w, "%s: new key %s; Update(Person) queued for %d recipient(s)\n", r.Acct, r.KeyID, r.Queued)
		}
	}
	if none > 0 {
		// One line, not one per actor: a whole world retired shows the few that kept keys.
		fmt.Fprintf(w, "%d of %d actor(s) kept no old key: nothing to retire\n", none, len(done))
	}
	if errors.Is(err, statedir.ErrNotDir) || errors.Is(err, actors.ErrConfig) {
		return usage(err)
	}
	return err
}
