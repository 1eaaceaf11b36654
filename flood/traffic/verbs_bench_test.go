package traffic

import (
	"context"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// verbFeeders are the kinds whose 2xx sends fill the pool a kind acts on:
// an Undo takes back a Like, an Update edits and a Delete deletes a note
// a Create sent. A kind not here needs nothing sent before it.
var verbFeeders = map[record.ActivityKind]record.ActivityKind{
	record.TypeUndo: record.TypeLike, record.TypeUpdate: record.TypeCreate, record.TypeDelete: record.TypeCreate,
}

// BenchmarkVerbs is what each kind costs the generator per send: drafting
// it (draft/KIND: drawing, building, encoding) and drafting and signing it
// (signed/KIND, RSA-2048 as a pipeline's signer does), each also as a
// ratio to Create's in the same run (the x_create metric; target ≤ 1.2;
// reported only when the Create sub-benchmark ran first in the process, so
// a -bench filter must keep it: -bench 'Verbs/signed/(Create|Like)').
// No kind's pool runs dry, so every timed draft is of its kind (checked):
// before each, with the timer stopped, one send of the kind's feeder is
// drafted and answered 2xx (something to undo, edit or delete), and a
// Follow gives its pair back (as one that never left does), so the
// senders never run out of personas to follow.
//
//	go test -run '^$' -bench Verbs -benchtime 2000x ./flood/
func BenchmarkVerbs(b *testing.B) {
	w := testWorld(b, 2, 4)
	signer := signing.NewSigner(signing.SignerOptions{})
	for _, mode := range []string{"draft", "signed"} {
		var create time.Duration // Create's cost per send in this mode, measured first
		for _, k := range allVerbs().Weights() {
			b.Run(mode+"/"+string(k.Kind), func(b *testing.B) {
				// A Delete records its object's deletion as it is drafted, as a run does.
				deletions := NewDeletions(WorldChanges(w), 0)
				defer deletions.Close(context.Background())
				g := mustGenerator(b, GeneratorConfig{Senders: w.Actors(), Personas: fakePersonas(3), Mix: allVerbs(), Seed: 3,
					Vocab: VocabConfig{Deletions: deletions}})
				s := g.Stream()
				only := func(kind record.ActivityKind) { g.cum, g.kinds = []float64{1}, []record.ActivityKind{kind} }
				settle := func(d Draft) {
					p, dl := (&Ticket{Vocab: d.Vocab}).Attach(&flood.Prepared{Type: d.Type, URL: d.URL}), record.Outcome{Sent: true, Class: record.Class202}
					switch {
					case d.Type == record.TypeFollow:
						// Never left: the pair may follow again.
						TicketOf(p).Follow, dl = &FollowRegistration{Local: d.Sender.ID, Remote: d.Persona.ID, FollowID: d.ID}, record.Outcome{}
					case d.Type == k.Kind && (k.Kind == record.TypeLike || k.Kind == record.TypeAnnounce):
						// Never left: the sender may react to the post again.
						dl = record.Outcome{}
					}
					g.Settled(TicketOf(p), dl)
				}
				feeder, fed := verbFeeders[k.Kind]
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					if fed {
						only(feeder)
						settle(mustDraft(b, s))
					}
					only(k.Kind)
					b.StartTimer()
					d := mustDraft(b, s)
					if mode == "signed" {
						if _, err := Prepare(signer, d); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					if d.Type != k.Kind {
						b.Fatalf("drafted a %s for a %s: its pool ran dry", d.Type, k.Kind)
					}
					settle(d)
					b.StartTimer()
				}
				perSend := b.Elapsed() / time.Duration(b.N)
				if k.Kind == record.TypeCreate {
					create = perSend
				}
				if create > 0 {
					b.ReportMetric(float64(perSend)/float64(create), "x_create")
				}
			})
		}
	}
}
