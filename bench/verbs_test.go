package main

import (
	"math"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestVerbRow: a verb's ratio to Create is the median of its rounds' own
// ratios, each round's kind against the Create timed beside it, so a
// machine whose speed drifts between rounds moves both sides of a pair
// alike and not the row.
func TestVerbRow(t *testing.T) {
	like := verbKind{record.TypeLike, "like=1"}
	pair := func(kind, create float64) verbPair {
		return verbPair{Kind: verbCost{Draft: 5, Signed: kind}, Create: verbCost{Draft: 16, Signed: create}}
	}
	for _, c := range []struct {
		name  string
		pairs []verbPair
		ratio float64
		met   bool
	}{
		// The machine slows by half in the middle rounds: each pair costs
		// alike, so the row is 1.00, where the two sides' medians, taken
		// apart, would compare a fast Create with a slow Like (1 500 ÷
		// 1 000, missed).
		{"drift between rounds", []verbPair{pair(1000, 1000), pair(1500, 1500), pair(1500, 1500), pair(1500, 1000), pair(1000, 1000)}, 1.00, true},
		// A kind that really costs more misses, whatever the drift.
		{"a costlier kind", []verbPair{pair(1300, 1000), pair(1950, 1500), pair(1300, 1000)}, 1.30, false},
		// An odd round out does not move the median.
		{"one noisy round", []verbPair{pair(1000, 1000), pair(2000, 1000), pair(1010, 1000)}, 1.01, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := verbRow(like, c.pairs)
			if got := row.Met != nil && *row.Met; math.Abs(row.Ratio-c.ratio) > 0.005 || row.Met == nil || got != c.met {
				t.Errorf("ratio %.3f met %v (judged %v), want %.2f %v", row.Ratio, got, row.Met != nil, c.ratio, c.met)
			}
			if row.Key != verbRowKey(record.TypeLike) || !strings.Contains(row.Notes, "rounds' ratios") {
				t.Errorf("key %q notes %q", row.Key, row.Notes)
			}
		})
	}
	// No round ran (the run was interrupted): no ratio, nothing met.
	if row := verbRow(like, nil); row.Ratio != 0 || row.Met != nil {
		t.Errorf("no rounds: %+v", row)
	}
}
