//go:build !race

// Shares of 10 000 drafts drawn from one stream: one goroutine, nothing for
// the race detector to watch, and it slows the drafting twentyfold;
// .ci/run runs this file without it.

package traffic

import (
	"math"
	"slices"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

func TestMixProportions(t *testing.T) {
	for _, c := range []struct {
		name string
		mix  record.Mix
	}{
		{"the default mix", record.DefaultMix()},
		{"equal weights", record.Mix{Create: 1, Like: 1, Follow: 1}},
		{"follows only", record.Mix{Follow: 1}},
		{"no likes", record.Mix{Create: 3, Follow: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Enough senders that no Follow runs out of senders that do not
			// follow its persona yet (TestFollowsOnlyNewPairs covers that).
			g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(10000), Personas: fakePersonas(4), Mix: c.mix, Seed: 7})
			s := g.Stream()
			const n = 10000
			count := map[record.ActivityKind]int{}
			for range n {
				count[mustDraft(t, s).Type]++
			}
			sum := c.mix.Create + c.mix.Like + c.mix.Follow
			for typ, w := range map[record.ActivityKind]float64{record.TypeCreate: c.mix.Create, record.TypeLike: c.mix.Like, record.TypeFollow: c.mix.Follow} {
				got, want := float64(count[typ])/n, w/sum
				// 0.02 is over 4 standard deviations of a share of 10k draws.
				if math.Abs(got-want) > 0.02 {
					t.Errorf("%s: share %.3f, want %.3f ± 0.02", typ, got, want)
				}
			}
		})
	}
}

func TestZipfSkewsSenders(t *testing.T) {
	share := func(zipf float64) []float64 {
		g := mustGenerator(t, GeneratorConfig{Senders: fakeSenders(20), Personas: fakePersonas(2), Zipf: zipf, Seed: 3})
		s := g.Stream()
		idx := map[string]int{}
		for i, a := range g.cfg.Senders {
			idx[a.ID] = i
		}
		counts := make([]float64, 20)
		const n = 10000
		for range n {
			counts[idx[mustDraft(t, s).Sender.ID]]++
		}
		for i := range counts {
			counts[i] /= n
		}
		return counts
	}
	uni := share(0)
	if m := slices.Max(uni); m > 0.08 {
		t.Errorf("uniform senders: busiest has %.3f of the sends, want about 0.05", m)
	}
	z := share(1.5)
	// Zipf(1.5) over 20: the first sender takes ~ 1/H(20,1.5) ≈ 0.44.
	if z[0] < 0.35 || z[0] < 2*z[1] || z[1] < z[5] {
		t.Errorf("zipf 1.5: shares %.3f, %.3f, … %.3f: want the first ≈ 0.44 and falling", z[0], z[1], z[5])
	}
	for _, bad := range []float64{0.5, 1, -2, math.Inf(1), math.NaN()} {
		if _, err := NewGenerator(GeneratorConfig{Senders: fakeSenders(2), Personas: fakePersonas(1), Zipf: bad}); err == nil {
			t.Errorf("zipf %g accepted, want > 1 or 0", bad)
		}
	}
}
