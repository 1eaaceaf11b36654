package pasture

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/pasture/weather"
)

// weatherPasture is a pasture started in weather, its admin API served on
// a real loopback listener.
func weatherPasture(t *testing.T, spec string) (*Pasture, *httptest.Server) {
	t.Helper()
	s, err := weather.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	p := testPasture(t, Config{Version: "test", Weather: s})
	srv := httptest.NewServer(p.AdminHandler())
	t.Cleanup(srv.Close)
	return p, srv
}

// TestAdminWeatherRoutes: the weather routes change the weather in force
// and read it back; every refusal (a bad spec, one the world cannot fill,
// a body that is not the request, a write the admin guard refuses) says
// why and leaves the weather as it was.
func TestAdminWeatherRoutes(t *testing.T) {
	p, srv := weatherPasture(t, "down=flood1.test")
	started := p.WeatherInfo().Since
	for _, c := range []struct {
		name        string
		method      string
		body        string
		contentType string // "" is application/json
		origin      string // the Origin header, "" none
		status      int
		reason      string // the error names this (a refusal)
		spec        string // the spec in force after the call
		sky         map[string]weather.Kind
	}{
		// The weather serve started in.
		{"GET at start", "GET", "", "", "", 200, "", "down=flood1.test", map[string]weather.Kind{"flood1.test": weather.Down, "flood2.test": weather.Clear}},
		// A new spec replaces it at once, its parameters written out.
		{"PUT a spec", "PUT", `{"spec":"slow=flood2.test:2s,flaky=50%:0.25"}`, "", "", 200, "", "slow=flood2.test:2s:0.5,flaky=50%:0.25",
			map[string]weather.Kind{"flood1.test": weather.Flaky, "flood2.test": weather.Slow}},
		// A spec that cannot be read: 400 naming the rule, nothing changed.
		{"PUT an unknown condition", "PUT", `{"spec":"sunny=5%"}`, "", "", 400, `"sunny=5%": unknown condition`, "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// An origin the crowd does not serve.
		{"PUT an unknown origin", "PUT", `{"spec":"down=flood9.test"}`, "", "", 400, "flood9.test is not one of the crowd's origins", "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// Shares that need more origins than there are.
		{"PUT shares too large", "PUT", `{"spec":"down=100%,gone=50%"}`, "", "", 400, "needs 1 origin, and only 0", "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// A body without a spec is not read as clear.
		{"PUT without spec", "PUT", `{}`, "", "", 400, "no spec", "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// A misspelt field is named, and changes nothing.
		{"PUT a misspelt field", "PUT", `{"weather":"down=5%"}`, "", "", 400, `unknown field "weather"`, "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// A body past the limit is 413, not 400.
		{"PUT too large", "PUT", `{"spec":"` + strings.Repeat(" ", adminapi.BodyLimit) + `"}`, "", "", 413, "too large", "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// A body that is not JSON.
		{"PUT not JSON", "PUT", `down=5%`, "", "", 400, "not {\"spec\"", "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// The admin guard: a write that is not JSON is refused before the handler.
		{"PUT as text/plain", "PUT", `{"spec":"down=100%"}`, "text/plain", "", 403, "application/json", "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// The admin guard: a web page's request.
		{"PUT from a web page", "PUT", `{"spec":"down=100%"}`, "", "https://evil.example", 403, "web page", "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		{"DELETE from a web page", "DELETE", "", "", "https://evil.example", 403, "web page", "slow=flood2.test:2s:0.5,flaky=50%:0.25", nil},
		// DELETE clears it.
		{"DELETE", "DELETE", "", "", "", 200, "", "", map[string]weather.Kind{"flood1.test": weather.Clear, "flood2.test": weather.Clear}},
		// "clear" is a spec too.
		{"PUT another spec", "PUT", `{"spec":"gone=flood2.test"}`, "", "", 200, "", "gone=flood2.test", map[string]weather.Kind{"flood2.test": weather.Gone}},
		{"PUT \"clear\"", "PUT", `{"spec":"clear"}`, "", "", 200, "", "", map[string]weather.Kind{"flood2.test": weather.Clear}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+"/api/weather", strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
				if c.contentType != "" {
					req.Header.Set("Content-Type", c.contentType)
				}
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, c.status)
			}
			if c.reason != "" {
				var e struct{ Error string }
				if json.Unmarshal(b, &e); !strings.Contains(e.Error, c.reason) {
					t.Errorf("reason %q lacks %q", e.Error, c.reason)
				}
			} else {
				var got adminapi.WeatherInfo
				if err := json.Unmarshal(b, &got); err != nil || got.Spec != c.spec {
					t.Errorf("answered %s (%v), want the spec %q", b, err, c.spec)
				}
			}
			if now := p.WeatherInfo().Spec; now != c.spec {
				t.Errorf("the spec in force is %q, want %q", now, c.spec)
			}
			for host, kind := range c.sky {
				if got := p.Sky().Condition(host).Kind; got != kind {
					t.Errorf("%s is %s, want %s", host, got, kind)
				}
			}
		})
	}
	if since := p.WeatherInfo().Since; !since.After(started) {
		t.Errorf("since %v is not after the start's %v: a change must move it", since, started)
	}
}

// TestSameWeatherAgainKeepsItsSince: the weather in force put in force
// again (as written, or as the crowd writes it back) is no change: it stays
// in force since it was first put there, which a run dates another hand's
// change by, and the crowd's count of changes stays; another spec is a
// change, counted, and so is one undone (a reader sees the count move).
func TestSameWeatherAgainKeepsItsSince(t *testing.T) {
	_, srv := weatherPasture(t, "")
	put := func(spec string) adminapi.WeatherInfo {
		t.Helper()
		req, _ := http.NewRequest("PUT", srv.URL+"/api/weather", strings.NewReader(`{"spec":"`+spec+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var info adminapi.WeatherInfo
		err = json.NewDecoder(resp.Body).Decode(&info)
		resp.Body.Close()
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("PUT %s: %d (%v)", spec, resp.StatusCode, err)
		}
		return info
	}
	first := put("slow=flood2.test:2s")
	if first.Changes != 1 {
		t.Fatalf("the first change counted %d, want 1", first.Changes)
	}
	for _, c := range []struct {
		name, spec string
		moves      bool // since moves, and the count with it
	}{
		// The same spec, as written the first time.
		{"again", "slow=flood2.test:2s", false},
		// The same spec as the crowd writes it back, every parameter given.
		{"written out", "slow=flood2.test:2s:0.5", false},
		// Another parameter: other weather.
		{"another delay", "slow=flood2.test:3s", true},
		// Back to the first: a change too (made and undone, counted twice).
		{"undone", "slow=flood2.test:2s", true},
	} {
		time.Sleep(5 * time.Millisecond) // a change would move since visibly
		info := put(c.spec)
		if moved := !info.Since.Equal(first.Since); moved != c.moves {
			t.Errorf("%s: since %v, was %v: moved %v, want %v", c.name, info.Since, first.Since, moved, c.moves)
		}
		if counted := info.Changes == first.Changes+1; counted != c.moves || !c.moves && info.Changes != first.Changes {
			t.Errorf("%s: changes %d, was %d: want it counted %v", c.name, info.Changes, first.Changes, c.moves)
		}
		first = info
	}
}

// TestWeatherInfo: the document lists each origin in weather with its
// condition, counts each kind (the clear ones too) and says since when.
func TestWeatherInfo(t *testing.T) {
	before := time.Now()
	_, srv := weatherPasture(t, "slow=flood2.test:3s:0.25,limited=flood1.test:2m")
	c, err := adminapi.New(srv.URL, adminapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, step := range []struct {
		name    string
		call    func() (adminapi.WeatherInfo, error)
		spec    string
		origins []adminapi.WeatherOrigin
		counts  map[string]int
	}{
		// The start's weather: both origins, sorted by host, parameters written out.
		{"show", func() (adminapi.WeatherInfo, error) { return c.Weather(ctx) }, "slow=flood2.test:3s:0.25,limited=flood1.test:2m0s",
			[]adminapi.WeatherOrigin{{Host: "flood1.test", Kind: "limited", Condition: "limited:2m0s"}, {Host: "flood2.test", Kind: "slow", Condition: "slow:3s:0.25"}},
			map[string]int{"limited": 1, "slow": 1}},
		// A share: the rest of the world is counted clear.
		{"set", func() (adminapi.WeatherInfo, error) { return c.SetWeather(ctx, "nxdomain=50%") }, "nxdomain=50%", nil,
			map[string]int{"nxdomain": 1, "clear": 1}},
		// Cleared: no origin listed, every one clear.
		{"clear", func() (adminapi.WeatherInfo, error) { return c.ClearWeather(ctx) }, "", []adminapi.WeatherOrigin{},
			map[string]int{"clear": 2}},
	} {
		info, err := step.call()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if info.Spec != step.spec || info.Served != 2 || !maps.Equal(info.Counts, step.counts) {
			t.Errorf("%s: spec %q, served %d, counts %v; want %q, 2, %v", step.name, info.Spec, info.Served, info.Counts, step.spec, step.counts)
		}
		if step.origins != nil && !slices.Equal(info.Origins, step.origins) {
			t.Errorf("%s: origins %+v, want %+v", step.name, info.Origins, step.origins)
		}
		if n := len(info.Origins); n+info.Counts["clear"] != 2 {
			t.Errorf("%s: %d origins listed and %d clear of 2", step.name, n, info.Counts["clear"])
		}
		if info.Since.Before(before) || info.Since.After(time.Now()) {
			t.Errorf("%s: since %v, not within the test", step.name, info.Since)
		}
		if got, err := c.Weather(ctx); err != nil || got.Spec != info.Spec || !got.Since.Equal(info.Since) {
			t.Errorf("%s: GET reads back %+v (%v), the change answered %+v", step.name, got, err, info)
		}
	}
	_, err = c.SetWeather(ctx, "down=flood3.test")
	var ae *adminapi.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Reason, "flood3.test") {
		t.Errorf("an unknown origin: %v, want a 400 naming it", err)
	}
}
