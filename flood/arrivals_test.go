package flood

import (
	"errors"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestParseArrivals: the one reading of --arrivals.
func TestParseArrivals(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Arrivals
		err  bool
	}{
		{"", ArrivalsConstant, false},         // unset: the absolute schedule
		{"constant", ArrivalsConstant, false}, // named
		{" Poisson ", ArrivalsPoisson, false}, // any case, spaces trimmed
		{"uniform", "", true},                 // not an arrival process the flood has
		{"constant,poisson", "", true},        // one process per run
	} {
		got, err := ParseArrivals(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseArrivals(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
		var ue *record.UsageError
		if err != nil && (!errors.As(err, &ue) || !strings.Contains(err.Error(), "--arrivals")) {
			t.Errorf("ParseArrivals(%q): %v is not a usage error naming --arrivals", tc.in, err)
		}
	}
}

// FuzzParseArrivals: whatever the input, ParseArrivals either refuses it
// or returns a value it reads back as itself.
func FuzzParseArrivals(f *testing.F) {
	for _, s := range []string{"", "constant", "poisson", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := ParseArrivals(s); err == nil {
			if b, err := ParseArrivals(string(a)); err != nil || b != a {
				t.Errorf("ParseArrivals(%q) = %q does not read back: %q, %v", s, a, b, err)
			}
		}
	})
}
