package traffic

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"

	"github.com/crowdfed/crowd/actors"
)

// testWorld opens a small world with freshly generated keys in a temp dir.
func testWorld(t testing.TB, origins, perOrigin int) *actors.World {
	t.Helper()
	w, err := actors.Open(actors.Config{Origins: origins, Actors: perOrigin, Domain: "flood%d.test",
		StateDir: t.TempDir(), EphemeralGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// fakeSenders are n actors of one origin without keys: enough to draw
// activities, not to sign them.
func fakeSenders(n int) []*actors.Actor {
	o := &actors.Origin{Index: 1, Host: "flood1.test"}
	out := make([]*actors.Actor, n)
	for i := range out {
		name := actors.ActorName(i)
		out[i] = &actors.Actor{Origin: o, Name: name, Kind: actors.KindPerson, ID: "https://flood1.test/users/" + name,
			KeyID: "https://flood1.test/users/" + name + "#main-key"}
	}
	return out
}

// fakePersonas are n personas on sut.test; those with an index in
// noPosts have no posts.
func fakePersonas(n int, noPosts ...int) []*Persona {
	out := make([]*Persona, n)
	for i := range out {
		id := fmt.Sprintf("https://sut.test/users/load%d", i)
		p := &Persona{Acct: fmt.Sprintf("load%d@sut.test", i), ID: id, Inbox: id + "/inbox",
			SharedInbox: "https://sut.test/inbox", Target: "https://sut.test/inbox"}
		if !slices.Contains(noPosts, i) {
			p.Posts = []string{id + "/statuses/1", id + "/statuses/2"}
		}
		out[i] = p
	}
	return out
}

func mustGenerator(t testing.TB, cfg GeneratorConfig) *Generator {
	t.Helper()
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustDraft(t testing.TB, s *Stream) Draft {
	t.Helper()
	d, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseMix(t *testing.T) {
	for _, c := range []struct {
		in   string
		want record.Mix
		ok   bool
	}{
		{"create=6,like=3,follow=1", record.Mix{Create: 6, Like: 3, Follow: 1}, true}, // the default, written out
		{" Create = 1 , FOLLOW=2 ", record.Mix{Create: 1, Follow: 2}, true},           // spaces and case do not matter; like omitted = 0
		{"like=0.5", record.Mix{Like: 0.5}, true},                                     // a single type, a fractional weight
		{"create=0,like=1", record.Mix{Like: 1}, true},                                // a zero weight is allowed when another is positive
		{"", record.Mix{}, false},                                                     // empty
		{"x=1", record.Mix{}, false},                                                  // unknown type
		{"announce=1,undo=2,delete=3,update=4,reply=5,media=6", record.Mix{Announce: 1, Undo: 2, Delete: 3, Update: 4, Reply: 5, Media: 6}, true}, // the vocabulary
		{"block=1", record.Mix{}, false},           // a real type the flood does not send
		{"create", record.Mix{}, false},            // no weight
		{"create=-1", record.Mix{}, false},         // negative weight
		{"create=NaN", record.Mix{}, false},        // not a number
		{"create=Inf", record.Mix{}, false},        // infinite
		{"create=1e10", record.Mix{}, false},       // beyond the bound
		{"create=1,create=2", record.Mix{}, false}, // a type twice
		{"create=0,like=0", record.Mix{}, false},   // every weight zero
		{"create=1,", record.Mix{}, false},         // trailing comma: an empty pair
	} {
		got, err := record.ParseMix(c.in)
		if c.ok != (err == nil) || c.ok && got != c.want {
			t.Errorf("ParseMix(%q) = %+v, %v; want %+v ok=%v", c.in, got, err, c.want, c.ok)
		}
		var ue *record.UsageError
		if err != nil && !errors.As(err, &ue) {
			t.Errorf("ParseMix(%q): error %v is not a *UsageError (exit 2)", c.in, err)
		}
	}
}

func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"create=6,like=3,follow=1", "like=1", "x=1", "create=1e9", "follow=0.001,create=0", "=,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := record.ParseMix(s)
		if err != nil {
			return
		}
		if m.Create < 0 || m.Like < 0 || m.Follow < 0 || m.Create+m.Like+m.Follow <= 0 {
			t.Fatalf("ParseMix(%q) accepted %+v", s, m)
		}
		back, err := record.ParseMix(m.String())
		if err != nil || back != m {
			t.Fatalf("ParseMix(%q).String() = %q does not round-trip: %+v, %v", s, m.String(), back, err)
		}
	})
}

// TestFollowsOnlyNewPairs: a Follow goes only from a sender that does not
// follow its persona yet, by the crowd's graph before the run and by the
// Follows drawn in it; only when none is left does the Follow become a
// Create (marked Diverted), however few free senders remain.
func TestFollowsOnlyNewPairs(t *testing.T) {
	senders, personas := fakeSenders(6), fakePersonas(2)
	before := map[followPair]bool{
		{senders[0].ID, personas[0].ID}: true, // followed before the run
		{senders[1].ID, personas[1].ID}: true,
	}
	many := fakeSenders(200)
	allButOne := map[followPair]bool{}
	for i, s := range many {
		if i != 137 {
			allButOne[followPair{s.ID, personas[0].ID}] = true
		}
	}
	for _, c := range []struct {
		name         string
		senders      []*actors.Actor
		personas     []*Persona
		before       map[followPair]bool
		draws        int
		wantFollows  int // distinct pairs, none of them in before
		wantDiverted int // drafts marked Diverted
	}{
		// No more draws than either persona's free pairs (5 each): every
		// Follow is a new pair, however the draws fall on the personas.
		{"pairs left", senders, personas, before, 5, 5, 0},
		// Every free pair is found before any Follow is diverted.
		{"all pairs used", senders, personas[:1], before, 5, 5, 0},
		// More draws than the 10 free pairs: the rest become Creates.
		{"pairs run out", senders, personas, before, 30, 10, 20},
		// One free follower among 200: found, not diverted after a few
		// colliding draws.
		{"one free sender of many", many, personas[:1], allButOne, 2, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := mustGenerator(t, GeneratorConfig{Senders: c.senders, Personas: c.personas, Mix: record.Mix{Follow: 1}, Seed: 3,
				Following: func(local, remote string) bool { return c.before[followPair{local, remote}] }})
			s := g.Stream()
			seen := map[followPair]bool{}
			follows, diverted := 0, 0
			for range c.draws {
				d := mustDraft(t, s)
				if d.Diverted {
					diverted++
				}
				if d.Type != record.TypeFollow {
					continue
				}
				follows++
				pair := followPair{d.Sender.ID, d.Persona.ID}
				if c.before[pair] || seen[pair] {
					t.Errorf("Follow of %s by %s again", pair.remote, pair.local)
				}
				seen[pair] = true
			}
			if follows != c.wantFollows || diverted != c.wantDiverted {
				t.Errorf("%d Follows, %d diverted; want %d and %d", follows, diverted, c.wantFollows, c.wantDiverted)
			}
		})
	}
}

func TestLikesNeedPosts(t *testing.T) {
	// Persona 0 has no posts: a Like drawn for it becomes a Create or Follow.
	g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(3), Personas: fakePersonas(2, 0), Mix: record.DefaultMix(), Seed: 1})
	s := g.Stream()
	likesOf := map[string]int{}
	for range 2000 {
		d := mustDraft(t, s)
		if d.Type == record.TypeLike {
			likesOf[d.Persona.Acct]++
			if !slices.Contains(d.Persona.Posts, d.Object) {
				t.Fatalf("Like of %s, which is not one of %s's posts", d.Object, d.Persona.Acct)
			}
		}
	}
	if likesOf["load0@sut.test"] != 0 || likesOf["load1@sut.test"] == 0 {
		t.Errorf("likes per persona %v: want none of load0 (no posts) and some of load1", likesOf)
	}

	// A likes-only mix targets only the personas with posts (as many draws
	// as load1 has free pairs: 3 senders × 2 posts).
	g = mustGenerator(t, GeneratorConfig{Senders: fakeSenders(3), Personas: fakePersonas(3, 0, 2), Mix: record.Mix{Like: 1}})
	s = g.Stream()
	for range 6 {
		if d := mustDraft(t, s); d.Type != record.TypeLike || d.Persona.Acct != "load1@sut.test" {
			t.Fatalf("likes-only mix drew %s of %s; want Likes of load1 only", d.Type, d.Persona.Acct)
		}
	}

	// … and refuses when nobody has one.
	_, err := NewGenerator(GeneratorConfig{Senders: fakeSenders(3), Personas: fakePersonas(2, 0, 1), Mix: record.Mix{Like: 1}})
	var ue *record.UsageError
	if !errors.As(err, &ue) {
		t.Errorf("likes-only mix with no posts: %v, want a usage error", err)
	}
}

