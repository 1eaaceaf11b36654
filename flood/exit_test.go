package flood

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

func TestExitCode(t *testing.T) {
	r := recordtest.Gated(t)
	check := func(exprs ...string) ([]record.GateResult, error) {
		gates, err := record.ParseGates(exprs)
		if err != nil {
			return nil, err
		}
		res, _ := record.CheckGates(r, gates)
		return res, nil
	}
	for _, tc := range []struct {
		name  string
		exprs []string
		err   error
		want  int
	}{
		{"all gates met", []string{"Like.p95<3ms", "errors<5%"}, nil, 0},
		{"no gates", nil, nil, 0},
		{"one gate missed", []string{"Like.p95<3ms", "errors<1%"}, nil, 1},
		{"no data is a miss", []string{"Follow.p95<1s"}, nil, 1},
		{"usage error", []string{"p95<5%"}, nil, 2},
		{"invalid plan", nil, fmt.Errorf("flood: %w", ErrInvalidPlan), 2},
		{"run failed", nil, errors.New("dial tcp: refused"), 1},
	} {
		res, err := check(tc.exprs...)
		if tc.err != nil {
			err = tc.err
		}
		if got := ExitCode(err, res); got != tc.want {
			t.Errorf("%s: exit %d, want %d (%v)", tc.name, got, tc.want, err)
		}
	}
	res, _ := check("errors<1%")
	if s := res[0].String(); !strings.Contains(s, "missed") || !strings.Contains(s, "3.333%") {
		t.Errorf("result text %q", s)
	}
}
