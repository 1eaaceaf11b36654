package actors

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/signing"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testWorld opens a one-origin, two-actor world whose keys come from
// testdata, so documents are byte-stable for golden files.
func testWorld(t *testing.T) *World { return testWorldWith(t, nil) }

// testWorldWith is testWorld signing with backend (nil: Go's).
func testWorldWith(t *testing.T, backend signing.Backend) *World {
	t.Helper()
	state := t.TempDir()
	src := filepath.Join("testdata", "keys", "flood1.test")
	dst := filepath.Join(state, "keys", "flood1.test")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"alice", "bob", "flood1.test"} {
		b, err := os.ReadFile(filepath.Join(src, n+".pem"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, n+".pem"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(Config{Origins: 1, Actors: 2, Domain: "flood%d.test", StateDir: state, Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// golden compares got with testdata/golden/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file:\n got: %s\nwant: %s", name, got, want)
	}
}

func TestDocumentsMatchGoldenFiles(t *testing.T) {
	w := testWorld(t)
	o, _ := w.Origin("flood1.test")
	alice, _ := o.Actor("alice")
	if err := w.Graph.AddFollower(alice.ID, "https://sut.test/users/load0", "https://sut.test/follows/1", nil); err != nil {
		t.Fatal(err)
	}
	spec := NoteSpec{Published: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Seq: 7, Bytes: 120,
		MentionID: "https://sut.test/users/load0", MentionHandle: "@load0@sut.test"}
	note, err := alice.Object(strings.TrimPrefix(alice.NoteID(spec), alice.ID))
	if err != nil {
		t.Fatal(err)
	}
	outbox := w.OutboxDoc(alice, 0) // before any post: empty, counting zero
	for i := range 3 {
		later := spec
		later.Published, later.Seq = spec.Published.Add(time.Duration(i)*time.Minute), uint64(10+i)
		must(t, w.RecordSent([]SentNote{{Actor: alice.ID, Note: alice.NoteID(later)}}))
	}
	for _, c := range []struct {
		file string
		doc  any
	}{
		{"actor_alice.json", alice.Document()},               // a Person with every field servers check
		{"actor_instance.json", o.Instance.Document()},       // the Application actor that signs fetches
		{"followers.json", w.FollowersDoc(alice, 0)},         // collection root: true count, link to page 1
		{"followers_page1.json", w.FollowersDoc(alice, 1)},   // first page lists the follower
		{"following.json", w.FollowingDoc(alice, 0)},         // no accepted follows yet
		{"outbox.json", outbox},                              // nothing sent yet
		{"outbox_sent.json", w.OutboxDoc(alice, 0)},          // three sent: the true count
		{"outbox_page1.json", w.OutboxDoc(alice, 1)},         // the Creates, newest first
		{"featured.json", FeaturedDoc(alice)},                // no pinned posts, items inline
		{"featured_tags.json", FeaturedTagsDoc(alice)},       // no featured hashtags
		{"instance_outbox.json", w.OutboxDoc(o.Instance, 0)}, // the instance actor's links are served too
		{"note.json", note},                                  // a regenerated note
		{"create.json", alice.CreateNote(spec)},              // the Create the flood sends
		{"follow.json", alice.Follow(FollowSpec{Published: spec.Published, Seq: 1, Object: spec.MentionID})},
	} {
		b, err := MarshalDoc(c.doc)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, c.file, b)
	}
	golden(t, "profile_alice.html", alice.ProfileHTML())
}

func TestOpenKeepsKeysAcrossRestarts(t *testing.T) {
	state := t.TempDir()
	cfg := Config{Origins: 2, Actors: 3, Domain: "flood%d.test", StateDir: state}
	first, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	second, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	for i, o := range first.Origins {
		for j, a := range append(o.Persons(), o.Instance) {
			b := append(second.Origins[i].Persons(), second.Origins[i].Instance)[j]
			if a.PublicKeyPEM() == "" || a.PublicKeyPEM() != b.PublicKeyPEM() {
				t.Errorf("%s: public key changed across restart", a.Acct())
			}
		}
	}
	if got := len(second.Actors()); got != 6 {
		t.Errorf("Actors() = %d, want 6", got)
	}
}

func TestOpenRejectsBadInput(t *testing.T) {
	state := t.TempDir()
	bad := filepath.Join(state, "keys", "flood1.test")
	os.MkdirAll(bad, 0o700)
	os.WriteFile(filepath.Join(bad, "alice.pem"), []byte("not a key"), 0o600)
	for _, c := range []struct {
		name string
		cfg  Config
		want error
		flag string
	}{
		{"no origins", Config{Origins: 0, Actors: 1, Domain: "flood%d.test", StateDir: state}, ErrConfig, "--origins"},
		{"no actors", Config{Origins: 1, Actors: 0, Domain: "flood%d.test", StateDir: state}, ErrConfig, "--actors"},
		{"pattern without %d", Config{Origins: 1, Actors: 1, Domain: "flood.test", StateDir: state}, ErrConfig, "--domain"},
		{"single-label domain", Config{Origins: 1, Actors: 1, Domain: "flood%d", StateDir: state}, ErrConfig, "--domain"},
		{"bad characters", Config{Origins: 1, Actors: 1, Domain: "fl_od%d.test", StateDir: state}, ErrConfig, "--domain"},
		{"no state dir", Config{Origins: 1, Actors: 1, Domain: "flood%d.test"}, ErrConfig, "--state"},
		{"negative key pool", Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: state, KeyPool: -1}, ErrConfig, "--key-pool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.cfg)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.flag) {
				t.Fatalf("Open = %v, want %v naming %s", err, c.want, c.flag)
			}
		})
	}
}

