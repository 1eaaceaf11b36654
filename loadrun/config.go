package loadrun

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// StandaloneState is the state directory of a standalone run that names
// none: its own, so that the README's first two commands (`crowd serve`,
// then a standalone flood) in one folder never share one.
const StandaloneState = "crowd-state-standalone"

// Config is one load run as asked, in the words of the command line (each
// field's message names its flag). Validate checks it whole; Run runs it.
type Config struct {
	// Standalone runs the world in this process (World, HTTPS, HTTP, DNS,
	// AdminAddr as its admin listener) instead of driving the crowd whose
	// admin API is Admin (attached; World.StateDir holds its keys).
	Standalone bool
	World      actors.Config
	// Admin is the running crowd's admin API (attached).
	Admin *adminapi.Client
	// AdminAddr is Admin's address, for messages; standalone, the admin
	// listener's address ("" = 127.0.0.1:0).
	AdminAddr string
	// HTTPS, HTTP, DNS are the standalone crowd's listeners ("" disables
	// HTTP and DNS; HTTPS is required).
	HTTPS, HTTP, DNS string
	// CrowdHTTPS is the attached crowd's HTTPS ip:port, for a self-flood
	// when this machine cannot resolve its names.
	CrowdHTTPS string

	// Rate is a rate or a comma list (a ladder); Ramp a ladder
	// from:to:step; at most one of them ("" both: 100/s).
	Rate, Ramp string
	// Step and Warmup are each rung's measured length and the discarded
	// start of the run (of each rung).
	Step, Warmup time.Duration
	// StopWhen stops a ladder after the rung where one holds; Expect are
	// the gates (exit 1 when one is missed).
	StopWhen, Expect []string
	// Seconds is the measured length after Warmup; SecondsSet says the
	// command line gave it (a ladder refuses it).
	Seconds    float64
	SecondsSet bool
	MaxSends   int64
	Arrivals   string
	// MaxInflight bounds concurrent sends; Timeout each send and discovery
	// request.
	MaxInflight int
	Timeout     time.Duration
	Signing     string
	SignerNice  int
	Mix         string
	Zipf        float64
	// Seed of the draws; 0 draws a fresh one (printed and recorded).
	Seed      uint64
	NoteBytes int
	// Persona, Personas (a pattern with Count) and PersonasFile name the
	// targets, in that order; none floods the crowd's own actors.
	Persona         []string
	Personas        string
	Count           int
	PersonasFile    string
	Inbox           string
	Out, Label      string
	AllowPublic     bool
	Algorithm       string
	PresignMaxBytes int64

	// Audience, when set, makes this a `crowd run`: one rate, personas
	// with bearer tokens, watched from their seats (Personas and Count are
	// its own).
	Audience *AudienceConfig

	// Version and UserAgent are the crowd's; Log the run's logger (nil:
	// none); Stdout and Stderr take the table and the live line, Live
	// whether stderr is a terminal (the live line redraws in place).
	Version, UserAgent string
	Log                *zap.Logger
	Stdout, Stderr     io.Writer
	Live               bool

	// Fetchback says whether and how the run counts what the SUT fetches
	// back from the crowd's origins (fetchback.go).
	Fetchback FetchbackConfig
	// PersonaPosts posts for the personas that have no post, through the
	// SUT's client API (personaposts.go).
	PersonaPosts PersonaPostsConfig

	// Signature is --signature: cavage (""), rfc9421 or both (RFC 9421
	// first, cavage again on a 4xx, as Fedify sends; see flood.Knocker).
	Signature string

	// Metrics are the run's live Prometheus metrics (--metrics-addr,
	// --metrics-linger). They are pushed to the crowd's admin API, when
	// there is one, whether served or not.
	Metrics MetricsConfig

	// Vocab are the options of the vocabulary beyond Create, Like and
	// Follow: threads, mentions, hashtags, images.
	Vocab VocabOptions

	// Scenario, when set, is what a scenario (or --tamper, --origin-zipf,
	// --target-posts) adds beyond the flags above: see ScenarioConfig.
	Scenario *ScenarioConfig
}

