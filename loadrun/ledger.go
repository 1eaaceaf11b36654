package loadrun

import (
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
)

// ledger is the crowd's bookkeeping of a flood, a collector beside the
// record's: it hands every settled request to the traffic's hooks (the
// follow graph, the outboxes, the vocabulary, the forgeries) and adds to
// each run's record what the engine does not know.
type ledger struct {
	gen      *traffic.Generator
	knock    *traffic.Knocker    // signs with --signature's scheme and counts the double knocks
	feed     *traffic.OutboxFeed // lists the Creates sent in the crowd's outboxes
	vocab    *vocabRun           // records the edits, deletions and undone Follows
	forg     *traffic.Forgeries  // what the SUT's verification made of the run: forgeries, keys refused
	boosters *record.Boosters    // the personas' follows of the boosters before the flood (nil: none)
	seed     uint64              // the draws' seed, in every record

	settle flood.Collector
	since  tally // the counters when the current run began
}

// tally is what the ledger counts across runs; a run's record has the
// difference from its start.
type tally struct {
	diverted, undos, likes, boosts int64
	signatures                     record.Signatures
}

func (l *ledger) tally() tally {
	t := tally{diverted: l.gen.FollowsDiverted(), undos: l.gen.UndosDiverted(), signatures: l.knock.Signatures()}
	t.likes, t.boosts = l.gen.ReactionsDiverted()
	return t
}

// Begin marks where the run's counts start.
func (l *ledger) Begin(record.Schedule) {
	l.since = l.tally()
	if l.settle == nil {
		l.settle = traffic.Settle(l.gen.Settled, l.feed.Settled, l.vocab.changes.Settled, l.vocab.reactions.Settled, l.forg.Settled)
	}
}

// Offered is nothing to the ledger.
func (l *ledger) Offered(record.Offer) {}

// Answered is nothing to the ledger: the settlement follows.
func (l *ledger) Answered(int, *record.Delivery) {}

// Settled tells the traffic's hooks what became of a request.
func (l *ledger) Settled(token any, o record.Outcome) { l.settle.Settled(token, o) }

// End is nothing to the ledger.
func (l *ledger) End(record.Stop) {}

// fill adds to rec what the flood knows beyond the engine: the seed, the
// signing backend and HTTP client that made and sent its requests, the
// nice value its pipeline's signers were asked for (nil: no pipeline), what
// the run changed from what was asked (the Follows it sent as Creates
// since it began, the personas without posts), the signatures it sent
// since it began, the forgeries, the boosters.
func (l *ledger) fill(rec *record.Record, backend string, client flood.Client, signerNice *int) {
	for i := range rec.Parts {
		rec.Parts[i].Seed = l.seed
		rec.Parts[i].SigningBackend = backend
		rec.Parts[i].Client = string(client)
		if signerNice != nil {
			n := *signerNice
			rec.Parts[i].SignerNice = &n
		}
	}
	now := l.tally()
	rec.Deviations = record.Deviations{FollowsDiverted: now.diverted - l.since.diverted, UndosDiverted: now.undos - l.since.undos,
		LikesDiverted: now.likes - l.since.likes, AnnouncesDiverted: now.boosts - l.since.boosts, PersonasWithoutPosts: l.gen.PersonasWithoutPosts()}
	sig := now.signatures.Sub(l.since.signatures)
	rec.Signatures = &sig
	rec.Security = l.forg.Snapshot()
	if l.boosters != nil {
		b := *l.boosters
		rec.Boosters = &b
	}
}
