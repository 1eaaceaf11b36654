package traffic

import "github.com/crowdfed/crowd/actors"

// SenderSet is a numbered set of the crowd actors that send: a world of a
// million actors lends its Persons computed on demand rather than listed,
// so drawing a sender costs the same at any size.
type SenderSet interface {
	// Len is how many senders there are.
	Len() int
	// At is sender i, 0 ≤ i < Len().
	At(i int) *actors.Actor
}

// senderSlice is a listed SenderSet (GeneratorConfig.Senders).
type senderSlice []*actors.Actor

func (s senderSlice) Len() int               { return len(s) }
func (s senderSlice) At(i int) *actors.Actor { return s[i] }

// worldSenders is the Persons of a world, computed on demand.
type worldSenders struct{ w *actors.World }

func (s worldSenders) Len() int               { return s.w.NumPersons() }
func (s worldSenders) At(i int) *actors.Actor { return s.w.Person(i) }

// WorldSenders is every Person of w as a SenderSet, in origin order,
// without computing them up front.
func WorldSenders(w *actors.World) SenderSet { return worldSenders{w} }
