package flood

import (
	"testing"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// BenchmarkVerbs is what each kind costs the generator per send: drafting
// it (draft/KIND: drawing, building, encoding) and drafting and signing it
// (signed/KIND, RSA-2048 as a pipeline's signer does). Every Undo, Update
// and Delete finds something sent to act on (each draft is settled 2xx).
// Compare each kind's ns/op with Create's in the same run:
//
//	go test -run '^$' -bench Verbs -benchtime 2000x ./flood/
func BenchmarkVerbs(b *testing.B) {
	w := testWorld(b, 2, 4)
	signer := signing.NewSigner(signing.SignerOptions{})
	for _, mode := range []string{"draft", "signed"} {
		for _, k := range allVerbs().Weights() {
			b.Run(mode+"/"+string(k.Kind), func(b *testing.B) {
				mix := record.Mix{Create: 1, Like: 1, Follow: 1, Announce: 1}
				g := mustGenerator(b, GeneratorConfig{Senders: w.Actors(), Personas: fakePersonas(3), Mix: mix, Seed: 3})
				s := g.Stream()
				// Something to undo, edit and delete first.
				for range 200 {
					d := mustDraft(b, s)
					g.Settled(&Prepared{Type: d.Type, URL: d.URL, Vocab: d.Vocab}, Delivery{Sent: true, Class: record.Class202})
				}
				g.cum, g.kinds = []float64{1}, []record.ActivityKind{k.Kind}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					d := mustDraft(b, s)
					if mode == "signed" {
						if _, err := Prepare(signer, d); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					g.Settled(&Prepared{Type: d.Type, URL: d.URL, Vocab: d.Vocab}, Delivery{Sent: true, Class: record.Class202})
					b.StartTimer()
				}
			})
		}
	}
}
