package traffic

import (
	"net/http"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// Ticket is the crowd's bookkeeping of one request, its flood.Prepared.Token:
// what the crowd's state takes once the engine says what became of the
// request (Settle). The engine never reads it; it asks it as a flood.Fallback
// (the double knock) and a flood.Holder (a Delete's wait).
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