// MetricsConfig says where a run serves its live metrics.
type MetricsConfig struct {
	// Addr serves them at /metrics: host:port, ":port" is loopback, ""
	// none.
	Addr string
	// Linger keeps serving them this long after the run ended, so a
	// scraper takes the final values.
	Linger time.Duration
}

// plan is a checked Config, in the flood's types.
type plan struct {
	rates    []float64
	ladder   bool
	gates    []record.Gate
	stops    []record.Gate
	mix      record.Mix
	signing  flood.SigningMode
	arrivals flood.Arrivals
	inbox    flood.InboxMode
	accts    []string
	alg      signing.Algorithm
	duration time.Duration // measured
	audience *audiencePlan
	scheme   flood.SignatureScheme

	// metricsAddr is --metrics-addr with its host ("" none).
	metricsAddr string

	vocab flood.VocabConfig

	scenario *scenarioPlan // nil: none
}

// Validate reports every problem of c, each naming its flag; none is nil.
func (c Config) Validate() []error {
	_, errs := c.plan()
	return errs
}

// plan reads c into a plan, collecting every problem.
func (c Config) plan() (*plan, []error) {
	p := &plan{}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	try := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	c.checkRates(p, bad)
	var err error
	if p.gates, err = record.ParseGates(c.Expect); err != nil {
		bad("--expect %w", err)
	}
	if p.stops, err = record.ParseGates(c.StopWhen); err != nil {
		bad("--stop-when %w", err)
	}
	if len(p.stops) > 0 && !p.ladder {
		bad("--stop-when needs a ladder (--rate=a,b,c or --ramp)")
	}
	if p.mix, err = record.ParseMix(c.Mix); err != nil {
		bad("--mix %w", err)
	}
	p.vocab, err = c.Vocab.config()
	try(err)
	p.signing, err = flood.ParseSigning(c.Signing)
	try(err)
	p.inbox, err = flood.ParseInboxMode(c.Inbox)
	try(err)
	p.arrivals, err = flood.ParseArrivals(c.Arrivals)
	try(err)
	p.scheme, err = flood.ParseSignature(c.Signature)
	try(err)
	switch a := signing.Algorithm(strings.ToLower(c.Algorithm)); a {
	case signing.RSASHA256, signing.HS2019:
		p.alg = a
	default:
		bad("--algorithm %q: want rsa-sha256 or hs2019", c.Algorithm)
	}
	c.checkBounds(p, bad)
	try(c.Fetchback.validate())
	_, err = c.PersonaPosts.tokens()
	try(err)

	p.metricsAddr, err = c.metricsAddr()
	try(err)
	c.checkScenario(p, bad)
	p.duration = time.Duration(c.Seconds * float64(time.Second))
	if c.Audience != nil {
		if p.ladder {
			bad("crowd run floods at one rate: a ladder (--rate=a,b,c or --ramp) is crowd flood's")
		}
		var aerrs []error
		p.audience, aerrs = c.Audience.plan()
		errs = append(errs, aerrs...)
		if p.audience != nil {
			p.accts = p.audience.accts
		}
	} else {
		p.accts, err = c.personas()
		try(err)
	}
	if len(errs) == 0 {
		// Before the first send: a record that cannot be written after the
		// flood is a flood lost.
		if err := record.CheckOutDir(c.Out); err != nil {
			bad("--out %s cannot take the run's record: %w", c.Out, err)
		}
	}
	return p, errs
}

// checkRates reads --rate or --ramp.
func (c Config) checkRates(p *plan, bad func(string, ...any)) {
	var err error
	if c.Ramp != "" {
		if c.Rate != "" {
			bad("--rate and --ramp are exclusive: a ramp is its own list of rates")
			return
		}
		if p.rates, err = flood.ParseRamp(c.Ramp); err != nil {
			bad("--ramp %w", err)
		}
		p.ladder = true
		return
	}
	rate := c.Rate
	if rate == "" {
		rate = "100"
	}
	if p.rates, err = flood.ParseRates(rate); err != nil {
		bad("--rate %w", err)
	}
	p.ladder = len(p.rates) > 1
}

