package traffic

import "testing"

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

// FuzzParseSigning: whatever the input, ParseSigning either refuses it or
// returns a value it reads back as itself.
func FuzzParseSigning(f *testing.F) {
	for _, s := range []string{"", "pipeline", "presign", "jit", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := ParseSigning(s); err == nil {
			if n, err := ParseSigning(string(m)); err != nil || n != m {
				t.Errorf("ParseSigning(%q) = %q does not read back: %q, %v", s, m, n, err)
			}
		}
	})
}
