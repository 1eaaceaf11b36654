package flood

import (
	"errors"

	"github.com/crowdfed/crowd/flood/record"
)

// ExitCode is the flood's exit status: 2 when err is (or wraps) a
// *UsageError or ErrInvalidPlan, 1 for any other error or when a gate
// result does not hold, 0 otherwise.
func ExitCode(err error, results []record.GateResult) int {
	var ue *record.UsageError
	if errors.As(err, &ue) || errors.Is(err, ErrInvalidPlan) {
		return 2
	}
	if err != nil {
		return 1
	}
	for _, r := range results {
		if !r.Holds {
			return 1
		}
	}
	return 0
}
