package actors

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// keyFiles are the files under dir/keys, by path relative to dir, with
// their contents.
func keyFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(filepath.Join(dir, "keys"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == filepath.Join(dir, "keys") {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// pems counts the keys among files.
func pems(files map[string][]byte) int {
	n := 0
	for p := range files {
		if strings.HasSuffix(p, ".pem") {
			n++
		}
	}
	return n
}

// An interruption (ctx done) stops a first start's key making within a
// key's time: the error wraps ctx's, every key written is whole (no
// temporary file stays beside them), and the next start keeps them and
// makes only the others.
func TestOpenContextStopsMakingKeys(t *testing.T) {
	state := t.TempDir()
	cfg := Config{Origins: 4, Actors: 9, Domain: "flood%d.test", StateDir: state, EphemeralGraph: true}
	const total = 4 * 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	go func() {
		// Interrupt once the first key is on disk: a fixed sleep would
		// race the start on a loaded machine.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(state, "keys", "*", "*.pem")); len(m) > 0 {
				break
			}
		}
		cancel()
		cancelled <- time.Now()
	}()
	w, err := OpenContext(ctx, cfg)
	returned := time.Now()
	if err == nil {
		w.Close()
	}
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while making the actors' keys") {
		t.Fatalf("an interrupted key making: %v, want an error wrapping context.Canceled that says what was interrupted", err)
	}
	// A hang guard, not a measure (a busy machine makes a key slowly); the
	// keys left unmade below are what shows the making stopped.
	if d := returned.Sub(<-cancelled); d > 30*time.Second {
		t.Errorf("key making went on for %v after the interruption, want about one key's time", d)
	}
	kept := keyFiles(t, state)
	if len(kept) == 0 || len(kept) >= total {
		t.Fatalf("%d key files after an interruption, want some of %d", len(kept), total)
	}
	for p := range kept {
		if !strings.HasSuffix(p, ".pem") || strings.HasPrefix(filepath.Base(p), ".") {
			t.Errorf("%s left in the state's keys: only whole keys may stay", p)
		} else if _, err := readKey(filepath.Join(state, p)); err != nil {
			t.Errorf("a key written before the interruption is not whole: %v", err)
		}
	}

	core, logs := observer.New(zap.InfoLevel)
	cfg.Logger = zap.New(core)
	w, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if made := logs.FilterMessageSnippet("making the actors' keys").All(); len(made) != 1 || made[0].ContextMap()["keys"] != int64(total-len(kept)) {
		t.Errorf("the start after the interruption logged %v, want %d keys made", logs.All(), total-len(kept))
	}
	after := keyFiles(t, state)
	for p, b := range kept {
		if !bytes.Equal(after[p], b) {
			t.Errorf("%s changed at the start after the interruption", p)
		}
	}
	if len(after) != total {
		t.Errorf("%d key files after the second start, want %d", len(after), total)
	}
}

