package actors

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// A pool: every actor keeps its own key id, actors share the material, the
// pool's size is kept in --state and another --key-pool is refused.
func TestKeyPoolSharesMaterialKeepsKeyIDs(t *testing.T) {
	state := t.TempDir()
	cfg := Config{Origins: 2, Actors: 2, Domain: "flood%d.test", StateDir: state, KeyPool: 4}
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append(w.Origins[0].Persons(), w.Origins[0].Instance), append(w.Origins[1].Persons(), w.Origins[1].Instance)...)
	keyIDs, pems := map[string]bool{}, map[string]int{}
	for _, a := range all {
		keyIDs[a.KeyID] = true
		pems[a.PublicKeyPEM()]++
	}
	w.Close()
	if len(keyIDs) != 6 || len(pems) != 4 {
		t.Fatalf("%d key ids and %d keys for 6 actors in a pool of 4, want 6 and 4", len(keyIDs), len(pems))
	}
	// Slot 4 (origin 2's second actor) wraps around to key 0, alice@flood1's.
	if all[0].PublicKeyPEM() != all[4].PublicKeyPEM() {
		t.Error("slot 4 does not share key 0 in a pool of 4")
	}
	if b, err := os.ReadFile(filepath.Join(state, "keys", "pool", "size")); err != nil || strings.TrimSpace(string(b)) != "4" {
		t.Fatalf("pool size file: %q, %v", b, err)
	}

	cfg.KeyPool = 0 // the default keeps the pool made
	core, logs := observer.New(zap.InfoLevel)
	cfg.Logger = zap.New(core)
	again, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a := again.Origins[1].Person(1); a.PublicKeyPEM() != all[0].PublicKeyPEM() {
		t.Error("a restart with --key-pool 0 changed a pooled key")
	}
	again.Close()
	if logs.FilterMessage("actor keys").Len() != 1 || !strings.Contains(logs.All()[0].ContextMap()["choice"].(string), "kept in --state") {
		t.Errorf("the choice is not logged in one line: %v", logs.All())
	}

	cfg.KeyPool, cfg.Logger = 3, nil
	if _, err := Open(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--key-pool 3") {
		t.Errorf("another --key-pool over a kept pool: %v, want an error naming it", err)
	}
}

func TestPlanKeys(t *testing.T) {
	state := t.TempDir()
	for _, c := range []struct {
		name            string
		origins, actors int
		pool            int
		want            int // 0: a key per actor
	}{
		{"default world: a key per actor", 20, 10, 0, 0},
		{"at the bound: still a key per actor", 4096 / 16, 15, 0, 0},
		{"beyond the bound: the default pool", 10000, 100, 0, DefaultKeyPoolBound},
		{"explicit pool", 10000, 100, 500, 500},
		{"a pool as large as the world: a key per actor", 2, 2, 6, 0},
		{"a small world in a small pool", 2, 2, 5, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := planKeys(Config{Origins: c.origins, Actors: c.actors, StateDir: state, KeyPool: c.pool})
			if err != nil || p.pool != c.want || p.why == "" {
				t.Errorf("planKeys = %+v, %v; want pool %d with a reason", p, err, c.want)
			}
		})
	}
}

// Keys are parsed on first use, not at start: a damaged key file does not
// stop a world from opening, and every use of that key fails, naming it.
func TestKeysLoadLazily(t *testing.T) {
	state := t.TempDir()
	cfg := Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: state}
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	path := filepath.Join(state, "keys", "flood1.test", "alice.pem")
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err = Open(cfg)
	if err != nil {
		t.Fatalf("Open parsed a key at start: %v", err)
	}
	defer w.Close()
	alice := w.Origins[0].Person(0)
	sum := sha256.Sum256([]byte("x"))
	if _, err := alice.Key.Sign(rand.Reader, sum[:], crypto.SHA256); !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), "alice.pem") {
		t.Errorf("Sign with a damaged key: %v, want ErrKeyFile naming the file", err)
	}
	if alice.Key.Public() != nil || alice.DocumentJSON() != nil {
		t.Error("a damaged key still has a public key or a document")
	}
	if _, err := w.Origins[0].Instance.Key.Sign(rand.Reader, sum[:], crypto.SHA256); err != nil {
		t.Errorf("the instance actor's good key: %v", err)
	}
}

