package audience

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestCheckPersona: each way a persona can be wrong gets its own message.
func TestCheckPersona(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		lookupAuth bool
		persona    string
		token      string
		err        string
	}{
		// The persona exists and the token is its own.
		{"ok", false, "load0", "tok-load0", ""},
		// The same on a server whose lookup wants a token (GoToSocial).
		{"ok, lookup with a token", true, "load0", "tok-load0", ""},
		// No such account on the SUT.
		{"no such persona", false, "load3", "tok-load0", "persona load3 does not exist on sut.test"},
		// A token the SUT refuses.
		{"refused token", false, "load1", "wrong", "the token for load1 was refused (401)"},
		// A refused token where the lookup wants one: still the token.
		{"refused token, lookup with a token", true, "load1", "wrong", "the token for load1 was refused (401)"},
		// A valid token of another persona.
		{"someone else's token", false, "load1", "tok-load0", "the token for load1 acts as load0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSUT("load0", "load1")
			f.lookupAuth = tc.lookupAuth
			c := f.start(t)
			p, err := CheckPersona(ctx, c, "sut.test", tc.persona, tc.token)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || p.Account.ID != "1" || p.Acct != "load0@sut.test" {
				t.Fatalf("CheckPersona = %+v, %v", p, err)
			}
		})
	}
}

// TestCheckSUT: a server without the client API is named as such.
func TestCheckSUT(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	c, _ := NewClient(srv.URL, srv.Client(), "")
	_, err := CheckSUT(context.Background(), c)
	if !errors.Is(err, ErrNoClientAPI) || !strings.Contains(err.Error(), "the SUT has no Mastodon client API at "+srv.URL) {
		t.Errorf("CheckSUT = %v", err)
	}
	if _, err := CheckSUT(context.Background(), newFakeSUT().start(t)); err != nil {
		t.Errorf("CheckSUT of a Mastodon API: %v", err)
	}
}

// TestFollow: the personas follow their shares, and the set-up waits for
// the Accepts; a follow never accepted is left out when the bound ends;
// an actor the SUT cannot find stops the set-up.
func TestFollow(t *testing.T) {
	crowd := crowdOf(2, 3)
	for _, tc := range []struct {
		name        string
		acceptAfter int
		unknown     string
		bound       time.Duration
		accepted    int
		err         string
	}{
		// Accepted on the third read of the relationships.
		{"accepted", 2, "", 5 * time.Second, 6, ""},
		// Never accepted within the bound: no error, nothing accepted.
		{"never accepted", 1 << 30, "", 2 * time.Second, 0, ""},
		// The SUT cannot resolve one crowd actor (its DNS, its allow-list).
		{"unresolvable actor", 0, "a1@flood2.test", 5 * time.Second, 0, "load1 could not find a1@flood2.test on the SUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSUT("load0", "load1")
			f.acceptAfter = tc.acceptAfter
			if tc.unknown != "" {
				f.unknown[tc.unknown] = true
			}
			c := f.start(t)
			personas := []Persona{{Name: "load0", Token: "tok-load0"}, {Name: "load1", Token: "tok-load1"}}
			shares, _ := AssignFollows(2, 3, crowd)
			plans := []FollowPlan{{Persona: &personas[0], Actors: shares[0]}, {Persona: &personas[1], Actors: shares[1]}}
			ctx, cancel := context.WithTimeout(context.Background(), tc.bound)
			defer cancel()
			res, err := Follow(ctx, c, plans, FollowOptions{Poll: 10 * time.Millisecond})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range res {
				if len(r.Requested) != 3 {
					t.Errorf("%s requested %d follows", r.Persona, len(r.Requested))
				}
				n += len(r.Accepted)
			}
			if n != tc.accepted {
				t.Errorf("accepted %d follows, want %d", n, tc.accepted)
			}
		})
	}
}

// TestWaitFollowers: the SUT's own followed_by decides which crowd
// Follows of the personas count. The SUT answers in memory on synctest's
// fake clock, so the wait for the third (which never follows) lasts its
// whole timeout whatever the machine's load.
func TestWaitFollowers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeSUT("load0")
		c := f.inMemory(t)
		fans := crowdOf(3, 1)
		// The SUT shows the first two as followers; the third never.
		for _, a := range fans[:2] {
			acc, err := c.Lookup(context.Background(), "tok-load0", a.Acct)
			if err != nil {
				t.Fatal(err)
			}
			f.followedBy["load0 "+acc.ID] = true
		}
		p := Persona{Name: "load0", Token: "tok-load0"}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		got, err := WaitFollowers(ctx, c, []FollowPlan{{Persona: &p, Actors: fans}}, FollowOptions{Poll: 10 * time.Millisecond})
		if err != nil || len(got) != 1 || len(got[0]) != 2 {
			t.Fatalf("WaitFollowers = %v, %v", got, err)
		}
	})
}
