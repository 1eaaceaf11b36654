package actors

import (
	"bytes"
	"sync"
	"testing"
)

// TestSharedActor: a lookup for reading finds the actor Actor finds,
// rendered alike, and the second lookup finds the same one; two actors
// whose slots collide are each found as themselves; the instance actor and
// a leaver are found as Actor finds them.
func TestSharedActor(t *testing.T) {
	// Two origins of a key pool, so that a world with more actors than
	// slots opens in no time: Person 0 and Person DocCacheSize/2 share a slot.
	_, w := openRotationWorld(t, Config{Origins: 2, Actors: DocCacheSize/2 + 1, Domain: "flood%d.test", EphemeralGraph: true, KeyPool: 2})
	o := w.Origins[1]
	collide := DocCacheSize / 2
	if len(o.shared) != collide {
		t.Fatalf("%d slots an origin, want %d (the rendered-document cache's bound, shared by the origins)", len(o.shared), collide)
	}
	for _, c := range []struct {
		name string
		same bool // the second lookup finds the first's actor
	}{
		// A Person: kept in its slot.
		{ActorName(0), true},
		// The Person whose slot it is too: kept there in its place.
		{ActorName(collide), true},
		// The first again: found as itself, not as the other, and kept back.
		{ActorName(0), true},
		// The instance actor is the origin's own.
		{o.Host, true},
		// A leaver is made on each lookup (it is never shared).
		{o.Person(3).Leaver(7).Name, false},
	} {
		want, ok := o.Actor(c.name)
		if !ok {
			t.Fatalf("Actor(%q) not found", c.name)
		}
		first, ok := o.SharedActor(c.name)
		if !ok {
			t.Fatalf("SharedActor(%q) not found", c.name)
		}
		second, _ := o.SharedActor(c.name)
		if (first == second) != c.same {
			t.Errorf("SharedActor(%q) twice: the same actor %v, want %v", c.name, first == second, c.same)
		}
		if first.ID != want.ID || first.KeyID != want.KeyID || first.Name != want.Name || !first.Published.Equal(want.Published) {
			t.Errorf("SharedActor(%q) = %s %s %s, Actor: %s %s %s", c.name, first.ID, first.KeyID, first.Published, want.ID, want.KeyID, want.Published)
		}
		if !bytes.Equal(first.DocumentJSON(), want.DocumentJSON()) || !bytes.Equal(second.DocumentJSON(), want.DocumentJSON()) {
			t.Errorf("SharedActor(%q)'s document differs from Actor's", c.name)
		}
	}
	if _, ok := o.SharedActor(ActorName(DocCacheSize/2 + 1)); ok {
		t.Error("SharedActor found a Person past the origin's last")
	}
}

// TestSharedActorSeesRotations: after a rotation, the lookup for reading
// finds the actor with its new key and a document that serves it, even
// where the actor found before rendered its own only after the rotation;
// that actor is left as it was (shared actors are never changed).
func TestSharedActorSeesRotations(t *testing.T) {
	for _, tc := range rotationWorlds {
		t.Run(tc.name, func(t *testing.T) {
			_, w := openRotationWorld(t, tc.cfg)
			o, name := w.Origins[0], ActorName(0)
			before, _ := o.SharedActor(name)
			oldKeyID := before.KeyID
			fresh, _ := o.Actor(name)
			if err := w.RotateKey(fresh, false, true); err != nil {
				t.Fatal(err)
			}
			oldDoc := before.DocumentJSON() // the old key's, rendered after the rotation
			after, _ := o.SharedActor(name)
			if after == before || after.KeyID != fresh.KeyID || after.KeyID == oldKeyID {
				t.Fatalf("after a rotation: a new actor %v, keyId %s (the rotated actor's %s, before %s)", after != before, after.KeyID, fresh.KeyID, oldKeyID)
			}
			if !bytes.Contains(after.DocumentJSON(), []byte(`"`+fresh.KeyID+`"`)) {
				t.Errorf("the document found after the rotation does not name the new key %s", fresh.KeyID)
			}
			if before.KeyID != oldKeyID || !bytes.Contains(oldDoc, []byte(`"`+oldKeyID+`"`)) || !bytes.Equal(before.DocumentJSON(), oldDoc) {
				t.Error("the actor found before the rotation changed")
			}
			if again, _ := o.SharedActor(name); again != after {
				t.Error("the actor made after the rotation is not kept")
			}
		})
	}
}

// TestSharedActorConcurrent: lookups and renderings from many goroutines
// at once find equal actors (run with -race: no write to a shared actor
// but its document's, an atomic store).
func TestSharedActorConcurrent(t *testing.T) {
	w := testWorld(t)
	o := w.Origins[0]
	want, _ := o.Actor(ActorName(1))
	wantDoc := want.DocumentJSON()
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 100 {
				a, ok := o.SharedActor(ActorName(1))
				if !ok || a.ID != want.ID || !bytes.Equal(a.DocumentJSON(), wantDoc) {
					errs <- "a lookup found another actor or document"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
