package pasture

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/pasture/weather"
)

// TestStartCrowdOwnsItsState: a started crowd serves and owns its state
// directory until Shutdown; a second crowd on it, a state that is a file
// and a world that cannot be built are refused, each with its own error.
func TestStartCrowdOwnsItsState(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	world := actors.Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: state}
	listen := Config{HTTPSAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0"}
	c, err := StartCrowd(ctx, CrowdConfig{World: world, Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pasture.Addr("admin") == "" || len(c.World.Actors()) != 1 {
		t.Errorf("started crowd: admin %q, %d actors", c.Pasture.Addr("admin"), len(c.World.Actors()))
	}
	if _, err := StartCrowd(ctx, CrowdConfig{World: world, Listen: listen}); err == nil {
		t.Error("a second crowd started on the same state")
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	again, err := StartCrowd(ctx, CrowdConfig{World: world, Listen: listen})
	if err != nil {
		t.Fatalf("the state was not released by Shutdown: %v", err)
	}
	again.Shutdown(sctx)

	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		name  string
		world actors.Config
		want  error
	}{
		// --state names a file: the lock cannot be taken there.
		{"state is a file", actors.Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: file}, statedir.ErrNotDir},
		// --domain without its %d: a flag's mistake, found before the state is touched.
		{"bad domain", actors.Config{Origins: 1, Actors: 1, Domain: "flood.test", StateDir: t.TempDir()}, actors.ErrConfig},
		// --shard out of range.
		{"bad shard", actors.Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: t.TempDir(), Shard: actors.Shard{I: 2, N: 2}}, actors.ErrConfig},
	} {
		if _, err := StartCrowd(ctx, CrowdConfig{World: tc.world, Listen: listen}); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestShutdownJournalsDeliveriesInFlight: a delivery a slow origin holds
// when the crowd shuts down is let go and answered by a working inbox, and
// its line reaches the activity log on disk (not the memory alone).
func TestShutdownJournalsDeliveriesInFlight(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	slow, err := weather.ParseSpec("slow=flood1.test:1m")
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartCrowd(ctx, CrowdConfig{World: actors.Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: state},
		Listen: Config{HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", Weather: slow}})
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+c.Pasture.Addr("http")+"/inbox", strings.NewReader(like("in-flight")))
		req.Host = "flood1.test"
		req.Header.Set("Content-Type", "application/activity+json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	// Time for the delivery to arrive and be held (its minute-long wait
	// leaves it nothing else to do).
	time.Sleep(2 * time.Second)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if status := <-answered; status == 0 {
		t.Fatal("the held delivery got no answer")
	}
	var journal []byte
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "activity.jsonl" {
			b, _ := os.ReadFile(path)
			journal = append(journal, b...)
		}
		return nil
	})
	if !strings.Contains(string(journal), "likes/in-flight") {
		t.Errorf("the delivery in flight at shutdown is not in the journal:\n%s", journal)
	}
}

// TestRotateKeysTakesTheServedWorld: a crowd serve records the world it
// served in its state, and crowd keys rotate works on that world: with no
// world flags it takes it (and makes no keys for actors nobody serves);
// with world flags that are not it, it refuses before anything changes.
func TestRotateKeysTakesTheServedWorld(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	served := actors.Config{Origins: 2, Actors: 1, Domain: "flood%d.test", StateDir: state}
	c, err := StartCrowd(ctx, CrowdConfig{World: served, Listen: Config{HTTPSAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	// The hosts with keys in the state: a rotation adds key files (the
	// new key, the one it retains), never a host.
	keyHosts := func() []string {
		entries, _ := os.ReadDir(filepath.Join(state, "keys"))
		var hosts []string
		for _, e := range entries {
			hosts = append(hosts, e.Name())
		}
		return hosts
	}
	before := keyHosts()
	if len(before) != 2 {
		t.Fatalf("the served crowd made keys for %q, want its 2 hosts", before)
	}
	def := actors.DefaultConfig()
	def.StateDir = state
	other := served
	other.Actors = 3
	for _, tc := range []struct {
		name    string
		world   actors.Config
		given   bool
		rotated int   // actors rotated
		want    error // a sentinel the error wraps
		say     string
	}{
		// Other world flags than the served ones: refused, naming both.
		{"other world flags", other, true, 0, actors.ErrConfig, "last served as --origins 2 --actors 1 --domain flood%d.test, and these world flags ask for --origins 2 --actors 3"},
		// No world flags (the defaults, 20 origins of 10): the served world is taken.
		{"no world flags", def, false, 2, nil, ""},
		// The served world's own flags.
		{"the served flags", served, true, 2, nil, ""},
	} {
		done, err := RotateKeys(RotateConfig{World: tc.world, WorldGiven: tc.given})
		if len(done) != tc.rotated || (tc.want == nil) != (err == nil) || (tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.say))) {
			t.Errorf("%s: rotated %d, %v; want %d and %v saying %q", tc.name, len(done), err, tc.rotated, tc.want, tc.say)
		}
		if after := keyHosts(); !slices.Equal(after, before) {
			t.Errorf("%s: keys for %q, was %q: keys made for actors nobody serves", tc.name, after, before)
		}
	}
	// A state no serve recorded a world in (an older crowd's), and no world
	// flags: the defaults would be a guess, so it is refused, and no key
	// is made there.
	old := t.TempDir()
	if err := os.Mkdir(filepath.Join(old, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	def.StateDir = old
	if done, err := RotateKeys(RotateConfig{World: def}); len(done) != 0 || !errors.Is(err, actors.ErrConfig) || !strings.Contains(err.Error(), "give the world flags") {
		t.Errorf("a state without a record, no world flags: rotated %d, %v; want a refusal asking for the world flags", len(done), err)
	}
	if entries, _ := os.ReadDir(filepath.Join(old, "keys")); len(entries) != 0 {
		t.Errorf("the refused rotation made keys: %v", entries)
	}
	// No crowd's state at all (a misspelt --state): with world flags or
	// without, refused, and nothing made there; a missing one is not made.
	empty, missing := t.TempDir(), filepath.Join(t.TempDir(), "typo")
	for _, tc := range []struct {
		dir   string
		given bool
		want  error
		say   string
	}{
		{empty, false, actors.ErrConfig, "holds no crowd's state"}, // an empty directory
		{empty, true, actors.ErrConfig, "holds no crowd's state"},  // world flags do not make it one
		{missing, true, statedir.ErrNotDir, "does not exist"},      // no directory at all
	} {
		def.StateDir = tc.dir
		if done, err := RotateKeys(RotateConfig{World: def, WorldGiven: tc.given}); len(done) != 0 || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s (world flags %v): rotated %d, %v; want a refusal saying %q", tc.dir, tc.given, len(done), err, tc.say)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) > 1 { // the lock alone
		t.Errorf("the refused rotation left %v in an empty directory", entries)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused rotation made the missing --state (%v)", err)
	}
}
