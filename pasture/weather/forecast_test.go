package weather

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// hosts is a world of n origins named as the crowd names them.
func hosts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("flood%d.test", i+1)
	}
	return out
}

func TestAssign(t *testing.T) {
	for _, c := range []struct {
		name   string
		spec   string
		n      int
		counts map[Kind]int // how many origins each kind gets
	}{
		// 5 % of 20 is one origin; each rule takes its own.
		{"one each of twenty", "down=5%,gone=5%,flaky=5%", 20, map[Kind]int{Down: 1, Gone: 1, Flaky: 1}},
		// A share too small for one origin still takes one.
		{"at least one", "nxdomain=1%", 20, map[Kind]int{NXDomain: 1}},
		// Shares of a large world are rounded.
		{"rounded", "down=10%,slow=2.5%", 1000, map[Kind]int{Down: 100, Slow: 25}},
		// Listed origins come first and a share is drawn from the rest.
		{"listed and shared", "down=flood1.test+flood2.test,down=50%", 4, map[Kind]int{Down: 4}},
		// All of them.
		{"everything", "blackhole=100%", 7, map[Kind]int{Blackhole: 7}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec, err := ParseSpec(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Assign(spec, hosts(c.n), 1)
			if err != nil {
				t.Fatal(err)
			}
			got := map[Kind]int{}
			for _, a := range f.Origins() {
				got[a.Kind]++
				if f.Condition(a.Host) != a.Condition {
					t.Errorf("Condition(%s) = %v, Origins says %v", a.Host, f.Condition(a.Host), a.Condition)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.counts) {
				t.Errorf("counts %v, want %v", got, c.counts)
			}
		})
	}
}

func TestAssignIsFixedBySeed(t *testing.T) {
	spec, _ := ParseSpec("down=10%,slow=10%")
	a, _ := Assign(spec, hosts(100), 7)
	b, _ := Assign(spec, hosts(100), 7)
	c, _ := Assign(spec, hosts(100), 8)
	if fmt.Sprint(a.Origins()) != fmt.Sprint(b.Origins()) {
		t.Error("the same seed drew different origins")
	}
	if fmt.Sprint(a.Origins()) == fmt.Sprint(c.Origins()) {
		t.Error("another seed drew the same 20 of 100 origins")
	}
	// Not the first origins of the world: the draw is spread.
	first := 0
	for _, o := range a.Origins() {
		var i int
		fmt.Sscanf(o.Host, "flood%d.test", &i)
		if i <= 20 {
			first++
		}
	}
	if first == 20 {
		t.Error("the draw took the world's first 20 origins")
	}
}

func TestAssignRefuses(t *testing.T) {
	for _, c := range []struct {
		spec, names string
	}{
		{"down=flood9.test", "not one of the crowd's origins"},            // not in the world
		{"down=5", "a share of them needs %: down=5%"},                    // a share without its %
		{"flaky=50:0.25", "needs %: flaky=50%:0.25"},                      // its parameters kept
		{"down=1e3", "1e3 is not one of the crowd's origins"},             // not written as a share: no hint
		{"down=100%,gone=10%", "needs 1 origin, and only 0"},              // one, said as one
		{"down=flood1.test,gone=flood1.test", "already down"},             // two conditions
		{"down=60%,gone=60%", "only 2 of the crowd's 5 are left"},         // shares beyond the world
		{"down=flood1.test+flood2.test,gone=100%", "only 3 of the crowd"}, // lists leave fewer
	} {
		spec, err := ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Assign(spec, hosts(5), 1)
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("Assign(%q) = %v, want ErrSpec naming %q", c.spec, err, c.names)
		}
		// The hint only for what is written as a share, less its %.
		if hint := strings.Contains(err.Error(), "needs %"); hint != strings.Contains(c.names, "needs %") {
			t.Errorf("Assign(%q) = %v: a hint about %% %v, want %v", c.spec, err, hint, !hint)
		}
	}
}

func TestSkyChangesAtRunTime(t *testing.T) {
	var sky Sky
	if sky.Now() != nil || sky.Condition("flood1.test").Kind != Clear {
		t.Fatal("the zero sky is not clear")
	}
	changed := sky.Changed()
	spec, _ := ParseSpec("down=flood1.test")
	f, _ := Assign(spec, hosts(2), 1)
	sky.Set(f)
	select {
	case <-changed:
	default:
		t.Fatal("Set did not close Changed")
	}
	if sky.Condition("flood1.test").Kind != Down || sky.Condition("flood2.test").Kind != Clear {
		t.Errorf("after Set: %v %v", sky.Condition("flood1.test"), sky.Condition("flood2.test"))
	}
	sky.Set(nil)
	if sky.Now() != nil || sky.Condition("flood1.test").Kind != Clear {
		t.Error("Set(nil) did not clear")
	}
	var none *Sky
	if none.Condition("flood1.test").Kind != Clear || none.Changed() != nil {
		t.Error("a nil sky is not always clear")
	}
}
