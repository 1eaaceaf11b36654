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

// TestParseSigning: the one reading of --signing.
func TestParseSigning(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SigningMode
		err  bool
	}{
		{"", SigningPipeline, false},       // unset: the default
		{"presign", SigningPresign, false}, // named
		{"JIT", SigningJIT, false},         // any case
		{"batch", "", true},                // no such mode
	} {
		got, err := ParseSigning(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseSigning(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// FuzzParseVocabulary: whatever the input, the parsers either refuse it or
// return a value they read back as itself.
func FuzzParseVocabulary(f *testing.F) {
	for _, s := range []string{"", "constant", "poisson", "pipeline", "presign", "jit", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := ParseArrivals(s); err == nil {
			if b, err := ParseArrivals(string(a)); err != nil || b != a {
				t.Errorf("ParseArrivals(%q) = %q does not read back: %q, %v", s, a, b, err)
			}
		}
		if m, err := ParseSigning(s); err == nil {
			if n, err := ParseSigning(string(m)); err != nil || n != m {
				t.Errorf("ParseSigning(%q) = %q does not read back: %q, %v", s, m, n, err)
			}
		}
	})
}
