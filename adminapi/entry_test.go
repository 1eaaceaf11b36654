package adminapi_test

import (
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

func TestActivityTypesAreTheKnownOnes(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range adminapi.ActivityTypes() {
		if !adminapi.IsActivityType(typ) {
			t.Errorf("ActivityTypes lists %q, IsActivityType does not know it", typ)
		}
		if seen[typ] {
			t.Errorf("ActivityTypes lists %q twice", typ)
		}
		seen[typ] = true
	}
	for _, tc := range []struct {
		typ  string
		want bool
	}{
		{"Follow", true},     // the vocabulary's own
		{"EmojiReact", true}, // an extension servers send
		{"follow", false},    // the canonical case only: the caller folds when it means to
		{"Folow", false},     // a typo
		{"Note", false},      // an object type, not an activity
		{"", false},          // nothing
	} {
		if got := adminapi.IsActivityType(tc.typ); got != tc.want {
			t.Errorf("IsActivityType(%q) = %v, want %v", tc.typ, got, tc.want)
		}
	}
}
