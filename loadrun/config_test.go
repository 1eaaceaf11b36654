package loadrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// valid is a standalone flood Config that Validate accepts.
func valid(t *testing.T) Config {
	c := Defaults()
	c.Standalone, c.HTTPS, c.Out = true, "127.0.0.1:0", t.TempDir()
	c.Seconds, c.NoteBytes, c.Step = 10, 200, 20*time.Second
	return c
}

// TestValidateReportsEveryProblem: one Validate names every mistake, each
// with its flag, not only the first.
func TestValidateReportsEveryProblem(t *testing.T) {
	if errs := valid(t).Validate(); len(errs) != 0 {
		t.Fatalf("a valid Config: %v", errs)
	}
	c := valid(t)
	c.Rate, c.Arrivals, c.Signing, c.Mix, c.MaxInflight, c.Zipf = "0", "uniform", "batch", "nonsense", 0, 0.5
	errs := c.Validate()
	var all []string
	for _, e := range errs {
		all = append(all, e.Error())
	}
	text := strings.Join(all, "\n")
	for _, flag := range []string{"--rate", "--arrivals", "--signing", "--mix", "--max-inflight", "--zipf"} {
		if !strings.Contains(text, flag) {
			t.Errorf("no problem names %s:\n%s", flag, text)
		}
	}
	if len(errs) != 6 {
		t.Errorf("%d problems, want 6:\n%s", len(errs), text)
	}
}

// TestValidateRules: each rule of the command line, alone.
func TestValidateRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		// The fetch-back grace is a wait after the run: bounded, never negative.
		{"negative grace", func(c *Config) { c.Fetchback.Grace = -time.Second }, "--fetchback-grace -1s: want 0 to 10m"},
		// A client-API token is name=TOKEN.
		{"post token", func(c *Config) { c.PersonaPosts.Tokens = []string{"load0"} }, `--post-token "load0": want name=TOKEN`},
		// The client API is a base URL.
		{"post api", func(c *Config) { c.PersonaPosts.ClientAPI = "sut.test/api" }, "--post-api"},
		// A ramp is its own list of rates.
		{"rate and ramp", func(c *Config) { c.Rate, c.Ramp = "10", "10:20:10" }, "--rate and --ramp are exclusive"},
		// A run must end.
		{"endless", func(c *Config) { c.Seconds = 0 }, "--seconds 0 needs --max-sends"},
		// --stop-when is a ladder's.
		{"stop without ladder", func(c *Config) { c.StopWhen = []string{"p95>2s"} }, "--stop-when needs a ladder"},
		// A ladder's rungs are --step long.
		{"ladder with seconds", func(c *Config) { c.Rate, c.SecondsSet = "10,20", true }, "--seconds does not apply to a ladder"},
		// The in-process crowd is reached over HTTPS.
		{"standalone without https", func(c *Config) { c.HTTPS = "" }, "--standalone needs --https"},
		// --count names how many of a pattern.
		{"count alone", func(c *Config) { c.Count = 3 }, "--count needs --personas"},
		// crowd run floods at one rate.
		{"audience ladder", func(c *Config) { c.Rate = "10,20"; c.Audience = &AudienceConfig{} }, "crowd run floods at one rate"},
		// --signature names a scheme, not an algorithm label.
		{"signature", func(c *Config) { c.Signature = "hs2019" }, "--signature: want cavage, rfc9421 or both"},
	} {
		c := valid(t)
		tc.edit(&c)
		errs := c.Validate()
		var all []string
		for _, e := range errs {
			all = append(all, e.Error())
		}
		if !strings.Contains(strings.Join(all, "\n"), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, all, tc.want)
		}
	}
}

// TestAudienceConfig: the personas a run gets, and where each token comes
// from.
func TestAudienceConfig(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.txt")
	os.WriteFile(tokens, []byte("load0=file0\nload1=file1\n"), 0o600)
	env := func(k string) (string, bool) {
		if k == "CROWD_TOKEN_LOAD2" {
			return "env2", true
		}
		return "", false
	}
	base := AudienceConfig{Count: 3, SUTHost: "sut.test", Env: env, ProbeHz: 4, SetupTimeout: time.Minute}
	for _, tc := range []struct {
		name                      string
		edit                      func(*AudienceConfig)
		accts, toks, api, wantErr string
	}{
		// Three personas on the default host, tokens from the file, the flag and the environment.
		{"defaults", func(a *AudienceConfig) { a.TokensFile, a.Tokens = tokens, []string{"load1=flag1"} },
			"load0@sut.test load1@sut.test load2@sut.test", "file0 flag1 env2", "https://sut.test", ""},
		// A pattern with its own host, and a client API elsewhere.
		{"pattern", func(a *AudienceConfig) {
			a.Pattern, a.Count, a.Tokens, a.ClientAPI = "bench%d@m.test", 2, []string{"bench0=a", "bench1=b"}, "http://127.0.0.1:3000"
		}, "bench0@m.test bench1@m.test", "a b", "http://127.0.0.1:3000", ""},
		// A pattern without a host takes SUTHost.
		{"pattern without host", func(a *AudienceConfig) { a.Pattern, a.Count, a.Tokens = "p%d", 1, []string{"p0=a"} },
			"p0@sut.test", "a", "https://sut.test", ""},
		// load3 has no token anywhere: say every way to give it one.
		{"missing token", func(a *AudienceConfig) { a.Count, a.TokensFile = 4, tokens }, "", "", "", "no token for persona load3"},
		// Probes must happen.
		{"probe hz", func(a *AudienceConfig) { a.ProbeHz = 0 }, "", "", "", "--probe-hz 0"},
		// A client API with a path.
		{"client api path", func(a *AudienceConfig) { a.ClientAPI, a.TokensFile = "https://gts.test/api", tokens }, "", "", "", "--client-api"},
	} {
		a := base
		tc.edit(&a)
		p, errs := a.plan()
		var all []string
		for _, e := range errs {
			all = append(all, e.Error())
		}
		if tc.wantErr != "" {
			if !strings.Contains(strings.Join(all, "\n"), tc.wantErr) {
				t.Errorf("%s: %v, want %q", tc.name, all, tc.wantErr)
			}
			continue
		}
		if len(errs) > 0 {
			t.Errorf("%s: %v", tc.name, all)
			continue
		}
		var toks []string
		for _, n := range p.names {
			toks = append(toks, p.tokens[n])
		}
		if got := strings.Join(p.accts, " "); got != tc.accts {
			t.Errorf("%s: personas %q, want %q", tc.name, got, tc.accts)
		}
		if got := strings.Join(toks, " "); got != tc.toks || p.api != tc.api {
			t.Errorf("%s: tokens %q api %q, want %q %q", tc.name, got, p.api, tc.toks, tc.api)
		}
	}
}
