package pasture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/statedir"
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
