package actors

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateRefusesMoreShardsThanOrigins: a shard past the last origin
// would serve a world of none (the inbox refused it after the keys, as "no
// world"); Validate names --shard and --origins instead, before anything.
func TestValidateRefusesMoreShardsThanOrigins(t *testing.T) {
	for _, c := range []struct {
		name    string
		origins int
		shard   Shard
		say     string // "" when the shard is fine
	}{
		// The walk: the default 20 origins, shard 24 of 25.
		{"last of 25 over 20", 20, Shard{I: 24, N: 25}, "--shard 24/25: shard 24 of 25 holds no origin of the 20 (--origins): at most 20 shards"},
		// The first shard past the last origin.
		{"first empty shard", 20, Shard{I: 20, N: 21}, "shard 20 of 21 holds no origin of the 20 (--origins)"},
		// A shard that holds an origin, of a fleet whose shards 20..24 hold none.
		{"holds one, siblings none", 20, Shard{I: 3, N: 25}, "--shard 3/25: 25 shards of the 20 origins (--origins) leave shards 20 to 24 with no origin: at most 20 shards"},
		// As many shards as origins: one origin each.
		{"one origin a shard", 20, Shard{I: 19, N: 20}, ""},
		// Fewer shards than origins.
		{"two shards", 3, Shard{I: 1, N: 2}, ""},
		// No shard at all.
		{"no shard", 1, Shard{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Origins: c.origins, Actors: 1, Domain: "flood%d.test", StateDir: t.TempDir(), Shard: c.shard}
			err := cfg.Validate()
			if c.say == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.say) {
				t.Fatalf("Validate = %v, want ErrConfig saying %q", err, c.say)
			}
		})
	}
}

func TestOriginNumber(t *testing.T) {
	c := Config{Origins: 20, Domain: "flood%d.test"}
	for _, tc := range []struct {
		host string
		n    int
		ok   bool
	}{
		{"flood7.test", 7, true},    // one of the world's
		{"flood99.test", 99, true},  // the pattern's, past the world
		{"FLOOD3.TEST.", 3, true},   // any case, a trailing dot
		{"flood.test", 0, false},    // no number
		{"floodx.test", 0, false},   // not a number
		{"flood-1.test", 0, false},  // not a number of origins
		{"sut.test", 0, false},      // another name
		{"flood7.test.x", 0, false}, // more after the suffix
	} {
		if n, ok := c.OriginNumber(tc.host); n != tc.n || ok != tc.ok {
			t.Errorf("OriginNumber(%q) = %d, %v; want %d, %v", tc.host, n, ok, tc.n, tc.ok)
		}
	}
}
