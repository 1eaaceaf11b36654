package main

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/loopback"
)

// TestServeWeatherRefusesNamingTheFlag: a spec serve cannot read, or one
// its world cannot fill, exits 2 naming --weather (and the variable, when
// it came from one) and what is wrong.
func TestServeWeatherRefusesNamingTheFlag(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  string // CROWD_WEATHER, "" unset
		say  []string
	}{
		// A condition the crowd does not know: refused as the flag is read.
		{"unknown condition", []string{"--weather", "sunny=5%"}, "", []string{"--weather", `unknown condition "sunny"`}},
		// A rule without its target.
		{"no target", []string{"--weather", "down"}, "", []string{"--weather", "is not KIND=TARGET"}},
		// From the environment: the variable and the flag are both named.
		{"from CROWD_WEATHER", nil, "slow=5%:forever", []string{"CROWD_WEATHER", "--weather", `delay "forever"`}},
		// An origin the world does not have: found before the world opens.
		{"unknown origin", []string{"--weather", "down=flood9.test"}, "", []string{"--weather", "flood9.test is not one of the crowd's origins"}},
		// Shares that need more origins than the world has.
		{"shares too large", []string{"--weather", "down=100%,gone=50%"}, "", []string{"--weather", "needs 1 origin, and only 0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("CROWD_WEATHER", c.env)
			}
			state := t.TempDir()
			noListeners := []string{"--state", state, "--origins", "2", "--actors", "1", "--https", "", "--http", "", "--dns", "", "--admin", ""}
			code, _, stderr := runCLI(t, append(append([]string{"serve"}, noListeners...), c.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, stderr)
			}
			// Refused before a first start made the world's keys.
			if _, err := os.Stat(filepath.Join(state, "keys")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused start made keys in its state (%v)", err)
			}
			for _, s := range c.say {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
		})
	}
}