// checkBounds checks the numbers, each against its own bound.
func (c Config) checkBounds(p *plan, bad func(string, ...any)) {
	if c.Zipf != 0 && !(c.Zipf > 1 && !math.IsInf(c.Zipf, 0)) {
		bad("--zipf %g: want a number > 1, or 0 for uniform senders", c.Zipf)
	}
	if math.IsNaN(c.Seconds) || c.Seconds < 0 || c.Seconds > 7*24*3600 {
		bad("--seconds %g: want 0 to a week", c.Seconds)
	} else if c.Seconds == 0 && c.MaxSends == 0 && !p.ladder {
		bad("--seconds 0 needs --max-sends: the run must end")
	}
	checks := []struct {
		fails bool
		msg   string
	}{
		{c.MaxSends < 0, fmt.Sprintf("--max-sends %d: want >= 0", c.MaxSends)},
		{c.MaxInflight < 1, fmt.Sprintf("--max-inflight %d: want >= 1", c.MaxInflight)},
		{c.SignerNice < 0 || c.SignerNice > 19, fmt.Sprintf("--signer-nice %d: want 0 (unchanged) to 19", c.SignerNice)},
		{c.Timeout <= 0, fmt.Sprintf("--timeout %v: want > 0", c.Timeout)},
		{c.Warmup < 0, fmt.Sprintf("--warmup %v: want >= 0", c.Warmup)},
		{p.ladder && c.MaxSends > 0, "--max-sends does not apply to a ladder: each rung runs --step after --warmup"},
		{p.ladder && c.SecondsSet, "--seconds does not apply to a ladder: each rung runs --step after --warmup"},
		{p.ladder && c.Step <= 0, fmt.Sprintf("--step %v: a ladder needs rungs > 0", c.Step)},
		{c.NoteBytes < 1 || c.NoteBytes > 1<<20, fmt.Sprintf("--note-bytes %d: want 1 to 1048576", c.NoteBytes)},
		{strings.TrimSpace(c.Out) == "", "--out is empty"},
		{c.Standalone && c.HTTPS == "", "--standalone needs --https: the flood reaches the in-process crowd over HTTPS"},
		{!c.Standalone && c.Admin == nil, "--admin: no crowd to attach to"},
	}
	for _, ch := range checks {
		if ch.fails {
			bad("%s", ch.msg)
		}
	}
}

// personas is the union of the three ways to name the targets, in order.
func (c Config) personas() ([]string, error) {
	var accts []string
	seen := map[string]bool{}
	add := func(list []string) {
		for _, a := range list {
			if !seen[a] {
				seen[a] = true
				accts = append(accts, a)
			}
		}
	}
	for _, a := range c.Persona {
		l, err := flood.ParsePersonaList(strings.NewReader(a))
		if err != nil || len(l) != 1 {
			return nil, fmt.Errorf("--persona %q: want acct:name@host", a)
		}
		add(l)
	}
	switch {
	case c.Personas != "":
		l, err := flood.ExpandPersonas(c.Personas, c.Count)
		if err != nil {
			return nil, err
		}
		add(l)
	case c.Count != 0:
		return nil, errors.New("--count needs --personas 'name%d@host'")
	}
	if c.PersonasFile != "" {
		fh, err := os.Open(c.PersonasFile)
		if err != nil {
			return nil, fmt.Errorf("--personas-file: %w", err)
		}
		l, err := flood.ParsePersonaList(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("--personas-file %s: %w", c.PersonasFile, err)
		}
		if len(l) == 0 {
			return nil, fmt.Errorf("--personas-file %s names no persona", c.PersonasFile)
		}
		add(l)
	}
	return accts, nil
}

// Defaults are the values a command line starts from (its flags'
// defaults): what the flood's own defaults say, in Config's words.
func Defaults() Config {
	return Config{MaxInflight: flood.DefaultMaxInflight, Timeout: flood.DefaultTimeout,
		Signing: string(flood.SigningPipeline), Inbox: string(flood.InboxAuto), Algorithm: string(signing.RSASHA256),
		PresignMaxBytes: flood.DefaultPresignMaxBytes, Mix: record.DefaultMix().String(), Signature: string(flood.SignatureCavage)}
}