func TestShards(t *testing.T) {
	for _, c := range []struct {
		in      string
		origins []int // which of origins 1..6 the shard serves
		bad     bool
	}{
		{"", []int{1, 2, 3, 4, 5, 6}, false}, // no shard: everything
		{"0/2", []int{1, 3, 5}, false},       // first of two
		{"1/2", []int{2, 4, 6}, false},       // second of two
		{"2/2", nil, true},                   // index out of range
		{"1/0", nil, true},                   // no shards
		{"a/b", nil, true},                   // not numbers
		{"1/2/3", nil, true},                 // trailing garbage
	} {
		sh, err := ParseShard(c.in)
		if (err != nil) != c.bad {
			t.Fatalf("ParseShard(%q) err = %v", c.in, err)
		}
		if c.bad {
			continue
		}
		var got []int
		for i := 1; i <= 6; i++ {
			if sh.Has(i) {
				got = append(got, i)
			}
		}
		if len(got) != len(c.origins) {
			t.Errorf("shard %q serves %v, want %v", c.in, got, c.origins)
		}
	}
}

func TestZone(t *testing.T) {
	for _, c := range []struct{ domain, zone string }{
		{"flood%d.test", "test."},               // the default
		{"crowd%d.example.org", "example.org."}, // deeper zone
		{"x.flood%d.test", "test."},             // number not in the first label
	} {
		if got := (Config{Domain: c.domain}).Zone(); got != c.zone {
			t.Errorf("Zone(%q) = %q, want %q", c.domain, got, c.zone)
		}
	}
}