func TestIDsAreUnique(t *testing.T) {
	start := time.Now()
	ids := map[string]bool{}
	// Two runs started a nanosecond apart, each with four concurrent
	// streams: no id repeats, within a run or across them.
	for run := range 2 {
		g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(2), Personas: fakePersonas(1), Mix: record.Mix{Create: 1, Like: 1, Follow: 1},
			Start: start.Add(time.Duration(run)), Now: func() time.Time { return start }})
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 4 {
			s := g.Stream()
			wg.Go(func() {
				local := make([]string, 0, 2500)
				for range 2500 {
					d, err := s.Next()
					if err != nil {
						t.Error(err)
						return
					}
					local = append(local, d.ID)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range local {
					if ids[id] {
						t.Errorf("id %s repeats", id)
					}
					ids[id] = true
				}
			})
		}
		wg.Wait()
	}
	if len(ids) != 20000 {
		t.Errorf("%d distinct ids, want 20000", len(ids))
	}
}

func TestCreateMentionsItsPersona(t *testing.T) {
	g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(3), Personas: fakePersonas(5), Mix: record.Mix{Create: 1}, NoteBytes: 500})
	s := g.Stream()
	for range 200 {
		d := mustDraft(t, s)
		var act struct {
			Type   string   `json:"type"`
			Actor  string   `json:"actor"`
			To     []string `json:"to"`
			Cc     []string `json:"cc"`
			Object struct {
				ID           string   `json:"id"`
				AttributedTo string   `json:"attributedTo"`
				Content      string   `json:"content"`
				To           []string `json:"to"`
				Cc           []string `json:"cc"`
				Tag          []actors.Tag
			} `json:"object"`
		}
		if err := json.Unmarshal(d.Body, &act); err != nil {
			t.Fatal(err)
		}
		p := d.Persona
		o := act.Object
		switch {
		case act.Type != "Create" || act.Actor != d.Sender.ID || o.AttributedTo != d.Sender.ID:
			t.Fatalf("not a Create by its sender: %s", d.Body)
		case !slices.Contains(act.To, actors.PublicAudience) || !slices.Contains(o.To, actors.PublicAudience):
			t.Fatalf("not public: %s", d.Body)
		case !slices.Contains(act.Cc, p.ID) || !slices.Contains(o.Cc, p.ID):
			t.Fatalf("persona %s not in cc: %s", p.ID, d.Body)
		case !slices.Contains(o.Tag, actors.Tag{Type: "Mention", Href: p.ID, Name: p.Handle()}):
			t.Fatalf("no Mention tag of %s: %s", p.Handle(), d.Body)
		case d.Object != o.ID || d.ID != o.ID+"/activity":
			t.Fatalf("draft ids %s / %s do not match the note %s", d.ID, d.Object, o.ID)
		case len(o.Content) < 500:
			t.Fatalf("content of %d bytes, want about 500", len(o.Content))
		case d.URL.String() != p.Target:
			t.Fatalf("sent to %s, want the persona's target %s", d.URL, p.Target)
		}
	}
}

