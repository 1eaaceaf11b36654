// Signing a draft into the engine's request: honest with a scheme (the
// Knocker's for its host), or forged as its draft says, with the ticket
// the request rides with.

package traffic

import (
	"fmt"
	"net/http"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// Prepare signs a draft: a POST of its body to its persona's inbox, signed
// by its sender with signer (Date set now, Digest, Content-Type, Host,
// User-Agent and Signature: see signing.Signer.SignPost).
func Prepare(signer *signing.Signer, d Draft) (*flood.Prepared, error) {
	return prepareScheme(signer, signing.SchemeCavage, d)
}

// Prepare signs a draft as Prepare does, with the scheme the Knocker
// picks for its host, and marks its ticket (Ticket.Knock).
func (k *Knocker) Prepare(d Draft) (*flood.Prepared, error) {
	scheme := k.firstScheme(d.URL.Host)
	p, err := prepareScheme(k.signer, scheme, d)
	if err != nil {
		return p, err
	}
	t := TicketOf(p)
	if t.Forgery != nil {
		return p, nil // a forgery is sent once, as forged: never knocked again
	}
	t.Knock = &Knock{Scheme: scheme, Sender: d.Sender, k: k}
	return p, nil
}

// prepareScheme is Prepare with scheme's signature (Knocker.Prepare). A
// forged draft is signed as its forgery says (draft-cavage), whatever the
// scheme.
func prepareScheme(signer *signing.Signer, scheme signing.Scheme, d Draft) (*flood.Prepared, error) {
	if d.Forgery != nil {
		return prepareForged(signer, d)
	}
	req := &http.Request{Method: http.MethodPost, URL: d.URL, Header: make(http.Header, 8), Host: d.URL.Host,
		Body: http.NoBody}
	if err := signer.Sign(scheme, req, d.Body, d.Sender.KeyID, d.Sender.SigningKey()); err != nil {
		return nil, fmt.Errorf("flood: sign %s by %s: %w", d.Type, d.Sender.Acct(), err)
	}
	t := &Ticket{Diverted: d.Diverted, Vocab: d.Vocab}
	p := t.Attach(&flood.Prepared{Type: d.Type, Method: http.MethodPost, URL: d.URL, Header: req.Header, Body: d.Body})
	switch d.Type {
	case record.TypeFollow:
		t.Follow = &FollowRegistration{Local: d.Sender.ID, Remote: d.Persona.ID, FollowID: d.ID}
	case record.TypeCreate, record.TypeReply, record.TypeMedia:
		t.Outbox = &actors.SentNote{Actor: d.Sender.ID, Note: d.Object}
	}
	if req.Host != d.URL.Host {
		p.Host = req.Host
	}
	return p, nil
}

// prepareForged signs a forged draft. A replay is prepared as the honest
// request it was drawn with, marked: Forgeries.Source swaps it for a
// request the SUT accepted before, when there is one.
func prepareForged(signer *signing.Signer, d Draft) (*flood.Prepared, error) {
	mark := &ForgeryMark{Kind: d.Forgery.Kind, Activity: d.ID, Type: d.Type, Actor: d.Sender.ID, Object: d.Object, Marker: d.Forgery.Marker}
	if d.Persona != nil {
		mark.Persona = d.Persona.Acct
	}
	if d.Forgery.Kind == signing.TamperReplay {
		honest := d
		honest.Forgery = nil
		p, err := Prepare(signer, honest)
		if err != nil {
			return nil, err
		}
		TicketOf(p).Forgery = mark
		return p, nil
	}
	req := &http.Request{Method: http.MethodPost, URL: d.URL, Header: make(http.Header, 8), Host: d.URL.Host, Body: http.NoBody}
	f := signing.Forgery{Kind: d.Forgery.Kind}
	if w := d.Forgery.WrongSigner; w != nil {
		f.WrongKeyID, f.WrongKey = w.KeyID, w.SigningKey()
	}
	body, err := signer.SignForged(req, d.Body, d.Sender.KeyID, d.Sender.SigningKey(), f)
	if err != nil {
		return nil, err
	}
	if f.Kind == signing.TamperBody {
		body = remark(body, d.Forgery.Marker)
	}
	p := (&Ticket{Forgery: mark}).Attach(&flood.Prepared{Type: record.TypeForged, Method: http.MethodPost, URL: d.URL, Header: req.Header, Body: body})
	if req.Host != d.URL.Host {
		p.Host = req.Host
	}
	return p, nil
}
