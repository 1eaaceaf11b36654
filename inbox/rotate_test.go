package inbox

import (
	"reflect"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

// TestAnnounceTargets: an Update(Person) goes once to each inbox that
// reaches the actors a rotated actor has to do with, shared inboxes first.
func TestAnnounceTargets(t *testing.T) {
	const (
		load0, load1 = "https://sut.test/users/load0", "https://sut.test/users/load1"
		shared       = "https://sut.test/inbox"
		gts          = "https://gts.test/users/amy"
	)
	for _, tc := range []struct {
		name    string
		related []string
		sent    []sentTo
		want    []sentTo
	}{
		// A follower the crowd also delivered an Accept to: one delivery, at that inbox.
		{"graph and log name one inbox", []string{load0}, []sentTo{{load0, load0 + "/inbox"}},
			[]sentTo{{load0, load0 + "/inbox"}}},
		// A server with a shared inbox: one delivery there stands for all its actors.
		{"shared inbox first", []string{load0, load1}, []sentTo{{load1, load1 + "/inbox"}, {load0, shared}},
			[]sentTo{{load0, shared}}},
		// No shared inbox (GoToSocial): one delivery per actor; an unknown inbox is looked up by the queue.
		{"personal inboxes", []string{gts, load0}, []sentTo{{gts, gts + "/inbox"}},
			[]sentTo{{gts, gts + "/inbox"}, {load0, ""}}},
		// A repeat in the log and in the graph is still one delivery.
		{"repeats", []string{load0, load0}, []sentTo{{load0, load0 + "/inbox"}, {load0, load0 + "/inbox"}},
			[]sentTo{{load0, load0 + "/inbox"}}},
		// Nothing related, nothing sent: nothing queued.
		{"none", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := announceTargets(tc.related, tc.sent); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAnnounceKeyOncePerInbox: a remote actor alice follows, to whose
// inbox the activity log also has a delivery of hers, gets her
// Update(Person) once.
func TestAnnounceKeyOncePerInbox(t *testing.T) {
	f := newFixture(t, false)
	alice := f.actor("alice@flood1.test")
	bob := remoteID("bob")
	if _, err := f.in.RegisterFollowing(adminapi.FollowingRequest{Local: alice.ID, Remote: bob, FollowID: alice.ID + "/follows/1"}); err != nil {
		t.Fatal(err)
	}
	f.in.Log().Append(Entry{Direction: adminapi.DirOut, Method: "POST", URL: bob + "/inbox", Local: alice.ID, To: bob, Type: "Accept", Status: 202})
	n, err := f.in.AnnounceKey(alice)
	if err != nil {
		t.Fatal(err)
	}
	var to []string
	for _, d := range f.in.Pending() {
		to = append(to, d.To+" at "+d.Inbox)
	}
	if n != 1 || len(to) != 1 || to[0] != bob+" at "+bob+"/inbox" {
		t.Fatalf("queued %d: %q, want one Update to %s/inbox", n, to, bob)
	}
}