func TestSelfFloodNeverTargetsTheSender(t *testing.T) {
	w := testWorld(t, 1, 2)
	personas := WorldPersonas(w, InboxAuto)
	g := mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: personas, Zipf: 2})
	s := g.Stream()
	for range 500 {
		if d := mustDraft(t, s); d.Sender.ID == d.Persona.ID {
			t.Fatalf("%s sent a %s to itself", d.Sender.ID, d.Type)
		}
	}
}

func TestSeedMakesStreamsReproducible(t *testing.T) {
	// One clock for every draw: note ids carry their second, which a real
	// clock may cross between two draws.
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	draw := func(seed uint64) []string {
		g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(10), Personas: fakePersonas(10), Seed: seed, Zipf: 1.2,
			Now: func() time.Time { return at }})
		s := g.Stream()
		var out []string
		for range 100 {
			d := mustDraft(t, s)
			out = append(out, string(d.Type)+" "+d.Sender.ID+" "+d.Persona.ID+" "+d.Object[:min(len(d.Object), 40)])
		}
		return out
	}
	if a, b := draw(42), draw(42); !slices.Equal(a, b) {
		t.Error("the same seed drew different activities")
	}
	if a, b := draw(42), draw(43); slices.Equal(a, b) {
		t.Error("different seeds drew the same activities")
	}
}

