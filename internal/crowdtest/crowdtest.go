// Package crowdtest runs, for a test, the crowd as `crowd serve` wires it: a
// two-origin world (flood1.test and flood2.test, alice and bob on each), its
// inbox, and a pasture whose admin listener mounts the inbox's routes, every
// listener on 127.0.0.1:0. No DNS: deliveries to the crowd's own origins are
// served in-process by the inbox.
package crowdtest

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/pasture"
)

// Options configure Start.
type Options struct {
	// Client is the inbox's outgoing client; nil: a plain one with a 10 s
	// timeout.
	Client *http.Client
	// Unstarted leaves the listeners down: the admin server is reachable
	// through Pasture.AdminHandler only, and not ready.
	Unstarted bool
	// StateDir is the state directory; "" is a new one in t's temporary
	// directory. Give the same one to a second Start, after Stop, to
	// restart the crowd.
	StateDir string
}

// Crowd is a running crowd.
type Crowd struct {
	World   *actors.World
	Inbox   *inbox.Inbox
	Pasture *pasture.Pasture
	// Admin is the admin listener's host:port ("" when Unstarted).
	Admin string
	// Stop shuts the crowd down; it is idempotent and also runs at the
	// test's cleanup.
	Stop func()
}

// Start runs a crowd in t's temporary directory, failing t if it cannot.
func Start(t testing.TB, o Options) *Crowd {
	t.Helper()
	state := o.StateDir
	if state == "" {
		state = t.TempDir()
	}
	world, err := actors.Open(actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	reg := pasture.NewRegistry()
	in, err := inbox.New(inbox.Config{World: world, StateDir: state, Registerer: reg, Client: o.Client})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pasture.New(pasture.Config{World: world, HTTPSAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Version: "test", Inbox: in, Admin: in.AdminRoutes, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var once sync.Once
	c := &Crowd{World: world, Inbox: in, Pasture: p, Stop: func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			in.EndStreams() // as pasture.Crowd does: streams, listeners, then the inbox
			p.Shutdown(sctx)
			in.Shutdown(sctx)
			world.Close()
		})
	}}
	t.Cleanup(c.Stop)
	if err := in.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if o.Unstarted {
		return c
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c.Admin = p.Addr("admin")
	return c
}
