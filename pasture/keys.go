package pasture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/internal/statedir"
)

// RotateConfig asks for a key rotation of a stopped crowd.
type RotateConfig struct {
	// World is the crowd's world, as its crowd serve was given it.
	// WorldGiven says whether World's shape was given (the world flags).
	// When the state records the world its last crowd serve served
	// (actors.RecordServed), a given shape must be that one, and without
	// one the recorded shape is taken; a state with no record needs it
	// given.
	World      actors.Config
	WorldGiven bool
	// Origins are the hosts whose actors rotate; Actors are accounts
	// (name@host) that rotate. Both empty: every person of the world.
	Origins, Actors []string
	// Retire, instead of a new key, stops serving the keys a rotation
	// retained: requests signed with them are refused from then on.
	Retire bool
	// NewKeyID gives the new key the next key id (#main-key-2 …) and
	// retains the old one; by default the key keeps its id, as real
	// servers rotate (actors.World.RotateKey).
	NewKeyID bool
}

// Rotated is what RotateKeys did to one actor.
type Rotated struct {
	Acct    string
	KeyID   string // the key id now
	Queued  int    // Update(Person) deliveries queued
	Retired int    // with Retire: the old keys retired (0: it kept none)
}

// RotateKeys rotates (or retires) the keys of the chosen actors of the
// crowd whose state is cfg.World.StateDir, which must be stopped: the
// state directory is taken as a running crowd would take it (an error
// wrapping statedir.ErrNotDir, or naming the running owner). For each
// rotated actor it queues an Update(Person) to every server the crowd knows
// it has to do with (inbox.AnnounceKey), in the crowd's persistent delivery
// queue: the next crowd serve delivers them, signed with the new key; with
// NewKeyID the old key keeps answering at its id until --retire. A name that is no
// crowd actor is an error (wrapping actors.ErrConfig) before anything changes.
func RotateKeys(cfg RotateConfig) ([]Rotated, error) {
	lock, err := statedir.AcquireExisting(cfg.World.StateDir)
	if errors.Is(err, statedir.ErrNotDir) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w (stop the crowd first: keys rotate only while it does not serve them)", err)
	}
	defer lock.Release()
	if cfg.World, err = servedWorld(cfg.World, cfg.WorldGiven); err != nil {
		return nil, err
	}
	if err := cfg.World.Validate(); err != nil {
		return nil, err
	}
	// A rotation is the way to give an actor whose key file was lost a new
	// key that the SUTs are told of; the lost keys of the actors not
	// chosen stay lost, and the next crowd serve refuses them again.
	cfg.World.AllowLostKeys = true
	w, err := actors.Open(cfg.World)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	chosen, err := chooseActors(w, cfg.Origins, cfg.Actors)
	if err != nil {
		return nil, flagError{err}
	}
	in, err := inbox.New(inbox.Config{World: w})
	if err != nil {
		return nil, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		in.Shutdown(ctx)
	}()
	var out []Rotated
	for _, a := range chosen {
		r := Rotated{Acct: a.Acct()}
		if cfg.Retire {
			r.Retired, err = w.RetireKeys(a)
		} else if err = w.RotateKey(a, false, cfg.NewKeyID); err == nil {
			r.Queued, err = in.AnnounceKey(a)
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", a.Acct(), err)
		}
		r.KeyID = a.KeyID
		out = append(out, r)
	}
	return out, nil
}

// servedWorld is the world to rotate in: the one the state's last crowd
// serve recorded, when it recorded one; given says world's shape was given
// and must then be that one. Any other world would have keys made for
// actors nobody serves (an error wrapping actors.ErrConfig, before
// anything changes). A state with no record (served by an older crowd)
// needs the world given: the defaults would be a guess.
func servedWorld(world actors.Config, given bool) (actors.Config, error) {
	served, ok, err := actors.LoadServed(world.StateDir)
	switch {
	case err != nil:
		return world, err
	case !ok && !hasKeys(world.StateDir):
		// Rotating there would make a whole new world's keys and report
		// a rotation: a misspelt --state, not a crowd's.
		return world, fmt.Errorf("%w: %s holds no crowd's state (no world.json, no keys/): give the --state its crowd serve was given",
			actors.ErrConfig, world.StateDir)
	case !ok && !given:
		return world, fmt.Errorf("%w: %s records no world served from it (a crowd serve of this version writes it): "+
			"give the world flags its crowd serve was given (--origins, --actors, --domain, and --shard or --key-pool if it had them), or start crowd serve on it once",
			actors.ErrConfig, world.StateDir)
	case !ok:
		return world, nil
	}
	if !given {
		return served.Apply(world)
	}
	if asked := actors.ServedOf(world); asked != served {
		return world, fmt.Errorf("%w: %s was last served as %s, and these world flags ask for %s: rotate in the world that was served (give its flags, or none)",
			actors.ErrConfig, world.StateDir, served.Flags(), asked.Flags())
	}
	return world, nil
}

// flagError is a flag's mistake (--actor, --origin): it is an
// actors.ErrConfig, for the caller's usage exit, said in the flag's words
// alone.
type flagError struct{ err error }

func (e flagError) Error() string        { return e.err.Error() }
func (e flagError) Is(target error) bool { return target == actors.ErrConfig }

// hasKeys reports whether the state directory dir holds a keys directory.
func hasKeys(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "keys"))
	return err == nil && st.IsDir()
}

// chooseActors are the persons of the origins and the accounts named;
// none named: every person.
func chooseActors(w *actors.World, origins, accts []string) ([]*actors.Actor, error) {
	if len(origins) == 0 && len(accts) == 0 {
		return w.Actors(), nil
	}
	var out []*actors.Actor
	for _, h := range origins {
		o, ok := w.Origin(strings.ToLower(h))
		if !ok {
			return nil, fmt.Errorf("--origin %s: no such origin (the world has %s … %s)", h, w.Hosts()[0], w.Hosts()[len(w.Hosts())-1])
		}
		out = append(out, o.Persons()...)
	}
	for _, acct := range accts {
		// Names and hosts have no case, nor the acct: scheme, as in crowd tail.
		name, host, _ := strings.Cut(strings.TrimPrefix(adminapi.TrimAcct(acct), "@"), "@")
		o, ok := w.Origin(strings.ToLower(host))
		if !ok {
			return nil, fmt.Errorf("--actor %s: %s is no origin of this world (%s … %s)", acct, host, w.Hosts()[0], w.Hosts()[len(w.Hosts())-1])
		}
		a, ok := o.Actor(strings.ToLower(name))
		if !ok || a.Kind != actors.KindPerson {
			return nil, fmt.Errorf("--actor %s: %s has no person %q (its persons are %s, %s, …)", acct, o.Host, name, actors.ActorName(0), actors.ActorName(1))
		}
		if !slices.ContainsFunc(out, func(b *actors.Actor) bool { return b.ID == a.ID }) { // actors are values: compare ids
			out = append(out, a)
		}
	}
	return out, nil
}