func TestActorLookups(t *testing.T) {
	w := testWorld(t)
	for _, c := range []struct {
		id   string
		want string // acct, or "" for not found
	}{
		{"https://flood1.test/users/alice", "alice@flood1.test"},          // by id
		{"https://flood1.test/users/alice#main-key", "alice@flood1.test"}, // by key id
		{"https://flood1.test/actor", "flood1.test@flood1.test"},          // instance actor
		{"https://flood1.test/users/mallory", ""},                         // not in the world
		{"https://flood2.test/users/alice", ""},                           // origin not in the world
	} {
		a, ok := w.ActorByID(c.id)
		if got := ""; ok {
			got = a.Acct()
			if got != c.want {
				t.Errorf("ActorByID(%q) = %s, want %s", c.id, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("ActorByID(%q) not found, want %s", c.id, c.want)
		}
	}
	if _, ok := w.Origin("FLOOD1.test:443"); !ok {
		t.Error("Origin lookup must ignore case and port")
	}
}

// TestDisplayNamesAreUnique: no two actors of a world share a display name
// (some servers drop Likes from different actors sharing one), while
// usernames repeat across origins and stay as they were (state keys).
func TestDisplayNamesAreUnique(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"default world", DefaultConfig()},                                               // 20 origins of 10
		{"larger world", Config{Origins: 60, Actors: 90, Domain: "crowd%d.example.org"}}, // names run out and get round numbers
		{"one origin", Config{Origins: 1, Actors: 3, Domain: "flood%d.test"}},            // the instance actor beside persons
	} {
		t.Run(c.name, func(t *testing.T) {
			w := layout(c.cfg)
			var all []*Actor
			for _, o := range w.Origins {
				for j := 0; j <= c.cfg.Actors; j++ {
					all = append(all, o.newActor(j))
				}
			}
			if len(all) != c.cfg.Origins*(c.cfg.Actors+1) {
				t.Fatalf("%d actors, want %d", len(all), c.cfg.Origins*(c.cfg.Actors+1))
			}
			seen := map[string]string{}
			for _, a := range all {
				name := a.Document().Name
				if name == "" {
					t.Fatalf("%s has no display name", a.Acct())
				}
				if prev, dup := seen[name]; dup {
					t.Fatalf("%s and %s share the display name %q", prev, a.Acct(), name)
				}
				seen[name] = a.Acct()
			}
			if a := w.Origins[0].Person(0); a.Name != "alice" || a.Document().PreferredUsername != "alice" {
				t.Errorf("first username %q, want alice (usernames are state keys)", a.Name)
			}
		})
	}
}

// A first start says what it makes and how long it should take, then
// that it is done; a second start, with every key on disk, makes none.
func TestFirstStartReportsKeyMaking(t *testing.T) {
	state := t.TempDir()
	cfg := Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: state}
	core, logs := observer.New(zap.InfoLevel)
	cfg.Logger = zap.New(core)
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	start := logs.FilterMessageSnippet("making the actors' keys").All()
	if len(start) != 1 || start[0].ContextMap()["keys"] != int64(2) || start[0].ContextMap()["estimate"] == nil {
		t.Fatalf("first start logged %v, want one line with keys=2 and an estimate", logs.All())
	}
	if logs.FilterMessage("keys made").Len() != 1 {
		t.Errorf("no end line: %v", logs.All())
	}
	core, logs = observer.New(zap.InfoLevel)
	cfg.Logger = zap.New(core)
	w, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if logs.FilterMessageSnippet("making").Len() != 0 {
		t.Errorf("second start logged key making: %v", logs.All())
	}
}

// --state naming a file gives one error naming --state, not one per key.
func TestStateThatIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state")
	os.WriteFile(file, []byte("x"), 0o600)
	_, err := Open(Config{Origins: 20, Actors: 10, Domain: "flood%d.test", StateDir: file})
	if err == nil {
		t.Fatal("opened a world in a file")
	}
	if msg := err.Error(); !strings.Contains(msg, "--state "+file+" is a file") || strings.Count(msg, "\n") > 0 {
		t.Errorf("error %q: want one line naming --state", msg)
	}
}

// A process borrowing keys never writes the state: a missing key is an
// error, not a key made in someone else's directory.
func TestBorrowedKeysAreReadOnly(t *testing.T) {
	state := t.TempDir()
	_, err := Open(Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: state, BorrowKeys: true, EphemeralGraph: true})
	if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), "has no key") {
		t.Fatalf("err = %v, want a missing key refused", err)
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("borrowing wrote into the state: %v", ents)
	}
}

// TestWorldEpoch: the epoch from Unix seconds is the very time.Time the
// calendar makes for 2026-01-01 UTC, location included, so documents
// print it as they always have.
func TestWorldEpoch(t *testing.T) {
	want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := worldEpoch(); got != want {
		t.Errorf("worldEpoch() = %#v, want %#v", got, want)
	}
}
