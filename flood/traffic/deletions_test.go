package traffic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// TestDeletedObjectsAreGoneBeforeTheDeleteLeaves runs Deletes (of notes the
// run sent and of leavers) through the engine from sources that draft
// ahead, against a target that looks, as each Delete arrives, whether the
// crowd's state already has its object gone, and answers every other
// Delete 500. Every Delete found its object gone; every object a sent
// Delete named stays gone whatever the answer; every object of a Delete
// drafted and never sent (the source's tail) stands again.
func TestDeletedObjectsAreGoneBeforeTheDeleteLeaves(t *testing.T) {
	for _, c := range []struct {
		name   string
		source func(t *testing.T, g *Generator) (flood.Source, func())
	}{
		// A pipeline drafts a buffer ahead and discards it at the end.
		{"pipeline", func(t *testing.T, g *Generator) (flood.Source, func()) {
			pl := NewPipeline(g, testSigner(), PipelineOptions{Workers: 2, Buffer: 32})
			return pl, pl.Close
		}},
		// Presign drafts every send before the first leaves; its tail of 40 is never sent.
		{"presign", func(t *testing.T, g *Generator) (flood.Source, func()) {
			ps, err := Presign(context.Background(), g, testSigner(), 200, PresignOptions{Window: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return ps, ps.Close
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // a world of its own
			w := testWorld(t, 1, 3)
			var marked []string // every object a drafted Delete named
			toWorld := WorldChanges(w)
			del := NewDeletions(func(ctx context.Context, items []actors.Change) error {
				for _, it := range items {
					if it.Deleted != "" {
						marked = append(marked, it.ID) // one call at a time: the worker's
					}
				}
				return toWorld(ctx, items)
			}, 0)
			g := mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: fakePersonas(2), Seed: 9,
				Mix: record.Mix{Create: 1, Delete: 2}, Vocab: VocabConfig{Deletions: del}})
			var mu sync.Mutex
			var arrived, notGone []string
			n := 0
			target := rtFunc(func(r *http.Request) (*http.Response, error) {
				var act struct {
					Type   string
					Object json.RawMessage
				}
				b, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(b, &act); err != nil || act.Type != "Delete" {
					return answer(r, http.StatusAccepted, nil), nil
				}
				var id string
				if json.Unmarshal(act.Object, &id) != nil {
					var tomb struct{ ID string }
					json.Unmarshal(act.Object, &tomb)
					id = tomb.ID
				}
				mu.Lock()
				defer mu.Unlock()
				arrived = append(arrived, id)
				if _, gone := w.Changes.Deleted(id); !gone {
					notGone = append(notGone, id)
				}
				n++
				if n%2 == 0 {
					return answer(r, http.StatusInternalServerError, nil), nil // refused: it stays deleted
				}
				return answer(r, http.StatusAccepted, nil), nil
			})
			src, closeSrc := c.source(t, g)
			_, err := recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: 160}, Pacer: mustConstant(t, 5000), Source: src, Transport: target,
				Sleep: time.Sleep}, Settle(g.Settled))
			if err != nil {
				t.Fatal(err)
			}
			closeSrc() // the drafts never sent are given back
			// Every Delete drafted was sent or given back: a pipeline under
			// load may have drafted none ahead to give back, so only
			// presign's never-sent tail must be restored.
			st := del.Close(context.Background())
			if st.Failed > 0 || st.Marked == 0 || st.Marked != int64(len(arrived))+st.Restored || (c.name == "presign" && st.Restored == 0) {
				t.Fatalf("deletions %+v, %d Deletes arrived: want every one marked either sent or restored, none failed", st, len(arrived))
			}
			if len(arrived) == 0 || len(notGone) > 0 {
				t.Errorf("%d Deletes arrived, %d of them before their object was gone: %v", len(arrived), len(notGone), notGone)
			}
			sent := map[string]bool{}
			for _, id := range arrived {
				sent[id] = true
			}
			for _, id := range marked {
				if _, gone := w.Changes.Deleted(id); gone != sent[id] {
					t.Errorf("%s: gone %v, its Delete sent %v: the crowd's state must hold the sent Deletes' deletions alone", id, gone, sent[id])
				}
			}
			if len(marked) <= len(arrived) {
				t.Errorf("%d drafted, %d sent: the test wants a tail of drafts never sent", len(marked), len(arrived))
			}
		})
	}
}
