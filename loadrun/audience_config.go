package loadrun

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/crowdfed/crowd/audience"
	"github.com/crowdfed/crowd/flood/traffic"
)

// AudienceConfig is the audience of a `crowd run`: the personas on the
// SUT, their tokens, and how they are set up and watched.
type AudienceConfig struct {
	// Pattern names the personas with one %d ("" = load%d@SUTHost; no
	// @host: on SUTHost), Count how many.
	Pattern string
	Count   int
	SUTHost string
	// ClientAPI is the SUT's Mastodon client API ("" = https://<host>).
	ClientAPI string
	// Tokens are NAME=TOKEN (--token), TokensFile a file of such lines,
	// Env the environment (CROWD_TOKEN_NAME), looked up in that order.
	Tokens     []string
	TokensFile string
	Env        func(string) (string, bool)
	// Follows, Followers and Posts shape the set-up; PostEvery the posts
	// during the flood (0: none); ProbeHz the home timeline reads.
	Follows, Followers, Posts int
	PostEvery                 time.Duration
	ProbeHz                   float64
	// SetupTimeout bounds the set-up's wait for Accepts, DrainTimeout the
	// wait after the flood for the last accepted note.
	SetupTimeout, DrainTimeout time.Duration
}

// DefaultAudience is the audience a command line starts from (its flags'
// defaults): three personas on sut.test, each following ten crowd actors.
func DefaultAudience() AudienceConfig {
	return AudienceConfig{Count: 3, SUTHost: "sut.test", Follows: 10, Followers: 2, Posts: 2, PostEvery: 5 * time.Second,
		ProbeHz: 4, SetupTimeout: time.Minute, DrainTimeout: time.Minute}
}

// audiencePlan is a checked AudienceConfig.
type audiencePlan struct {
	cfg    AudienceConfig
	host   string            // the personas' host
	names  []string          // persona user names, in order
	accts  []string          // name@host, what the flood floods
	tokens map[string]string // each persona's, once the run starts
	flags  map[string]string // --token's, NAME → TOKEN
	api    string            // client API base URL
}

// plan checks a and returns every problem; like Config.Validate it reads
// no file (resolveTokens does, when the run starts).
func (a AudienceConfig) plan() (*audiencePlan, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, ch := range []struct {
		fails bool
		msg   string
	}{
		{a.Count < 1, fmt.Sprintf("--count %d: want 1 or more personas", a.Count)},
		{a.Follows < 0, fmt.Sprintf("--follows %d: want 0 or more", a.Follows)},
		{a.Followers < 0, fmt.Sprintf("--followers %d: want 0 or more", a.Followers)},
		{a.Posts < 0, fmt.Sprintf("--posts %d: want 0 or more", a.Posts)},
		{a.PostEvery < 0, fmt.Sprintf("--post-every %v: want 0 (never) or more", a.PostEvery)},
		{!(a.ProbeHz > 0 && a.ProbeHz <= 100), fmt.Sprintf("--probe-hz %g: want more than 0, at most 100", a.ProbeHz)},
		{a.SetupTimeout <= 0, fmt.Sprintf("--setup-timeout %v: want more than 0", a.SetupTimeout)},
		{a.DrainTimeout < 0, fmt.Sprintf("--drain-timeout %v: want 0 or more", a.DrainTimeout)},
	} {
		if ch.fails {
			bad("%s", ch.msg)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	p := &audiencePlan{cfg: a, tokens: map[string]string{}, flags: map[string]string{}}
	pattern, sut := strings.TrimSpace(a.Pattern), strings.TrimSpace(a.SUTHost)
	if pattern == "" {
		if sut == "" {
			return nil, append(errs, fmt.Errorf("--sut-host is empty"))
		}
		pattern = "load%d@" + sut
	} else if !strings.Contains(pattern, "@") {
		pattern += "@" + sut
	}
	accts, err := traffic.ExpandPersonas(pattern, a.Count)
	if err != nil {
		return nil, append(errs, fmt.Errorf("--personas %q: %v", pattern, err))
	}
	p.accts = accts
	for _, acct := range accts {
		name, host, _ := strings.Cut(acct, "@")
		if p.host == "" {
			p.host = host
		} else if !strings.EqualFold(host, p.host) {
			return nil, append(errs, fmt.Errorf("--personas %q names personas on more than one host", pattern))
		}
		p.names = append(p.names, name)
	}
	p.api = a.ClientAPI
	if p.api == "" {
		p.api = "https://" + p.host
	}
	if _, err := audience.NewClient(p.api, nil, ""); err != nil {
		bad("--client-api: %v", err)
	}
	for _, t := range a.Tokens {
		name, tok, err := audience.ParseTokenArg(t)
		if err != nil {
			bad("--token %q: %v", t, err)
			continue
		}
		p.flags[name] = tok
	}
	return p, errs
}

// resolveTokens finds every persona's token when the run starts: --token,
// --tokens-file, then the environment.
func (p *audiencePlan) resolveTokens(a AudienceConfig) []error {
	env := a.Env
	if env == nil {
		env = os.LookupEnv
	}
	src := audience.TokenSources{Flags: p.flags, Env: env}
	if a.TokensFile != "" {
		fh, err := os.Open(a.TokensFile)
		if err != nil {
			return []error{fmt.Errorf("--tokens-file: %v", err)}
		}
		src.File, err = audience.ParseTokens(fh)
		fh.Close()
		if err != nil {
			return []error{fmt.Errorf("--tokens-file %s: %v", a.TokensFile, err)}
		}
	}
	var errs []error
	for _, name := range p.names {
		tok, _, ok := src.Token(name)
		if !ok {
			errs = append(errs, audience.MissingTokenError(name))
			continue
		}
		p.tokens[name] = tok
	}
	return errs
}