// TestSettledRegistersOnlySentFollows: the generator's bookkeeping follows
// what was sent. A Follow is registered only once the target answered it
// 2xx; one that never reached the target gives its pair back for a later
// draw; a diverted Follow counts once it is sent.
func TestSettledRegistersOnlySentFollows(t *testing.T) {
	for _, c := range []struct {
		name       string
		d          record.Outcome
		registered bool // passed to OnFollowSent
		released   bool // the pair may be drawn again
	}{
		// Answered 202: the SUT has it and will Accept or Reject it.
		{"202", record.Outcome{Sent: true, Class: record.Class202}, true, false},
		// Another 2xx: the same.
		{"other 2xx", record.Outcome{Sent: true, Class: record.ClassOther2xx}, true, false},
		// Refused: no relation, but the SUT saw the pair (a second Follow
		// would meet the same answer, or GoToSocial's 500).
		{"500", record.Outcome{Sent: true, Class: record.ClassOther5xx}, false, false},
		// No answer in time: the SUT may have it; its Accept would
		// record it, so it is not registered, and not drawn again.
		{"timeout", record.Outcome{Sent: true, Class: record.ClassTimeout}, false, false},
		// Refused connection: the SUT never got it.
		{"connection refused", record.Outcome{Sent: true, Class: record.ClassConnError}, false, true},
		// Interrupted in flight: not registered, pair given back.
		{"aborted", record.Outcome{Sent: true, Aborted: true}, false, true},
		// Dropped (no free slot) or left in a buffer at the end.
		{"never sent", record.Outcome{}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []FollowRegistration
			g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(1), Personas: fakePersonas(1), Mix: record.Mix{Follow: 1},
				OnFollowSent: func(f FollowRegistration) { got = append(got, f) }})
			s := g.Stream()
			d := mustDraft(t, s)
			p := (&Ticket{Follow: &FollowRegistration{Local: d.Sender.ID, Remote: d.Persona.ID, FollowID: d.ID}}).Attach(&flood.Prepared{Type: d.Type})
			if len(got) != 0 {
				t.Fatal("a Follow was registered when drawn")
			}
			g.Settled(TicketOf(p), c.d)
			if want := []FollowRegistration{*TicketOf(p).Follow}; c.registered != slices.Equal(got, want) || !c.registered && len(got) > 0 {
				t.Errorf("registered %+v; want registered %v", got, c.registered)
			}
			// One sender, one persona: a single pair. A second draw
			// follows again only when the pair was given back.
			if again := mustDraft(t, s); (again.Type == record.TypeFollow) != c.released {
				t.Errorf("second draw is a %s (diverted %v); want the pair released %v", again.Type, again.Diverted, c.released)
			}
		})
	}
	t.Run("diverted counts when sent", func(t *testing.T) {
		g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(2), Personas: fakePersonas(1), Mix: record.Mix{Follow: 1}})
		g.Settled(TicketOf((&Ticket{Diverted: true}).Attach(&flood.Prepared{Type: record.TypeCreate})), record.Outcome{})
		g.Settled(TicketOf((&Ticket{Diverted: true}).Attach(&flood.Prepared{Type: record.TypeCreate})), record.Outcome{Sent: true, Class: record.Class202})
		g.Settled(TicketOf((&Ticket{Diverted: true}).Attach(&flood.Prepared{Type: record.TypeCreate})), record.Outcome{Sent: true, Class: record.Class401})
		if n := g.FollowsDiverted(); n != 2 {
			t.Errorf("FollowsDiverted %d after two diverted sends and one unsent draft; want 2", n)
		}
	})
}

// TestDraftsDependOnSeedAndNumberAlone: draft n of a run draws from (seed,
// n) alone. The same seed gives the same types and personas whether the
// crowd's state makes some Follows search for another sender or not, and
// the same drafts, senders and bodies included, whether one stream or
// several drew them.
func TestDraftsDependOnSeedAndNumberAlone(t *testing.T) {
	senders, personas := fakeSenders(6), fakePersonas(3)
	type key struct{ typ, persona, sender string }
	draws := func(following func(local, remote string) bool, streams int, withSenders bool) map[uint64]key {
		t.Helper()
		g := mustGenerator(t, GeneratorConfig{Senders: senders, Personas: personas, Mix: record.DefaultMix(), Seed: 11, Following: following})
		ss := make([]*Stream, streams)
		for i := range ss {
			ss[i] = g.Stream()
		}
		out := map[uint64]key{}
		for i := range 200 {
			d := mustDraft(t, ss[i%streams])
			typ := d.Type
			if d.Diverted {
				typ = record.TypeFollow
			}
			k := key{string(typ), d.Persona.ID, ""}
			if withSenders {
				k.sender = d.Sender.ID
			}
			out[uint64(i)] = k
		}
		return out
	}
	// Senders 0-3 follow every persona already: a Follow drawn for one of them searches
	// further, from a random offset, for one of the two left.
	busy := func(local, _ string) bool {
		return slices.ContainsFunc(senders[:4], func(a *actors.Actor) bool { return a.ID == local })
	}
	for _, c := range []struct {
		name      string
		following func(local, remote string) bool
		streams   int
	}{
		// The state changes which sender a Follow goes from, not what was drawn.
		{"followed before", busy, 1},
		// Three streams taking turns draw what one stream draws.
		{"three streams", nil, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Senders are compared where the state leaves every drawn one as drawn.
			withSenders := c.following == nil
			want, got := draws(nil, 1, withSenders), draws(c.following, c.streams, withSenders)
			if !maps.Equal(want, got) {
				t.Errorf("the drafts differ:\nwant %v\n got %v", want, got)
			}
		})
	}
}