// TestServeStartsInWeather: serve puts --weather (here from CROWD_WEATHER,
// commas and all) in force before it serves, the admin API reads it back,
// and the start's log says the spec and how many origins each condition
// took.
func TestServeStartsInWeather(t *testing.T) {
	admin := loopback.Free(t)
	t.Setenv("CROWD_WEATHER", "down=flood2.test,slow=50%:2s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := runCLIContext(t, ctx, "serve", "--state", t.TempDir(), "--origins", "4", "--actors", "1",
			"--https", "", "--http", "", "--dns", "", "--admin", admin, "--log-format", "json")
		done <- result{code, stderr}
	}()
	c, err := adminapi.New("http://"+admin, adminapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var info adminapi.WeatherInfo
	waitFor(t, "serve's admin API", func() bool {
		info, err = c.Weather(ctx)
		return err == nil
	})
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s of a cancel")
	}
	if r.code != 0 {
		t.Fatalf("serve exited %d: %s", r.code, r.stderr)
	}
	const spec = "down=flood2.test,slow=50%:2s:0.5"
	if want := map[string]int{"down": 1, "slow": 2, "clear": 1}; info.Spec != spec || !maps.Equal(info.Counts, want) {
		t.Errorf("the admin API reads spec %q, counts %v; want %q, %v", info.Spec, info.Counts, spec, want)
	}
	var logged bool
	for line := range strings.SplitSeq(r.stderr, "\n") {
		var e struct {
			Msg     string         `json:"msg"`
			Spec    string         `json:"spec"`
			Origins map[string]int `json:"origins"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "weather" {
			logged = e.Spec == spec && maps.Equal(e.Origins, info.Counts)
		}
	}
	if !logged {
		t.Errorf("serve's log has no weather line with the spec and the counts:\n%s", r.stderr)
	}
}

// TestWeatherCommands: crowd weather set, show and clear change the
// running crowd's weather and read it back, as a table or the API's
// document; mistakes exit 2 and change nothing.
func TestWeatherCommands(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	for _, step := range []struct {
		name   string
		args   []string
		code   int
		out    []string // stdout (exit 0) or stderr holds these
		spec   string   // the spec in force after the step
		flood1 string   // flood1.test's condition after the step, "" unchecked
	}{
		// Set: the table of the origins in weather, then the spec and the counts.
		{"set", []string{"set", "down=flood1.test,limited=flood2.test:30s"}, 0,
			[]string{"ORIGIN       CONDITION    ANSWERED SINCE THE CROWD STARTED\nflood1.test  down         -\nflood2.test  limited:30s  -\n", "weather down=flood1.test,limited=flood2.test:30s since ", "of 2 origins: down 1, limited 1\n"},
			"down=flood1.test,limited=flood2.test:30s", "down"},
		// Show reads the same back.
		{"show", []string{"show"}, 0, []string{"flood2.test  limited:30s  -\n", "of 2 origins: down 1, limited 1"},
			"down=flood1.test,limited=flood2.test:30s", "down"},
		// A spec that cannot be read: exit 2 before the crowd is asked, nothing changed.
		{"set an unreadable spec", []string{"set", "down=flood1.test:30s"}, 2, []string{`crowd weather set "down=flood1.test:30s": bad weather spec`, "down takes no parameter"},
			"down=flood1.test,limited=flood2.test:30s", "down"},
		// An origin this crowd does not serve: the crowd's 400, as a usage error.
		{"set an unknown origin", []string{"set", "gone=flood7.test"}, 2, []string{`crowd weather set "gone=flood7.test": `, "flood7.test is not one of the crowd's origins"},
			"down=flood1.test,limited=flood2.test:30s", "down"},
		// No SPEC, or two.
		{"set without SPEC", []string{"set"}, 2, []string{"wants SPEC"}, "down=flood1.test,limited=flood2.test:30s", "down"},
		{"set rules apart", []string{"set", "down=flood1.test", "flaky=50%"}, 2, []string{"takes one SPEC, its rules joined by commas: down=flood1.test,flaky=50%"},
			"down=flood1.test,limited=flood2.test:30s", "down"},
		{"set a rule and a stray word", []string{"set", "down=flood1.test", "now"}, 2, []string{"wants SPEC, got 2 arguments"},
			"down=flood1.test,limited=flood2.test:30s", "down"},
		{"show with an argument", []string{"show", "down=5%"}, 2, []string{"takes no arguments"}, "down=flood1.test,limited=flood2.test:30s", "down"},
		// A share: which origin it took is the crowd's to say.
		{"set a share", []string{"set", "flaky=50%:0.2"}, 0, []string{"flaky:0.2  -\n", "of 2 origins: clear 1, flaky 1"}, "flaky=50%:0.2", ""},
		// Clear: no table, every origin clear.
		{"clear", []string{"clear"}, 0, []string{"weather clear since ", "of 2 origins: clear 2\n"}, "", "clear"},
	} {
		t.Run(step.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(append([]string{"weather"}, step.args...), "--admin", c.admin)...)
			if code != step.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, step.code, stdout, stderr)
			}
			got := stdout
			if code != 0 {
				got = stderr
			}
			for _, s := range step.out {
				if !strings.Contains(got, s) {
					t.Errorf("output lacks %q:\n%s", s, got)
				}
			}
			if spec := c.p.WeatherInfo().Spec; spec != step.spec {
				t.Errorf("the crowd's weather is %q, want %q", spec, step.spec)
			}
			if got := c.p.Sky().Condition("flood1.test").Kind.String(); step.flood1 != "" && got != step.flood1 {
				t.Errorf("flood1.test is %s, want %s", got, step.flood1)
			}
		})
	}
}

// TestWeatherShowJSON: --json prints the admin API's document itself.
func TestWeatherShowJSON(t *testing.T) {
	t.Parallel()
	c := startTestCrowd(t)
	if code, _, stderr := runCLI(t, "weather", "set", "slow=flood2.test:5s", "--admin", c.admin); code != 0 {
		t.Fatalf("set: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "weather", "show", "--json", "--admin", c.admin)
	if code != 0 {
		t.Fatalf("show --json: exit %d: %s", code, stderr)
	}
	var got adminapi.WeatherInfo
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("show --json printed no WeatherInfo: %v\n%s", err, stdout)
	}
	want := c.p.WeatherInfo()
	if got.Spec != want.Spec || !got.Since.Equal(want.Since) || got.Served != want.Served || !maps.Equal(got.Counts, want.Counts) ||
		len(got.Origins) != 1 || got.Origins[0] != want.Origins[0] {
		t.Errorf("show --json printed %+v, the crowd's weather is %+v", got, want)
	}
}

// TestWeatherNeedsACrowd: with no crowd at --admin, the message says to
// start one (exit 1); a bad --admin is a usage error.
func TestWeatherNeedsACrowd(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		admin string
		code  int
		say   string
	}{
		// Nothing listens there.
		{"no crowd", loopback.Free(t), 1, "crowd serve"},
		// Not an address.
		{"no port", "crowd", 2, "has no port"},
		// A port alone: said as such, with the address it likely meant.
		{"a port alone", "18180", 2, `--admin "18180" is a port alone: give host:port, e.g. 127.0.0.1:18180`},
		// Another scheme: said as such, not as a missing port.
		{"another scheme", "ftp://crowd:21", 2, "http or https, not ftp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "weather", "show", "--admin", c.admin)
			if code != c.code || !strings.Contains(stderr, c.say) {
				t.Errorf("exit %d, stderr %q; want %d naming %q", code, stderr, c.code, c.say)
			}
		})
	}
}

// TestWriteWeatherAnswered: the table says what the weather answered for
// each origin, and keeps an origin cleared since whose weather answered
// something, so a run sees what a SUT kept trying.
func TestWriteWeatherAnswered(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		info adminapi.WeatherInfo
		want string // the table, before the summary line
	}{
		// an origin in weather with answers: the non-zero counters, from the wire up
		{"in weather", adminapi.WeatherInfo{Origins: []adminapi.WeatherOrigin{{Host: "flood2.test", Condition: "gone"}},
			Answered: map[string]adminapi.WeatherAnswered{"flood2.test": {Documents: 3, Deliveries: 2, Lookups: 1}}},
			"ORIGIN       CONDITION  ANSWERED SINCE THE CROWD STARTED\nflood2.test  gone       lookups 1, deliveries 2, documents 3\n"},
		// cleared since, with answers: listed as clear, after those in weather
		{"cleared with answers", adminapi.WeatherInfo{Origins: []adminapi.WeatherOrigin{{Host: "flood3.test", Condition: "down"}},
			Answered: map[string]adminapi.WeatherAnswered{"flood1.test": {Connections: 4}, "flood3.test": {}}},
			"ORIGIN       CONDITION  ANSWERED SINCE THE CROWD STARTED\nflood3.test  down       -\nflood1.test  clear      connections 4\n"},
		// cleared since, nothing answered: no table at all
		{"cleared without answers", adminapi.WeatherInfo{Answered: map[string]adminapi.WeatherAnswered{"flood1.test": {}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeWeather(&b, c.info); err != nil {
				t.Fatal(err)
			}
			table, _, _ := strings.Cut(b.String(), "weather ")
			if table != c.want {
				t.Errorf("\n got %q\nwant %q", table, c.want)
			}
		})
	}
}
