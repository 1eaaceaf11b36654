// Reaction pairs: a crowd actor likes or boosts a post once, until its Undo.

package traffic

import (
	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood/record"
)

// reactionPair is a crowd actor, the object it reacted to, and how.
type reactionPair struct {
	actor, object string
	kind          record.ActivityKind
}

// fullKey is a post and a kind of reaction every sender has made to it.
type fullKey struct {
	object string
	kind   record.ActivityKind
}

// claimReaction reports whether actor may react (kind) to object now (it
// did not before the run, nor earlier in it) and, if so, marks the pair
// taken.
func (g *Generator) claimReaction(actor, object string, kind record.ActivityKind) bool {
	if g.cfg.Reacted != nil && g.cfg.Reacted(actor, object, kind) {
		return false
	}
	_, taken := g.reacted.LoadOrStore(reactionPair{actor, object, kind}, struct{}{})
	return !taken
}

// reactor claims and returns who reacts (kind) to which post of persona p:
// post i with the drawn sender when it has not reacted so to it yet, else
// with a free sender (freeSender), else the next post that has one; nil
// when every sender has reacted so to every post of p. Searching the posts
// too keeps the mix a mix of reactions until p's pairs are all taken.
func (s *Stream) reactor(drawn *actors.Actor, p *Persona, i int, kind record.ActivityKind) (*actors.Actor, string) {
	g := s.g
	for k := range len(p.Posts) {
		post := p.Posts[(i+k)%len(p.Posts)]
		if _, full := g.full.Load(fullKey{post, kind}); full {
			continue
		}
		if drawn.ID != p.ID && g.claimReaction(drawn.ID, post, kind) {
			return drawn, post
		}
		if a := s.freeSender(p.ID, func(id string) bool { return g.claimReaction(id, post, kind) }); a != nil {
			return a, post
		}
		// Remembered until a pair of the post is given back, so a world of
		// many senders is searched once, not at every draw.
		g.full.Store(fullKey{post, kind}, struct{}{})
		// A pair given back during the search cleared no mark yet: search
		// once more, so a free pair is never hidden behind the mark.
		if a := s.freeSender(p.ID, func(id string) bool { return g.claimReaction(id, post, kind) }); a != nil {
			g.full.Delete(fullKey{post, kind})
			return a, post
		}
	}
	return nil, ""
}
