package flood

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
)

func TestExitCode(t *testing.T) {
	r := gateRecord(t)
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

// gateRecord is a run of Creates (5 % 429s, 25 dropped) and Likes at 2 ms.
func gateRecord(t testing.TB) *record.Record {
	t.Helper()
	create := recordtest.Sends(1000, func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }, recordtest.Every(20, record.Class429))
	like := recordtest.Sends(500, func(int) time.Duration { return 2 * time.Millisecond }, recordtest.Always(record.Class202))
	create.Counts.Offered += 25
	create.Counts.Dropped = 25
	r, err := recordtest.Run(t0, 10*time.Second, map[string]*record.Stats{"Create": create, "Like": like}).Record(record.Settings{Label: "gates"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
