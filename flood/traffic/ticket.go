package traffic

import (
	"net/http"
	"net/url"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// Ticket is the crowd's bookkeeping of one request, its flood.Prepared.Token:
// what the crowd's state takes once the engine says what became of the
// request (Settle). The engine never reads it; it asks it as a flood.Fallback
// (the double knock), a flood.Holder (a Delete's wait) and a flood.AsSigned
// (whether the dispatcher may write it).
type Ticket struct {
	// Follow is set on a Follow: what registering it with the crowd's
	// follow graph takes, once it was sent (Generator.Settled).
	Follow *FollowRegistration
	// Diverted marks a Create sent in place of a drawn Follow (Draft.Diverted).
	Diverted bool
	// Outbox is set on a Create: the sender's outbox lists its note once
	// it was sent (OutboxFeed).
	Outbox *actors.SentNote
	// Knock is set when a Knocker signed the request (--signature): its
	// scheme and signer, so that it can be signed again (see Knocker).
	Knock *Knock
	// Vocab is what the run keeps of it once answered 2xx, for later
	// Undos, Updates and Deletes, and the change it made (Generator.Settled).
	Vocab *VocabSent
	// Forgery is set on a forged request (tamper.go): its kind and
	// activity, for the record's security section (Forgeries).
	Forgery *ForgeryMark

	req *flood.Prepared // the request it rides on: what a replay sends again
}

// VocabSent is what the run keeps of an activity once the target answered
// it 2xx (Generator.Settled): a note it may later edit or delete, an
// activity it may later undo, a change the crowd must record, a Follow to
// forget.
type VocabSent struct {
	// Note: a note (Create, reply, media) later Updates and Deletes act on.
	Note bool
	// Undoable: a Like, Announce or Follow a later Undo takes back.
	Undoable bool
	// Change is the edit the crowd records once answered 2xx (ChangeFeed).
	Change *actors.Change
	// Deletion is the deletion a Delete makes, recorded when drafted
	// (VocabConfig.Deletions) whatever the answer, restored if never sent.
	Deletion *actors.Change
	// Unfollow is the Follow an Undo took back (VocabConfig.OnUnfollow).
	Unfollow *FollowRegistration
	// UndoDiverted marks an Announce drafted in place of an Undo.
	UndoDiverted bool
	// Reaction is the Like or Announce of a persona's post this send makes
	// (Undone: the reaction its Undo takes back), which the crowd keeps so
	// that no later draw repeats it (ReactionFeed).
	Reaction *actors.Reaction
	// DivertedFrom is the reaction (TypeLike or TypeAnnounce) a Create was
	// drafted in place of: every sender had reacted so to the post drawn.
	DivertedFrom record.ActivityKind
	// Met is a leaver the SUT met through this send (the author of a
	// boosted note it fetches): a later Delete may delete it.
	Met *actors.Actor

	sender  *actors.Actor
	persona *Persona
	url     *url.URL
	id      string          // the note's id, or the activity's
	gone    <-chan struct{} // closes once Deletion is recorded: the Delete may leave
}

// ForgeryMark names a forged request (Ticket.Forgery): its kind, and
// what the look-up for its effect looks for, and where.
type ForgeryMark struct {
	Kind     signing.Tamper
	Activity string // the forged activity's id
	// Type is the forged activity's type; Actor, the actor it speaks for;
	// Object, its object's id (the note, the liked post, the followed
	// persona); Persona, the acct of the persona it targets; Marker, the
	// token a forged note carries (DraftForgery.Marker). A replay has none
	// of them: its effect is the SUT's to log.
	Type    record.ActivityKind
	Actor   string
	Object  string
	Persona string
	Marker  string
}

// Attach makes t p's token and returns p.
func (t *Ticket) Attach(p *flood.Prepared) *flood.Prepared {
	t.req = p
	p.Token = t
	return p
}

// TicketOf is p's Ticket, nil when p is nil or has none (a request not
// the crowd's).
func TicketOf(p *flood.Prepared) *Ticket {
	if p == nil {
		return nil
	}
	t, _ := p.Token.(*Ticket)
	return t
}

// Request is the request t rides on.
func (t *Ticket) Request() *flood.Prepared { return t.req }

// Attempt sends a request once, as signed, unless a Knocker signed it:
// then the Knocker decides (flood.Fallback).
func (t *Ticket) Attempt(p *flood.Prepared, n, status int, measured bool) (http.Header, bool, error) {
	if t.Knock != nil {
		return t.Knock.attempt(p, n, status, measured)
	}
	return p.Header, n == 0, nil
}

// Hold is what must close before the request may leave (a Delete's object
// recorded deleted: Deletions), or nil when nothing holds it (flood.Holder).
func (t *Ticket) Hold() <-chan struct{} {
	if t.Vocab == nil {
		return nil
	}
	return t.Vocab.gone
}

// FirstAsSigned reports whether t's request leaves now and first as it
// was signed (flood.AsSigned): nothing holds it (a Delete's object is
// recorded gone already, or it is no Delete) and no Knocker may sign it
// again first (see Knock.firstAsSigned).
func (t *Ticket) FirstAsSigned() bool {
	if t.Knock != nil && !t.Knock.firstAsSigned() {
		return false
	}
	hold := t.Hold()
	if hold == nil {
		return true
	}
	select {
	case <-hold:
		return true
	default:
		return false
	}
}

// Settle is a flood.Collector that tells hooks what became of every request
// carrying a Ticket: how the crowd's state follows what was sent (the
// generator's, the feeds', the forgeries' hooks).
func Settle(hooks ...func(*Ticket, record.Outcome)) flood.Collector {
	return settle{hooks: hooks}
}

type settle struct {
	flood.Nop
	hooks []func(*Ticket, record.Outcome)
}

func (s settle) Settled(token any, o record.Outcome) {
	t, ok := token.(*Ticket)
	if !ok {
		return
	}
	for _, h := range s.hooks {
		h(t, o)
	}
}
