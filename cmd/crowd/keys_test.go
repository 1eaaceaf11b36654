package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/crowdtest"
	"github.com/crowdfed/crowd/pasture"
)

// TestKeysRotate rotates alice@flood1.test's key on a stopped crowd: by
// default the new key keeps #main-key (nothing retained); with
// --new-key-id the restarted crowd serves her next key under #main-key-2
// with the old one retained, and has queued her Update(Person), carrying
// that document, for the remote actor she follows; --retire then drops
// the old key.
func TestKeysRotate(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	c := crowdtest.Start(t, crowdtest.Options{StateDir: state})
	const alice, remote = "https://flood1.test/users/alice", "https://sut.test/users/load0"
	if _, err := c.Inbox.RegisterFollowing(adminapi.FollowingRequest{Local: alice, Remote: remote, FollowID: alice + "/follows/x"}); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	world := []string{"--state", state, "--origins", "2", "--actors", "2"}
	code, out, errOut := runCLI(t, append([]string{"keys", "rotate", "--actor", "alice@flood1.test"}, world...)...)
	if code != 0 || !strings.Contains(out, "alice@flood1.test: new key "+alice+"#main-key; Update(Person) queued for 1 recipient(s)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"keys", "rotate", "--actor", "alice@flood1.test", "--new-key-id"}, world...)...)
	if code != 0 || !strings.Contains(out, "alice@flood1.test: new key "+alice+"#main-key-2; Update(Person) queued for 1 recipient(s)") {
		t.Fatalf("--new-key-id: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, append([]string{"keys", "rotate", "--retire", "--new-key-id"}, world...)...); code != 2 || !strings.Contains(errOut, "--new-key-id") {
		t.Fatalf("--retire --new-key-id: exit %d\n%s", code, errOut)
	}
	c = crowdtest.Start(t, crowdtest.Options{StateDir: state})
	a, _ := c.World.ActorByID(alice)
	var doc struct {
		PublicKey            struct{ ID string }   `json:"publicKey"`
		AdditionalPublicKeys []struct{ ID string } `json:"additionalPublicKeys"`
	}
	json.Unmarshal(a.DocumentJSON(), &doc)
	if doc.PublicKey.ID != alice+"#main-key-2" || len(doc.AdditionalPublicKeys) != 1 || doc.AdditionalPublicKeys[0].ID != alice+"#main-key" {
		t.Fatalf("document keys %+v", doc)
	}
	// Both rotations queued an Update(Person) for the remote (in no set
	// order): the second one's carries the key under #main-key-2.
	var carried []string
	for _, d := range c.Inbox.Pending() {
		if d.Type != "Update" || d.To != remote || d.From != alice {
			continue
		}
		var upd struct {
			Object struct {
				ID        string
				PublicKey struct{ ID string } `json:"publicKey"`
			}
		}
		json.Unmarshal(d.Activity, &upd)
		if upd.Object.ID != alice {
			t.Fatalf("an Update(Person) of %s for %s carries %s", alice, remote, upd.Object.ID)
		}
		carried = append(carried, upd.Object.PublicKey.ID)
	}
	if !slices.Contains(carried, alice+"#main-key-2") {
		t.Fatalf("the Update(Person)s pending for %s carry the keys %v, want one with %s#main-key-2: %+v", remote, carried, alice, c.Inbox.Pending())
	}
	c.Stop()
	if code, out, errOut := runCLI(t, append([]string{"keys", "rotate", "--actor", "alice@flood1.test", "--retire"}, world...)...); code != 0 || !strings.Contains(out, "alice@flood1.test: 1 old key(s) retired") {
		t.Fatalf("--retire: exit %d\n%s\n%s", code, out, errOut)
	}
	// Again: nothing is left to retire, and it says so rather than claim a retirement.
	if code, out, errOut := runCLI(t, append([]string{"keys", "rotate", "--actor", "alice@flood1.test", "--retire"}, world...)...); code != 0 || out != "1 of 1 actor(s) kept no old key: nothing to retire\n" {
		t.Fatalf("--retire again: exit %d\n%q\n%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, append([]string{"keys", "rotate", "--actor", "zed@flood9.test"}, world...)...); code != 2 || !strings.Contains(errOut, "crowd: --actor zed@flood9.test: flood9.test is no origin of this world") {
		t.Fatalf("an unknown actor: exit %d\n%s", code, errOut)
	}
	// Names and hosts have no case, nor the acct: scheme.
	if code, out, errOut := runCLI(t, append([]string{"keys", "rotate", "--actor", "ACCT:ALICE@Flood1.test"}, world...)...); code != 0 || !strings.Contains(out, "alice@flood1.test: new key") {
		t.Fatalf("an actor in capitals: exit %d\n%s\n%s", code, out, errOut)
	}
	// Once the state records the world its crowd served (as crowd serve
	// does), world flags that are not that world are refused (2) …
	if err := actors.RecordServed(actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: state}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "keys", "rotate", "--state", state, "--origins", "3", "--actors", "2", "--actor", "alice@flood1.test")
	if code != 2 || !strings.Contains(errOut, "last served as --origins 2 --actors 2") {
		t.Fatalf("other world flags: exit %d\n%s", code, errOut)
	}
	// … and none are needed: the served world is taken, in which carol
	// (the third actor, with the default --actors 10) is no actor.
	code, _, errOut = runCLI(t, "keys", "rotate", "--state", state, "--actor", "carol@flood1.test")
	if code != 2 || !strings.Contains(errOut, "carol@flood1.test") {
		t.Fatalf("no world flags, an actor of the default world only: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := runCLI(t, "keys", "rotate", "--state", state, "--actor", "bob@flood2.test"); code != 0 || !strings.Contains(out, "bob@flood2.test: new key") {
		t.Fatalf("no world flags: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A served actor's lost key stops crowd serve with an error naming the
// file and the ways out, making no key; crowd keys rotate, one of them,
// gives the actor a new key (announced by an Update), and the crowd then
// starts, with every other key as it was.
func TestLostKeyIsRefusedUntilRotated(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	serve := []string{"serve", "--state", state, "--origins", "2", "--actors", "2",
		"--https", "127.0.0.1:0", "--http", "", "--dns", "", "--admin", "", "--log-level", "error"}
	// A served state: the first start makes the keys and records the world.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := pasture.StartCrowd(ctx, pasture.CrowdConfig{World: actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: state},
		Listen: pasture.Config{HTTPSAddr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	lost := filepath.Join(state, "keys", "flood2.test", "bob.pem")
	alice, _ := os.ReadFile(filepath.Join(state, "keys", "flood1.test", "alice.pem"))
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLIContext(t, ctx, serve...)
	if code != 1 || !strings.Contains(errOut, lost) || !strings.Contains(errOut, "crowd keys rotate --state "+state+" --actor bob@flood2.test") {
		t.Fatalf("serve with a lost key: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(lost); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("serve made the lost key again (%v)", err)
	}
	if code, out, errOut := runCLI(t, "keys", "rotate", "--state", state, "--actor", "bob@flood2.test"); code != 0 || !strings.Contains(out, "bob@flood2.test: new key") {
		t.Fatalf("rotating the lost key's actor: exit %d\n%s\n%s", code, out, errOut)
	}
	w, err = pasture.StartCrowd(ctx, pasture.CrowdConfig{World: actors.Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: state},
		Listen: pasture.Config{HTTPSAddr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatalf("the crowd after the rotation: %v", err)
	}
	w.Shutdown(ctx)
	if now, _ := os.ReadFile(filepath.Join(state, "keys", "flood1.test", "alice.pem")); !bytes.Equal(now, alice) {
		t.Error("another actor's key changed")
	}
}
