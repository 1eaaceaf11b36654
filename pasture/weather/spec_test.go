package weather

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []Rule
		back     string // String of the parse: "" means in itself
	}{
		// The example, every condition by share.
		{"every kind by share", "down=5%,blackhole=2%,slow=5%:30s,flaky=5%:0.5,limited=2%:60s,gone=1%,nxdomain=1%,tls-expired=1%,tls-wrong-name=1%",
			[]Rule{
				{Condition{Kind: Down}, 5, nil, 0},
				{Condition{Kind: Blackhole}, 2, nil, 0},
				{Condition{Kind: Slow, Delay: 30 * time.Second, DocShare: DefaultSlowDocShare}, 5, nil, 0},
				{Condition{Kind: Flaky, P: 0.5}, 5, nil, 0},
				{Condition{Kind: Limited, Delay: time.Minute}, 2, nil, 0},
				{Condition{Kind: Gone}, 1, nil, 0},
				{Condition{Kind: NXDomain}, 1, nil, 0},
				{Condition{Kind: TLSExpired}, 1, nil, 0},
				{Condition{Kind: TLSWrongName}, 1, nil, 0},
			},
			"down=5%,blackhole=2%,slow=5%:30s:0.5,flaky=5%:0.5,limited=2%:1m0s,gone=1%,nxdomain=1%,tls-expired=1%,tls-wrong-name=1%"},
		// Origins by name, joined by +; names are lower-cased.
		{"listed origins", "down=Flood3.test+flood4.test", []Rule{{Condition{Kind: Down}, 0, []string{"flood3.test", "flood4.test"}, 0}}, "down=flood3.test+flood4.test"},
		// Parameters left out take their defaults.
		{"defaults", "slow=1%,flaky=1%,limited=1%", []Rule{
			{Condition{Kind: Slow, Delay: DefaultSlowDelay, DocShare: DefaultSlowDocShare}, 1, nil, 0},
			{Condition{Kind: Flaky, P: DefaultFlakyP}, 1, nil, 0},
			{Condition{Kind: Limited, Delay: DefaultRetryAfter}, 1, nil, 0},
		}, "slow=1%:30s:0.5,flaky=1%:0.5,limited=1%:1m0s"},
		// An empty parameter keeps its default: a slow share alone.
		{"a default kept", "slow=1%::0.2,flaky=1%:", []Rule{
			{Condition{Kind: Slow, Delay: DefaultSlowDelay, DocShare: 0.2}, 1, nil, 0},
			{Condition{Kind: Flaky, P: DefaultFlakyP}, 1, nil, 0},
		}, "slow=1%:30s:0.2,flaky=1%:0.5"},
		// Slow deliveries, no slow document: a share of 0.
		{"no slow documents", "slow=1%:2s:0", []Rule{{Condition{Kind: Slow, Delay: 2 * time.Second, DocShare: 0}, 1, nil, 0}}, ""},
		// Retry-After in whole seconds alone, as the header says it.
		{"Retry-After in seconds", "limited=1%:60", []Rule{{Condition{Kind: Limited, Delay: time.Minute}, 1, nil, 0}}, "limited=1%:1m0s"},
		// slow's second parameter is the share of documents that wait.
		{"slow documents", "slow=flood2.test:2s:1", []Rule{{Condition{Kind: Slow, Delay: 2 * time.Second, DocShare: 1}, 0, []string{"flood2.test"}, 0}}, "slow=flood2.test:2s:1"},
		// A fractional share survives the round trip exactly.
		{"fractional share", "gone=0.07%", []Rule{{Condition{Kind: Gone}, 0.07, nil, 0}}, ""},
		// Spaces around rules are allowed.
		{"spaces", " down=1% , gone=1% ", []Rule{{Condition{Kind: Down}, 1, nil, 0}, {Condition{Kind: Gone}, 1, nil, 0}}, "down=1%,gone=1%"},
		// Empty and "clear" are clear weather.
		{"empty", "", nil, ""},
		{"clear", "clear", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSpec(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Rules) != fmt.Sprint(c.want) {
				t.Errorf("ParseSpec(%q) =\n %v\nwant\n %v", c.in, got.Rules, c.want)
			}
			back := c.back
			if back == "" && c.in != "clear" {
				back = c.in
			}
			if got.String() != back {
				t.Errorf("String() = %q, want %q", got.String(), back)
			}
			again, err := ParseSpec(got.String())
			if err != nil || fmt.Sprint(again) != fmt.Sprint(got) {
				t.Errorf("the spec's String does not read back: %v %v", again, err)
			}
		})
	}
}

func TestParseSpecRefuses(t *testing.T) {
	for _, c := range []struct {
		in, names string // the error names this
	}{
		{"down", "KIND=TARGET"},                          // no target
		{"drizzle=5%", "unknown condition"},              // not a condition
		{"clear=5%", "unknown condition"},                // clear is not given to origins
		{"down=", "no target"},                           // empty target
		{"down=0%", "percentage"},                        // a share of nothing
		{"down=101%", "percentage"},                      // more than all
		{"down=NaN%", "percentage"},                      // not a number
		{"down=a.test+a.test", "listed twice"},           // one origin twice
		{"down=a.test+", "host name"},                    // an empty name
		{"down=1%:5s", "takes no parameter"},             // down has none
		{"slow=1%:fast", "delay"},                        // not a duration
		{"slow=1%:-1s", "delay"},                         // negative
		{"slow=1%:2h", "delay"},                          // longer than the bound
		{"slow=1%:1s:2", "document share"},               // a share over 1
		{"slow=1%:1s:0.5:9", "at most"},                  // too many parameters
		{"flaky=1%:0", "probability"},                    // never flaky
		{"flaky=1%:1.5", "probability"},                  // more than always
		{"limited=1%:1500ms", "whole number of seconds"}, // Retry-After is in seconds
		{"limited=5%:60 slow=5%::0.2", "rules are joined by commas, not spaces: limited=5%:60,slow=5%::0.2"}, // two rules a space apart
		{"limited=1%:0", `Retry-After "0" is not a number of seconds in [1, 3600]`},                          // seconds alone, none
		{"limited=1%:7200", `Retry-After "7200"`},                                                            // seconds alone, past the bound
		{"limited=1%:36028797018964028", `Retry-After "36028797018964028"`},                                  // so many seconds a Duration of them wraps round to 60 s
	} {
		_, err := ParseSpec(c.in)
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("ParseSpec(%q) = %v, want ErrSpec naming %q", c.in, err, c.names)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"down=5%,slow=5%:30s:0.5", "limited=a.test+b.test:60s", "flaky=1%:0.25", "clear", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseSpec(s)
		if err != nil {
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("ParseSpec(%q) failed without ErrSpec: %v", s, err)
			}
			return
		}
		again, err := ParseSpec(spec.String())
		if err != nil || again.String() != spec.String() {
			t.Fatalf("ParseSpec(%q).String() = %q does not read back: %q %v", s, spec.String(), again.String(), err)
		}
	})
}
