package flood

import (
	"errors"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestParsePriority: the one reading of --dispatcher-priority.
func TestParsePriority(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Priority
		err  bool
	}{
		{"", PriorityAuto, false},               // unset: the default, auto
		{"auto", PriorityAuto, false},           // real-time where it helps
		{" RealTime ", PriorityRealtime, false}, // any case, spaces trimmed
		{"normal", PriorityNormal, false},       // none asked for
		{"high", "", true},                      // not a priority the flood has
		{"fifo", "", true},                      // a policy is the crowd's to choose
	} {
		got, err := ParsePriority(tc.in)
		var ue *record.UsageError
		if (err != nil) != tc.err || got != tc.want || err != nil && (!errors.As(err, &ue) || !strings.Contains(err.Error(), "--dispatcher-priority")) {
			t.Errorf("ParsePriority(%q) = %q, %v; want %q, a usage error naming --dispatcher-priority: %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestPriorityRealtimeAt: which schedules each priority raises the
// dispatcher of, and the reason auto gives where it does not.
func TestPriorityRealtimeAt(t *testing.T) {
	for _, tc := range []struct {
		prio  Priority
		rate  float64
		raise bool
		why   string // in the reason; "" for none
	}{
		{PriorityAuto, 1, true, ""},                                          // a trickle: raised
		{PriorityAuto, realtimeAutoMax, true, ""},                            // up to and at the limit
		{PriorityAuto, realtimeAutoMax + 0.5, false, "above 5000/s"},         // past it: the normal policy, and why
		{PriorityAuto, 9_000, false, "held up the threads sharing its CPUs"}, // the reason names the harm
		{PriorityRealtime, 9_000, true, ""},                                  // asked for outright: raised
		{PriorityNormal, 100, false, ""},                                     // never, and nothing to explain
	} {
		raise, why := tc.prio.realtimeAt(tc.rate)
		if raise != tc.raise || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s at %v/s: raise %v (%q), want %v naming %q", tc.prio, tc.rate, raise, why, tc.raise, tc.why)
		}
	}
}
