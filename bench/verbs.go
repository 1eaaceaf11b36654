package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// verbKind is one compared kind and the mix that drafts it.
type verbKind struct {
	kind record.ActivityKind
	mix  string
}

// verbKinds is the kinds of the vocabulary compared with Create, each a
// row ("verbs_KIND"), and the mix that drafts it: the kind, beside the
// feeder whose 2xx sends fill the pool it acts on (an Undo takes back a
// Like, an Update edits and a Delete deletes a note a Create sent), so no
// pool runs dry and every draft timed is of its kind.
func verbKinds() []verbKind {
	return []verbKind{
		{record.TypeLike, "like=1"},
		{record.TypeFollow, "follow=1"},
		{record.TypeAnnounce, "announce=1"},
		{record.TypeUndo, "undo=1,like=2"},
		{record.TypeDelete, "delete=1,create=1"},
		{record.TypeUpdate, "update=1,create=1"},
		{record.TypeReply, "reply=1"},
		{record.TypeMedia, "media=1"},
	}
}

// verbRowKeys are the verbs section's rows, in table order.
func verbRowKeys() []string {
	out := make([]string, len(verbKinds()))
	for i, v := range verbKinds() {
		out[i] = verbRowKey(v.kind)
	}
	return out
}

func verbRowKey(k record.ActivityKind) string { return "verbs_" + strings.ToLower(string(k)) }

// Drafts timed per kind and round: drafting alone, and drafting then
// signing (RSA-2048, as a pipeline's signer does). Rounds are short and
// many (verbRoundsPer × -rounds), so a shared machine's load, which
// changes by the second, falls on every kind alike.
const (
	verbDrafts    = 200
	verbSigned    = 40
	verbRoundsPer = 5
)

// verbCost is one round's cost per send of one kind, in µs.
type verbCost struct{ Draft, Signed float64 }

// verbPair is one round's cost of a kind and of a Create timed right
// beside it (before it in even rounds, after it in odd ones).
type verbPair struct{ Kind, Create verbCost }

// verbsSection: what each kind of the vocabulary costs the generator per
// send, beside Create. Each round times every kind beside a Create of its
// own, the kinds in turn and the order reversed every other round (Like,
// …, Media, then Media, …, Like: roundOrder), and a row's ratio is the
// median of its rounds' ratios: signing, the same for every kind, is most
// of a send's cost, and the machine's speed drifts by tens of percent
// within a round on a shared host, so a kind compared with a Create timed
// half a round away measured that drift (one run gave 1.25 where drafting
// alone differs by 8 µs of 1 500). A row's figure is the cost of drafting
// and signing one send of its kind ÷ Create's; drafting alone is in its
// notes. Target: ≤ 1.2 (the other verbs cost no more per send than
// Create).
func (b *bench) verbsSection(ctx context.Context) {
	const target = "≤ 1.2 × Create"
	kinds := append([]verbKind{{record.TypeCreate, "create=1"}}, verbKinds()...)
	gens := make([]*traffic.Generator, len(kinds))
	fail := func(err error) {
		for _, v := range verbKinds() {
			b.rep.fail(verbRowKey(v.kind), verbRowName(v.kind), target, err)
		}
	}
	for i, k := range kinds {
		g, err := newGenerator(b.world, k.mix, sinkTarget(b.sinkAddr))
		if err != nil {
			fail(err)
			return
		}
		gens[i] = g
	}
	signer := newSigner()
	pairs := make([][]verbPair, len(kinds)-1)
	for round := range verbRoundsPer * max(1, b.cfg.Rounds) {
		for _, i := range roundOrder(round, len(pairs)) {
			var p verbPair
			for _, j := range roundOrder(round, 2) {
				if ctx.Err() != nil {
					return
				}
				gen, kind, cost := gens[0], kinds[0].kind, &p.Create
				if j == 1 {
					gen, kind, cost = gens[i+1], kinds[i+1].kind, &p.Kind
				}
				c, err := draftCost(gen, signer, kind)
				if err != nil {
					fail(err)
					return
				}
				*cost = c
			}
			pairs[i] = append(pairs[i], p)
		}
		b.logf("  round %d: Create %.0f µs drafted and signed beside %s", round+1, pairs[0][round].Create.Signed, kinds[1].kind)
	}
	for i, k := range kinds[1:] {
		row := verbRow(k, pairs[i])
		row.Target = target
		b.rep.set(row)
	}
}