func TestActorIndexInvertsActorName(t *testing.T) {
	for i := range 5000 {
		if j, ok := actorIndex(ActorName(i)); !ok || j != i {
			t.Fatalf("actorIndex(%q) = %d, %v; want %d", ActorName(i), j, ok, i)
		}
	}
	for _, name := range []string{
		"",                     // nothing
		"alice1",               // round 1 has no number
		"alice02",              // a leading zero
		"Alice",                // names are lower case
		"mallory-",             // not a given name
		"bob99999999999999999", // more rounds than a world may have
		"flood1.test",          // the instance actor's name is the host, not an index
	} {
		if j, ok := actorIndex(name); ok {
			t.Errorf("actorIndex(%q) = %d, want none", name, j)
		}
	}
}

func FuzzActorIndex(f *testing.F) {
	for _, s := range []string{"alice", "bob2", "priya250", "alice1", "zoe00", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if i, ok := actorIndex(name); ok && ActorName(i) != name {
			t.Fatalf("actorIndex(%q) = %d, but ActorName(%d) = %q", name, i, i, ActorName(i))
		}
	})
}

// A world of 10 000 origins × 100 actors opens with one pooled key made and
// finds any actor by id, by name or by number, computing only that actor.
func TestLargeWorldComputesActorsOnDemand(t *testing.T) {
	w, err := Open(Config{Origins: 10000, Actors: 100, Domain: "flood%d.test", StateDir: t.TempDir(), KeyPool: 1, EphemeralGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.NumPersons() != 1000000 || len(w.Origins) != 10000 {
		t.Fatalf("%d persons on %d origins", w.NumPersons(), len(w.Origins))
	}
	for _, i := range []int{0, 99, 100, 123456, 999999} {
		a := w.Person(i)
		b, ok := w.ActorByID(a.ID)
		if !ok || b.ID != a.ID || b.KeyID != a.KeyID || b.Origin.Index != i/100+1 {
			t.Errorf("Person(%d) = %s, ActorByID found %v %v", i, a.ID, b, ok)
		}
		if c, ok := a.Origin.Actor(a.Name); !ok || c.ID != a.ID {
			t.Errorf("%s not found by name", a.Acct())
		}
	}
	last := w.Person(999999)
	if last.Acct() != "victor3@flood10000.test" || last.PublicKeyPEM() == "" || len(last.DocumentJSON()) == 0 {
		t.Errorf("last actor %s, key %t", last.Acct(), last.PublicKeyPEM() != "")
	}
	for _, id := range []string{
		"https://flood10000.test/users/victor4", // index 100: past the origin's actors
		"https://flood10001.test/users/alice",   // past the origins
		"https://flood5.test/users/alice/inbox", // not an actor id
		"http://flood5.test/users/alice",        // not https
	} {
		if a, ok := w.ActorByID(id); ok {
			t.Errorf("ActorByID(%q) = %s, want none", id, a.Acct())
		}
	}
}

// A world that grows from a key per actor into a pool says, once, that the
// actors' keys change: a SUT that cached them must forget them.
func TestGrowingIntoAPoolWarns(t *testing.T) {
	state := t.TempDir()
	w, err := Open(Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	core, logs := observer.New(zap.WarnLevel)
	w, err = Open(Config{Origins: 1, Actors: 2, Domain: "flood%d.test", StateDir: state, KeyPool: 1, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if logs.FilterMessageSnippet("must forget them").Len() != 1 {
		t.Errorf("no warning that the keys changed: %v", logs.All())
	}
}