// A key the state held and lost is refused, naming it and the ways out,
// and is not made again (a SUT that cached it must never see it change);
// keys new to the state (a larger world, another domain, an interrupted
// first start, keys/ removed to start over) are made, and the log says
// why. Keys already there are never changed.
func TestLostKeysAreRefused(t *testing.T) {
	served := Config{Origins: 2, Actors: 2, Domain: "flood%d.test", EphemeralGraph: true}
	pooled := served
	pooled.KeyPool = 3
	// The states a crowd serve leaves: a key per actor, and a kept pool.
	template := map[bool]string{}
	for _, pool := range []bool{false, true} {
		cfg := map[bool]Config{false: served, true: pooled}[pool]
		cfg.StateDir = t.TempDir()
		w, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if err := RecordServed(cfg); err != nil {
			t.Fatal(err)
		}
		template[pool] = cfg.StateDir
	}
	rm := func(paths ...string) func(t *testing.T, state string) {
		return func(t *testing.T, state string) {
			for _, p := range paths {
				if err := os.RemoveAll(filepath.Join(state, p)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	grown := func(c *Config) { c.Origins, c.Actors = 3, 3 }
	for _, tc := range []struct {
		name   string
		pool   bool
		remove func(t *testing.T, state string)
		world  func(*Config) // the world flags of the start (nil: the served ones)
		allow  bool          // AllowLostKeys
		say    []string      // the refusal says these; none: the world opens
		made   int           // keys made
		why    string        // the key making's log line says it
		absent string        // a key file that must stay absent
		// instance: the key lost is an instance actor's, which crowd keys
		// rotate does not rotate: the refusal must not advise it.
		instance bool
	}{
		// A served actor's key removed: refused, naming actor, file and every way out.
		{name: "a served actor's key lost", remove: rm("keys/flood2.test/bob.pem"),
			say:    []string{"bob@flood2.test", filepath.Join("keys", "flood2.test", "bob.pem"), "Restore", "crowd keys rotate", "--actor bob@flood2.test", "remove"},
			absent: "keys/flood2.test/bob.pem"},
		// The instance actor's key is one the world served too.
		{name: "an instance actor's key lost", remove: rm("keys/flood1.test/flood1.test.pem"),
			say: []string{"flood1.test@flood1.test", "Restore", "remove"}, absent: "keys/flood1.test/flood1.test.pem", instance: true},
		// Several lost: the first is named, with how many more.
		{name: "an origin's keys lost", remove: rm("keys/flood1.test"), say: []string{"and 2 more"}, absent: "keys/flood1.test/alice.pem"},
		// A world grown past the served one: its new actors get keys.
		{name: "a larger world", world: grown, made: 6, why: "new to this --state"},
		// Grown, but an actor it served lost its key: still refused.
		{name: "a larger world with a lost key", remove: rm("keys/flood1.test/alice.pem"), world: grown,
			say: []string{"alice@flood1.test"}, absent: "keys/flood1.test/alice.pem"},
		// Another domain is other actors: new keys.
		{name: "another domain", world: func(c *Config) { c.Domain = "crowd%d.test" }, made: 6, why: "new to this --state"},
		// No record of a served world (an interrupted first start, an older crowd's state): made.
		{name: "no record of a served world", remove: rm("world.json", "keys/flood2.test/bob.pem"), made: 1, why: "records no world served"},
		// keys/ removed, the way out to start over: made as on a first start.
		{name: "keys removed to start over", remove: rm("keys"), made: 6, why: "only on a first start"},
		// A rotation may open it: the lost key stays lost, no other is made.
		{name: "a lost key, allowed for a rotation", remove: rm("keys/flood2.test/bob.pem"), allow: true, absent: "keys/flood2.test/bob.pem"},
		// A kept pool's key removed: refused; a rotation would not bring it back.
		{name: "a pool key lost", pool: true, remove: rm("keys/pool/1.pem"),
			say: []string{filepath.Join("keys", "pool", "1.pem"), "pool key", "Restore", "remove"}, absent: "keys/pool/1.pem"},
		// A pool without its size file was never all made (its making interrupted): made.
		{name: "a pool whose making was interrupted", pool: true, remove: rm("keys/pool/size", "keys/pool/2.pem"), made: 1, why: "pool is new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			if err := os.CopyFS(state, os.DirFS(template[tc.pool])); err != nil {
				t.Fatal(err)
			}
			if tc.remove != nil {
				tc.remove(t, state)
			}
			before := keyFiles(t, state)
			cfg := map[bool]Config{false: served, true: pooled}[tc.pool]
			if tc.world != nil {
				tc.world(&cfg)
			}
			core, logs := observer.New(zap.InfoLevel)
			cfg.StateDir, cfg.AllowLostKeys, cfg.Logger = state, tc.allow, zap.New(core)
			w, err := Open(cfg)
			if err == nil {
				w.Close()
			}
			switch {
			case len(tc.say) > 0 && !errors.Is(err, ErrKeyFile):
				t.Fatalf("opened with %v, want a lost key refused", err)
			case len(tc.say) == 0 && err != nil:
				t.Fatal(err)
			}
			for _, s := range tc.say {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the refusal %q does not say %q", err, s)
				}
			}
			if len(tc.say) > 0 && (tc.pool || tc.instance) && strings.Contains(err.Error(), "rotate") {
				t.Errorf("the refusal %q advises a rotation, which makes neither a pool key nor an instance actor's", err)
			}
			made := logs.FilterMessageSnippet("making the actors' keys").All()
			switch {
			case tc.made == 0 && len(made) != 0:
				t.Errorf("keys made: %v", made[0])
			case tc.made > 0 && (len(made) != 1 || made[0].ContextMap()["keys"] != int64(tc.made) || !strings.Contains(made[0].Message, tc.why)):
				t.Errorf("logged %v, want %d keys made, saying %q", logs.All(), tc.made, tc.why)
			}
			after := keyFiles(t, state)
			for p, b := range before {
				if !bytes.Equal(after[p], b) {
					t.Errorf("%s changed", p)
				}
			}
			if n, was := pems(after), pems(before); n != was+tc.made {
				t.Errorf("%d keys, want %d and %d made", n, was, tc.made)
			}
			if tc.absent != "" {
				if _, err := os.Stat(filepath.Join(state, tc.absent)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the lost %s was made again (%v)", tc.absent, err)
				}
			}
		})
	}
}
