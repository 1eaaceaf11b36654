package record

import (
	"reflect"
	"testing"
)

// TestMergeBoosters: two generators' booster set-ups add up, each shard
// following its own crowd; a generator that made none leaves the other's.
func TestMergeBoosters(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b *Boosters
		want *Boosters
	}{
		// Neither floods with a set-up: none in the merge.
		{"none", nil, nil, nil},
		// One shard made one: it stands alone.
		{"one", &Boosters{Actors: 40, Followed: 38, Personas: 3}, nil, &Boosters{Actors: 40, Followed: 38, Personas: 3}},
		{"other", nil, &Boosters{Actors: 40, Followed: 40, Personas: 3}, &Boosters{Actors: 40, Followed: 40, Personas: 3}},
		// Two shards, each its own half of the crowd, the same personas.
		{"two shards", &Boosters{Actors: 40, Followed: 38, Personas: 3}, &Boosters{Actors: 60, Followed: 60, Personas: 3},
			&Boosters{Actors: 100, Followed: 98, Personas: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeBoosters(tc.a, tc.b)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("merge %+v and %+v: %+v, want %+v", tc.a, tc.b, got, tc.want)
			}
			if got != nil && (got == tc.a || got == tc.b) {
				t.Error("the merge shares a record's section instead of copying it")
			}
		})
	}
}
