package audience

import (
	"testing"
)

// TestDeliveries follows posts to the crowd's inboxes: personal or shared
// inbox, before or after the post is known, the wrong host, a duplicate.
func TestDeliveries(t *testing.T) {
	fa := CrowdActor{ID: "https://flood1.test/users/alice", Acct: "alice@flood1.test"}
	fb := CrowdActor{ID: "https://flood2.test/users/bob", Acct: "bob@flood2.test"}
	post := Status{URI: "https://sut.test/users/load0/posts/3", CreatedAt: at(0)}
	type arrival struct {
		before bool // arrives before Posted
		a      Arrival
	}
	for _, tc := range []struct {
		name     string
		arrivals []arrival
		reached  int64
		p50ms    int64
	}{
		// Fedify and GoToSocial: each follower's own inbox.
		{"personal inboxes", []arrival{
			{false, Arrival{Time: at(40), Inbox: "flood1.test/users/alice/inbox", Object: post.URI}},
			{false, Arrival{Time: at(60), Inbox: "flood2.test/users/bob/inbox", Object: post.URI}}}, 2, 40},
		// Mastodon: the origin's shared inbox, once for every follower there.
		{"shared inbox", []arrival{
			{false, Arrival{Time: at(30), Inbox: "https://flood1.test/inbox", Object: post.URI}}}, 1, 30},
		// Delivered before the POST was answered: matched when it is.
		{"before the post", []arrival{
			{true, Arrival{Time: at(10), Inbox: "flood2.test/users/bob/inbox", Object: post.URI}}}, 1, 10},
		// Matched by the Create's id (uri + "/activity") when the object is not given.
		{"by activity id", []arrival{
			{false, Arrival{Time: at(20), Inbox: "flood1.test/users/alice/inbox", ID: post.URI + "/activity"}}}, 1, 20},
		// Another actor's inbox on the follower's host does not reach it.
		{"someone else's inbox", []arrival{
			{false, Arrival{Time: at(20), Inbox: "flood1.test/users/carol/inbox", Object: post.URI}}}, 0, 0},
		// A second delivery to the same follower keeps the first time.
		{"duplicate", []arrival{
			{false, Arrival{Time: at(20), Inbox: "flood1.test/users/alice/inbox", Object: post.URI}},
			{false, Arrival{Time: at(90), Inbox: "flood1.test/inbox", Object: post.URI}}}, 1, 20},
		// Another post entirely.
		{"other post", []arrival{
			{false, Arrival{Time: at(20), Inbox: "flood1.test/users/alice/inbox", Object: "https://sut.test/users/load0/posts/9"}}}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDeliveries(map[string][]CrowdActor{"load0": {fa, fb}})
			for _, a := range tc.arrivals {
				if a.before {
					d.Arrived(a.a)
				}
			}
			d.Posted("load0", post)
			for _, a := range tc.arrivals {
				if !a.before {
					d.Arrived(a.a)
				}
			}
			st := d.Summary()
			if st.Posts != 1 || st.Expected != 2 || st.Reached != tc.reached {
				t.Errorf("Summary = %+v, want 1 post, 2 expected, %d reached", st, tc.reached)
			}
			if st.Latency.P50/1000 != tc.p50ms {
				t.Errorf("p50 = %d µs, want %d ms", st.Latency.P50, tc.p50ms)
			}
			if got := d.Outstanding(); got != int(2-tc.reached) {
				t.Errorf("Outstanding = %d", got)
			}
			if want := float64(tc.reached) / 2; st.Completeness != want {
				t.Errorf("Completeness = %v, want %v", st.Completeness, want)
			}
		})
	}
}

// TestDeliveriesCounters: refused posts and lost log entries are counted;
// nothing expected is complete.
func TestDeliveriesCounters(t *testing.T) {
	d := NewDeliveries(nil)
	d.PostFailed()
	d.Lost(3)
	d.Posted("load0", Status{URI: "u", CreatedAt: at(0)})
	st := d.Summary()
	if st.PostErrors != 1 || st.StreamLost != 3 || st.Expected != 0 || st.Completeness != 1 {
		t.Errorf("Summary = %+v", st)
	}
}