// verbRow is kind k's row from its rounds' pairs: its value the median of
// its own costs drafted and signed, its ceiling the median of the Creates
// timed beside them, its ratio the median of each round's own ratio (not
// the ratio of the two medians, which pairs nothing), met at ≤ 1.2.
func verbRow(k verbKind, pairs []verbPair) Row {
	row := Row{Key: verbRowKey(k.kind), Name: verbRowName(k.kind), Unit: "µs",
		CeilingName: "a Create drafted and signed, timed beside it in each round"}
	var signed, created, ratios, drafts, createDrafts []float64
	for _, p := range pairs {
		signed, created = append(signed, p.Kind.Signed), append(created, p.Create.Signed)
		drafts, createDrafts = append(drafts, p.Kind.Draft), append(createDrafts, p.Create.Draft)
		if p.Create.Signed > 0 {
			ratios = append(ratios, p.Kind.Signed/p.Create.Signed)
		}
	}
	if len(pairs) == 0 {
		return row
	}
	row.Value, row.Ceiling = median(signed), median(created)
	spread := ""
	if len(ratios) > 0 {
		row.Ratio = median(ratios)
		row.Met = met(row.Ratio <= 1.2)
		spread = fmt.Sprintf(" (%.2f to %.2f)", slices.Min(ratios), slices.Max(ratios))
	}
	draft, createDraft := median(drafts), median(createDrafts)
	row.Notes = fmt.Sprintf("the median of %d rounds' ratios%s, each round timing %d drafts signed (RSA-2048, the Go backend) of the kind and of a Create beside it; drafting alone %.1f µs vs Create's %.1f µs (%.2f, medians of %d drafts a round); mix %s",
		len(pairs), spread, verbSigned, draft, createDraft, draft/createDraft, verbDrafts, k.mix)
	return row
}

func verbRowName(k record.ActivityKind) string {
	return fmt.Sprintf("generator cost per send: %s ÷ Create (drafted and signed)", k)
}

// draftCost drafts from gen until it has timed verbDrafts drafts of kind,
// then verbSigned drafts of kind signed, and answers their mean costs.
// Every draft is settled as a sent one would be (2xx; a Follow as never
// sent, so its sender may follow the persona again), feeding the pools
// later drafts act on; drafts of another kind (the mix's feeder) are not
// timed.
func draftCost(gen *traffic.Generator, signer *signing.Signer, kind record.ActivityKind) (verbCost, error) {
	s := gen.Stream()
	var c verbCost
	for _, signed := range []bool{false, true} {
		want := verbDrafts
		if signed {
			want = verbSigned
		}
		var spent time.Duration
		for n, tries := 0, 0; n < want; tries++ {
			if tries > 20*want {
				return c, fmt.Errorf("%s: %d of %d drafts were of the kind: its pool runs dry", kind, n, tries)
			}
			t0 := time.Now()
			d, err := s.Next()
			if err == nil && signed {
				_, err = traffic.Prepare(signer, d)
			}
			took := time.Since(t0)
			if err != nil {
				return c, err
			}
			if d.Type == kind {
				spent += took
				n++
			}
			settleDraft(gen, d, kind)
		}
		us := float64(spent.Microseconds()) / float64(want)
		if signed {
			c.Signed = us
		} else {
			c.Draft = us
		}
	}
	return c, nil
}

// settleDraft answers d as the flood's Settled hook would once it was
// sent and answered 202; a Follow, and a Like or Announce of the kind
// timed, as one that never left, so its pair is free again and the
// senders never run out of posts to react to (an Undo's feeder Likes stay
// sent: the Undo frees their pairs).
func settleDraft(gen *traffic.Generator, d traffic.Draft, timed record.ActivityKind) {
	p, dl := (&traffic.Ticket{Vocab: d.Vocab}).Attach(&flood.Prepared{Type: d.Type, URL: d.URL}), record.Outcome{Sent: true, Class: record.Class202}
	switch {
	case d.Type == record.TypeFollow:
		traffic.TicketOf(p).Follow, dl = &traffic.FollowRegistration{Local: d.Sender.ID, Remote: d.Persona.ID, FollowID: d.ID}, record.Outcome{}
	case d.Type == timed && (timed == record.TypeLike || timed == record.TypeAnnounce):
		dl = record.Outcome{}
	}
	gen.Settled(traffic.TicketOf(p), dl)
}
