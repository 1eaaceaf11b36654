package loadrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// valid is a standalone flood Config that Validate accepts: the
// command line's defaults, standalone.
func valid(t *testing.T) Config {
	c := Defaults()
	c.Standalone, c.HTTPS, c.Out = true, "127.0.0.1:0", t.TempDir()
	c.Seconds = 10
	return c
}

// TestValidateReportsEveryProblem: one Validate names every mistake, each
// with its flag, not only the first.
func TestValidateReportsEveryProblem(t *testing.T) {
	if errs := valid(t).Validate(); len(errs) != 0 {
		t.Fatalf("a valid Config: %v", errs)
	}
	c := valid(t)
	c.Rates, c.Arrivals, c.Signing, c.Mix, c.MaxInflight, c.Zipf = []float64{0}, "uniform", "batch", record.Mix{Like: -1}, 0, 0.5
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
	p95, _ := record.ParseGates([]string{"p95>2s"})
	gates := func(exprs ...string) []record.Gate {
		g, err := record.ParseGates(exprs)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" : valid
	}{
		// The fetch-back grace is a wait after the run: bounded, never negative.
		{"negative grace", func(c *Config) { c.Fetchback.Grace = -time.Second }, "--fetchback-grace -1s: want 0 to 10m"},
		// A client-API token is name=TOKEN.
		{"post token", func(c *Config) { c.PersonaPosts.Tokens = []string{"load0"} }, `--post-token "load0": want name=TOKEN`},
		// Tokens post as the SUT's personas: a self-flood has none.
		{"post token in a self-flood", func(c *Config) { c.PersonaPosts.Tokens = []string{"load0=t"} }, "--post-token posts as the SUT's personas: give them"},
		// With personas to post as, the same token is taken.
		{"post token with personas", func(c *Config) { c.PersonaPosts.Tokens, c.Persona = []string{"load0=t"}, []string{"load0@sut.test"} }, ""},
		// The client API is a base URL.
		{"post api", func(c *Config) { c.PersonaPosts.ClientAPI = "sut.test/api" }, "--post-api"},
		// A rate is above 0, whoever built the Config.
		{"zero rate", func(c *Config) { c.Rates = []float64{10, 0} }, "--rate 0: want a rate above 0"},
		// … and a ramp's rung names --ramp.
		{"zero ramp", func(c *Config) { c.Rates, c.Ramp = []float64{0}, true }, "--ramp 0"},
		// No rate is DefaultRate, not a run of nothing.
		{"no rate", func(c *Config) { c.Rates = nil }, ""},
		// The zero values of the named choices are the flood's defaults.
		{"zero choices", func(c *Config) {
			c.Signing, c.Inbox, c.Arrivals, c.Signature, c.Algorithm, c.Mix, c.Client = "", "", "", "", "", record.Mix{}, ""
		}, ""},
		// A run must end.
		{"endless", func(c *Config) { c.Seconds = 0 }, "--seconds 0 needs --max-sends"},
		// … and a ladder ends with its rungs.
		{"endless ladder", func(c *Config) { c.Seconds, c.Rates = 0, []float64{10, 20} }, ""},
		// --stop-when is a ladder's.
		{"stop without ladder", func(c *Config) { c.StopWhen = p95 }, "--stop-when needs a ladder"},
		// A ramp of one rung is still a ladder.
		{"stop with one-rung ramp", func(c *Config) { c.StopWhen, c.Rates, c.Ramp = p95, []float64{10}, true }, ""},
		// A ladder counts its rungs in time, not sends.
		{"ladder with max-sends", func(c *Config) { c.Rates, c.MaxSends = []float64{10, 20}, 5 }, "--max-sends does not apply to a ladder"},
		// The in-process crowd is reached over HTTPS.
		{"standalone without https", func(c *Config) { c.HTTPS = "" }, "--standalone needs --https"},
		// Attached needs a crowd to attach to.
		{"attached without admin", func(c *Config) { c.Standalone = false }, "--admin: no crowd to attach to"},
		// --count names how many of a pattern.
		{"count alone", func(c *Config) { c.Count = 3 }, "--count needs --personas"},
		// A persona is an account.
		{"persona", func(c *Config) { c.Persona = []string{"not an account"} }, `--persona: want acct:name@host: "not an account"`},
		// A persona with a port says why, as a pattern's or a file's does.
		{"persona with a port", func(c *Config) { c.Persona = []string{"acct:load0@127.0.0.1:8443"} }, `--persona: want acct:name@host: "acct:load0@127.0.0.1:8443": "acct:load0@127.0.0.1:8443" names a port (8443): the flood reaches a persona's server`},
		// A pattern has its %d.
		{"pattern", func(c *Config) { c.Personas, c.Count = "load@sut.test", 2 }, "--personas needs exactly one %d"},
		// crowd run floods at one rate.
		{"audience ladder", func(c *Config) { c.Rates = []float64{10, 20}; c.Audience = &AudienceConfig{} }, "crowd run floods at one rate"},
		// --client names one of the flood's clients.
		{"client", func(c *Config) { c.Client = "fasthttp" }, "--client: want nethttp or fast"},
		// --signature names a scheme, not an algorithm label.
		{"signature", func(c *Config) { c.Signature = "hs2019" }, "--signature: want cavage, rfc9421 or both"},
		// --algorithm names a label the crowd signs with.
		{"algorithm", func(c *Config) { c.Algorithm = "ed25519" }, `--algorithm "ed25519": want rsa-sha256 or hs2019`},
		// A file that is not there is the run's start's to find, not Validate's.
		{"personas file", func(c *Config) { c.PersonasFile = "/nonexistent/personas.txt" }, ""},
		// A gate on a type no run has is refused before the run, not missed after it.
		{"gate type", func(c *Config) { c.Expect = gates("Bogus.errors<1%") }, `--expect "Bogus.errors<1%": "Bogus" is no activity type of a run (Forged, Create, Like`},
		// A figure of crowd run's run section: a flood has none to gate.
		{"gate on the run section", func(c *Config) { c.Expect = gates("visibility.p95<1s") }, `--expect "visibility.p95<1s": visibility is measured by crowd run (its run section), not by this flood`},
		{"run count without its part", func(c *Config) { c.Expect = gates("never_seen==0") }, `never_seen is crowd run's, of its run section: visibility.never_seen`},
		// crowd run gates its run section: a gate it can judge, and one it cannot.
		{"crowd run's gate", func(c *Config) {
			c.Expect, c.Audience = gates("visibility.p95<5s", "visibility.never_seen==0"), &AudienceConfig{Count: 1, SUTHost: "sut.test", Tokens: []string{"load0=t"}, ProbeHz: 1, SetupTimeout: time.Second}
		}, ""},
		{"crowd run's gate it cannot judge", func(c *Config) {
			c.Expect, c.Audience = gates("home.never_seen==0"), &AudienceConfig{Count: 1, SUTHost: "sut.test", Tokens: []string{"load0=t"}, ProbeHz: 1, SetupTimeout: time.Second}
		}, "home has latencies only"},
		// Types are matched as the record matches them, in any case; Forged is one with forgeries.
		{"gate types", func(c *Config) {
			c.Mix = record.Mix{Like: 1, Reply: 1}
			c.Scenario = &ScenarioConfig{Tamper: "date", TamperShare: 0.5, ForgerySettle: time.Second}
			c.Expect = gates("like.errors<1%", "Forged.errors==0", "Reply.p95<1s", "Create.p95<1s")
		}, ""},
		// A type this run's mix does not send: refused, saying what it sends.
		{"gate type not in the mix", func(c *Config) { c.Expect = gates("Announce.p95<1s") }, `--expect "Announce.p95<1s": this run sends no Announce (it sends Create, Like, Follow`},
		// An Undo with nothing to undo yet is sent as an Announce: a run with undo sends Announces.
		{"announce from undo", func(c *Config) { c.Mix = record.Mix{Create: 1, Undo: 1}; c.Expect = gates("Announce.p95<1s") }, ""},
		// Forged needs forgeries.
		{"forged without tamper", func(c *Config) { c.Expect = gates("Forged.errors==0") }, "this run sends no Forged"},
		// A tamper kind no forgery has, on --stop-when too.
		{"gate tamper kind", func(c *Config) { c.Rates, c.StopWhen = []float64{10, 20}, gates("nokind.forged_accepted>0") }, `--stop-when "nokind.forged_accepted>0": "nokind" is no tamper kind (body, digest_unsigned`},
		// A tamper kind as --tamper spells it.
		{"gate tamper kind with a dash", func(c *Config) { c.Expect = gates("digest-unsigned.forged_accepted=0") }, ""},
		// The record's directory is empty: nowhere to write.
		{"empty out", func(c *Config) { c.Out = " " }, "--out is empty"},
	} {
		c := valid(t)
		tc.edit(&c)
		var all []string
		for _, e := range c.Validate() {
			all = append(all, e.Error())
		}
		got := strings.Join(all, "\n")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestValidateTouchesNoDisk: Validate of a Config whose --out is not there
// yet leaves it so; the run's start makes it.
func TestValidateTouchesNoDisk(t *testing.T) {
	dir := t.TempDir()
	c := valid(t)
	c.Out = filepath.Join(dir, "records")
	if errs := c.Validate(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("Validate left %v in the --out's parent (%v)", ents, err)
	}
	if _, err := c.start(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Out); err != nil {
		t.Errorf("the run's start did not make --out: %v", err)
	}
}

// TestRunReportsUnwritableOut: a --out that cannot take the record stops
// the run before it starts, as a usage error naming the flag.
func TestRunReportsUnwritableOut(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := valid(t)
	c.Out = filepath.Join(file, "records") // under a file: no directory can be made
	err := Run(context.Background(), c)
	var ue *record.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--out "+c.Out) {
		t.Fatalf("Run: %v, want a usage error naming --out", err)
	}
}

// TestStartReadsTheFiles: the files the flags name are read when the run
// starts, each problem naming its flag.
func TestStartReadsTheFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	personas := write("personas.txt", "# the SUT's\nacct:b@sut.test\nc@sut.test\n")
	empty := write("empty.txt", "# none\n")
	tokens := write("tokens.txt", "load0=file0\n")
	env := func(string) (string, bool) { return "", false }
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		accts string // what the flood floods
		want  string // the error names this ("" none)
	}{
		// The file's personas follow the command line's, each once.
		{"personas file", func(c *Config) { c.Persona, c.PersonasFile = []string{"b@sut.test", "a@sut.test"}, personas },
			"b@sut.test a@sut.test c@sut.test", ""},
		// A file that is not there.
		{"no personas file", func(c *Config) { c.PersonasFile = filepath.Join(dir, "nope") }, "", "--personas-file"},
		// A file that names nobody.
		{"empty personas file", func(c *Config) { c.PersonasFile = empty }, "", "names no persona"},
		// crowd run's tokens come from the file at the start.
		{"tokens file", func(c *Config) {
			c.Audience = &AudienceConfig{Count: 1, SUTHost: "sut.test", TokensFile: tokens, Env: env, ProbeHz: 1, SetupTimeout: time.Second}
		}, "load0@sut.test", ""},
		// A tokens file that is not there.
		{"no tokens file", func(c *Config) {
			c.Audience = &AudienceConfig{Count: 1, SUTHost: "sut.test", TokensFile: filepath.Join(dir, "nope"), Env: env, ProbeHz: 1, SetupTimeout: time.Second}
		}, "", "--tokens-file"},
		// load1 has no token anywhere: say every way to give it one.
		{"missing token", func(c *Config) {
			c.Audience = &AudienceConfig{Count: 2, SUTHost: "sut.test", TokensFile: tokens, Env: env, ProbeHz: 1, SetupTimeout: time.Second}
		}, "", "no token for persona load1"},
	} {
		c := valid(t)
		tc.edit(&c)
		p, err := c.start()
		if tc.want != "" {
			var ue *record.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want a usage error naming %q", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := strings.Join(p.accts, " "); got != tc.accts {
			t.Errorf("%s: personas %q, want %q", tc.name, got, tc.accts)
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
		if len(errs) == 0 {
			errs = p.resolveTokens(a) // as the run's start does
		}
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

// TestFreshSeedsReadBackExactly: a fresh seed is below 2^53, so a reader
// of JSON numbers as float64 (jq, JavaScript, pandas) gets the seed that
// replays the run, not a rounded one.
func TestFreshSeedsReadBackExactly(t *testing.T) {
	for range 1000 {
		s := freshSeed()
		if s == 0 || s >= 1<<53 || uint64(float64(s)) != s {
			t.Fatalf("fresh seed %d does not read back exactly as a float64", s)
		}
	}
}
