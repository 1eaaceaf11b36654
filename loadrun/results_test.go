package loadrun

import (
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood/record/results"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// TestDescribeSend: a results line names the actor a request speaks for,
// its origin, the scheme it is signed with now and its forgery, from what
// its ticket knows.
func TestDescribeSend(t *testing.T) {
	alice := &actors.Actor{ID: "https://flood3.test/users/alice", Origin: &actors.Origin{Host: "flood3.test"}}
	for _, c := range []struct {
		name  string
		token any
		want  results.Sender
	}{
		// An honest send: its knock says who signed it and how.
		{"honest", &traffic.Ticket{Knock: &traffic.Knock{Scheme: signing.SchemeCavage, Sender: alice}},
			results.Sender{Actor: alice.ID, Origin: "flood3.test", Signature: string(signing.SchemeCavage)}},
		// A forgery is never knocked: its mark names the actor it speaks for.
		{"forged", &traffic.Ticket{Forgery: &traffic.ForgeryMark{Kind: signing.TamperBody, Actor: alice.ID}},
			results.Sender{Actor: alice.ID, Origin: "flood3.test", Forged: string(signing.TamperBody)}},
		// A replay's mark names no actor, and nothing is made up.
		{"replay without an actor", &traffic.Ticket{Forgery: &traffic.ForgeryMark{Kind: signing.TamperReplay}},
			results.Sender{Forged: string(signing.TamperReplay)}},
		// A token that is not a ticket says nothing.
		{"not a ticket", "token", results.Sender{}},
	} {
		if got := describeSend(c.token); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
