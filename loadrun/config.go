package loadrun

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/audience"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// StandaloneState is the state directory of a standalone run that names
// none: its own, so that the README's first two commands (`crowd serve`,
// then a standalone flood) in one folder never share one.
const StandaloneState = "crowd-state-standalone"

// Defaults of a run that the flood's own do not give: the flags' defaults
// (Defaults) and a Config's zero values both come from these.
const (
	// DefaultRate is the sends per second of a run that names no rate.
	DefaultRate = 100.0
	// DefaultSeconds is the measured length of a run, after its warm-up.
	DefaultSeconds = 60.0
	// DefaultStep is the measured length of each ladder rung.
	DefaultStep = 20 * time.Second
	// DefaultNoteBytes is the approximate length of each note's text.
	DefaultNoteBytes = 200
)

// Config is one load run as asked, parsed from the command line into
// typed values (each problem Validate finds names its flag); Run runs it.
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
	// AdminToken is, standalone, the token its admin listener requires
	// off loopback ("": the state directory's, made if need be; see
	// pasture.Config.AdminToken). Attached, Admin carries the token.
	AdminToken string
	// HTTPS, HTTP, DNS are the standalone crowd's listeners ("" disables
	// HTTP and DNS; HTTPS is required).
	HTTPS, HTTP, DNS string
	// CrowdHTTPS is the attached crowd's HTTPS ip:port, for a self-flood
	// when this machine cannot resolve its names.
	CrowdHTTPS string

	// Rates are the run's sends per second (--rate, or --ramp when Ramp);
	// nil is DefaultRate. More than one, or a ramp, is a ladder.
	Rates []float64
	Ramp  bool
	// Step and Warmup are each rung's measured length and the discarded
	// start of the run (of each rung).
	Step, Warmup time.Duration
	// StopWhen stops a ladder after the rung where one holds; Expect are
	// the gates (exit 1 when one is missed).
	StopWhen, Expect []record.Gate
	// Seconds is the measured length after Warmup (a ladder's rungs are
	// Step long instead); MaxSends bounds the sends (0: no bound).
	Seconds  float64
	MaxSends int64
	Arrivals flood.Arrivals // "" is constant
	// MaxInflight bounds concurrent sends; Timeout each send and discovery
	// request.
	MaxInflight int
	Timeout     time.Duration
	Signing     traffic.SigningMode // "" is pipeline
	// Client is the flood's HTTP client (--client); "" is flood.DefaultClient.
	Client flood.Client
	// SignerNice is the pipeline signers' nice value (--signer-nice):
	// traffic.NiceAuto, or 0 (unchanged) to 19.
	SignerNice int
	// DispatcherPriority is the dispatcher thread's OS priority
	// (--dispatcher-priority); "" is flood.DefaultPriority.
	DispatcherPriority flood.Priority
	Mix                record.Mix // the zero Mix is record.DefaultMix
	Zipf               float64
	// Seed of the draws; 0 draws a fresh one (printed and recorded).
	Seed      uint64
	NoteBytes int
	// Persona, Personas (a pattern with Count) and PersonasFile (read
	// when the run starts) name the targets, in that order; none floods
	// the crowd's own actors.
	Persona         []string
	Personas        string
	Count           int
	PersonasFile    string
	Inbox           traffic.InboxMode // "" is auto
	Out, Label      string
	AllowPublic     bool
	Algorithm       signing.Algorithm // "" is rsa-sha256
	PresignMaxBytes int64

	// Audience, when set, makes this a `crowd run`: one rate, personas
	// with bearer tokens, watched from their seats (it names the personas).
	Audience *AudienceConfig

	// Version and UserAgent are the crowd's; Log the run's logger (nil:
	// none); Stdout and Stderr take the table and the live line, drawn
	// as Show draws them (nothing, when it is empty).
	Version, UserAgent string
	Log                *zap.Logger
	Stdout, Stderr     io.Writer
	Show               Show

	// Fetchback says whether and how the run counts what the SUT fetches
	// back from the crowd's origins (fetchback.go).
	Fetchback FetchbackConfig
	// PersonaPosts posts for the personas that have no post, through the
	// SUT's client API (personaposts.go).
	PersonaPosts PersonaPostsConfig

	// Results is --results: a file that takes every send of the run as a
	// line of NDJSON (flood/record/results), compressed by its name (.gz,
	// .zst); "-" writes to ResultsOut; "" writes none.
	Results string
	// ResultsOut takes the results when Results is "-" (the CLI's stdout,
	// the table then going to Stdout = its stderr).
	ResultsOut io.Writer

	// Signature is --signature: cavage (""), rfc9421 or both (RFC 9421
	// first, cavage again on a 4xx, as Fedify sends; see traffic.Knocker).
	Signature traffic.SignatureScheme

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

	// Weather is the weather put in force on the crowd during the flood
	// (--weather-at, --weather-repeat); the zero value is none.
	Weather WeatherTimeline
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

// plan is a checked Config as the run follows it: zero values read as
// their defaults, and what the fields make together (the ladder, the
// measured duration, the accounts, the audience's plan).
type plan struct {
	rates    []float64
	ladder   bool
	gates    []record.Gate // on the flood's record
	runGates []record.Gate // on crowd run's run section (audience.JudgeGates)
	stops    []record.Gate
	mix      record.Mix
	signing  traffic.SigningMode
	arrivals flood.Arrivals
	client   flood.Client
	priority flood.Priority
	inbox    traffic.InboxMode
	accts    []string
	alg      signing.Algorithm
	duration time.Duration // measured
	audience *audiencePlan
	scheme   traffic.SignatureScheme

	// metricsAddr is --metrics-addr with its host ("" none).
	metricsAddr string

	vocab traffic.VocabConfig

	scenario *scenarioPlan // nil: none
	results  *resultsFile  // --results, opened by start; the caller closes it
	// undoOut removes the --out directories start made, while they are
	// empty: a run that fails before its first record leaves none.
	undoOut func()
}

// Validate reports every problem of c, each naming its flag; none is nil.
// It is pure (no disk, no network, no clock): what needs the disk (the
// --personas-file, the --tokens-file, whether --out takes a record) is
// checked when the run starts. Run calls it once; a caller need not.
func (c Config) Validate() []error {
	_, errs := c.plan()
	return errs
}

// plan reads c into a plan, collecting every problem; it is Validate's
// body and as pure.
func (c Config) plan() (*plan, []error) {
	p := &plan{rates: c.Rates, stops: c.StopWhen, mix: c.Mix, alg: c.Algorithm}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	try := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	c.checkRates(p, bad)
	if len(p.stops) > 0 && !p.ladder {
		bad("--stop-when needs a ladder (--rate=a,b,c or --ramp)")
	}
	c.checkEnums(p, try)
	if p.alg == "" {
		p.alg = signing.RSASHA256
	}
	if p.alg != signing.RSASHA256 && p.alg != signing.HS2019 {
		bad("--algorithm %q: want rsa-sha256 or hs2019", c.Algorithm)
	}
	var err error
	p.vocab, err = c.Vocab.config()
	try(err)
	c.checkBounds(p, bad)
	try(c.Fetchback.validate())
	_, err = c.PersonaPosts.tokens()
	try(err)
	p.metricsAddr, err = c.metricsAddr()
	try(err)
	c.checkScenario(p, bad)
	c.checkWeather(p, bad)
	checkGateNames("--expect", c.Expect, p, c.Audience != nil, bad)
	checkGateNames("--stop-when", c.StopWhen, p, false, bad)
	for _, g := range c.Expect {
		if record.RunSectionPart(g.Type) {
			p.runGates = append(p.runGates, g)
		} else {
			p.gates = append(p.gates, g)
		}
	}
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
		accts, err := c.personas()
		try(err)
		p.accts = accts
		if len(c.PersonaPosts.Tokens) > 0 && len(accts) == 0 && c.PersonasFile == "" && err == nil {
			// A self-flood's targets are the crowd's own actors, whose notes
			// the crowd serves: the tokens would post nowhere, silently.
			bad("--post-token posts as the SUT's personas: give them (--persona, --personas, --personas-file); a flood without them floods the crowd's own actors")
		}
	}
	return p, errs
}

// checkGateNames refuses a gate whose type or tamper kind no run has (a
// misspelt 'Bogus.errors<1%', 'nokind.forged_accepted=0'), or that p's run
// cannot have ('Announce.p95<1s' with no announce in the mix): it would run
// the whole flood and only then be missed for want of data. runSection
// says the gates may name parts of crowd run's run section
// (visibility.p95<5s), which audience.CheckGate checks.
func checkGateNames(flag string, gates []record.Gate, p *plan, runSection bool, bad func(string, ...any)) {
	for _, g := range gates {
		switch {
		case record.RunSectionPart(g.Type) && runSection:
			if err := audience.CheckGate(g); err != nil {
				bad("%s %v", flag, err)
			}
			continue
		case record.RunSectionPart(g.Type):
			bad("%s %q: %s is measured by crowd run (its run section), not by this flood", flag, g.Expr, g.Type)
			continue
		case g.Metric == "never_seen" || g.Metric == "unreached":
			bad("%s %q: %s is crowd run's, of its run section: visibility.never_seen, delivery.unreached", flag, g.Expr, g.Metric)
			continue
		case g.Type == "":
			continue
		}
		if strings.HasPrefix(g.Metric, "forged_") {
			kind := strings.ReplaceAll(strings.ToLower(g.Type), "_", "-")
			if !slices.Contains(signing.Tampers(), signing.Tamper(kind)) {
				var kinds []string
				for _, k := range signing.Tampers() {
					kinds = append(kinds, strings.ReplaceAll(string(k), "-", "_"))
				}
				bad("%s %q: %q is no tamper kind (%s)", flag, g.Expr, g.Type, strings.Join(kinds, ", "))
			}
			continue
		}
		kinds := []string{string(record.TypeForged)}
		for _, k := range record.DefaultMix().Weights() {
			kinds = append(kinds, string(k.Kind))
		}
		if !slices.ContainsFunc(kinds, func(k string) bool { return strings.EqualFold(k, g.Type) }) {
			bad("%s %q: %q is no activity type of a run (%s)", flag, g.Expr, g.Type, strings.Join(kinds, ", "))
			continue
		}
		// This run's: its mix's kinds, Create (where reactions and Follows
		// with no pair left are diverted), Announce with undo (an Undo with
		// nothing to undo yet is one) and Forged with forgeries.
		ran := []string{string(record.TypeCreate)}
		add := func(k record.ActivityKind) {
			if !slices.Contains(ran, string(k)) {
				ran = append(ran, string(k))
			}
		}
		for _, k := range p.mix.Weights() {
			if k.Weight > 0 {
				add(k.Kind)
			}
		}
		if p.mix.Undo > 0 {
			add(record.TypeAnnounce)
		}
		if p.forging() {
			add(record.TypeForged)
		}
		if !slices.ContainsFunc(ran, func(k string) bool { return strings.EqualFold(k, g.Type) }) {
			bad("%s %q: this run sends no %s (it sends %s: see --mix, --tamper)", flag, g.Expr, g.Type, strings.Join(ran, ", "))
		}
	}
}

// checkRates checks the rates (nil: DefaultRate) and whether they are a
// ladder.
func (c Config) checkRates(p *plan, bad func(string, ...any)) {
	flag := "--rate"
	if c.Ramp {
		flag = "--ramp"
	}
	if len(p.rates) == 0 {
		p.rates = []float64{DefaultRate}
	}
	for _, r := range p.rates {
		if !(r > 0) || math.IsInf(r, 0) {
			bad("%s %g: want a rate above 0", flag, r)
		}
	}
	p.ladder = c.Ramp || len(p.rates) > 1
}

// checkEnums checks the named choices (a Config built in code may hold
// any string) and reads their zero values as the flood's defaults.
func (c Config) checkEnums(p *plan, try func(error)) {
	var err error
	p.signing, err = traffic.ParseSigning(string(c.Signing))
	try(err)
	p.inbox, err = traffic.ParseInboxMode(string(c.Inbox))
	try(err)
	p.arrivals, err = flood.ParseArrivals(string(c.Arrivals))
	try(err)
	p.client, err = flood.ParseClient(string(c.Client))
	try(err)
	p.priority, err = flood.ParsePriority(string(c.DispatcherPriority))
	try(err)
	p.scheme, err = traffic.ParseSignature(string(c.Signature))
	try(err)
	if p.mix == (record.Mix{}) {
		p.mix = record.DefaultMix()
	} else if _, err := record.ParseMix(p.mix.String()); err != nil {
		try(fmt.Errorf("--mix %w", err))
	}
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
		{c.SignerNice != traffic.NiceAuto && (c.SignerNice < 0 || c.SignerNice > 19), fmt.Sprintf("--signer-nice %d: want auto, or 0 (unchanged) to 19", c.SignerNice)},
		{c.Timeout <= 0, fmt.Sprintf("--timeout %v: want > 0", c.Timeout)},
		{c.Warmup < 0, fmt.Sprintf("--warmup %v: want >= 0", c.Warmup)},
		{p.ladder && c.MaxSends > 0, "--max-sends does not apply to a ladder: each rung runs --step after --warmup"},
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

// start is Run's start-up: Validate (its one call in a run), c as the plan
// the run follows, and what Validate must not do: read the
// --personas-file and the --tokens-file, look tokens up in the
// environment, and probe --out (a record that cannot be written after the
// flood is a flood lost). Every problem is in one usage error. Then it
// opens --results, which the caller closes (plan.results). On an error,
// an --out it made is gone again; after one, the caller's to remove
// (plan.undoOut).
func (c Config) start() (*plan, error) {
	if errs := c.Validate(); len(errs) > 0 {
		return nil, usage(errors.Join(errs...))
	}
	p, _ := c.plan() // Validate's pure reading again, this time for its values
	var errs []error
	if p.audience != nil {
		errs = p.audience.resolveTokens(*c.Audience)
	} else {
		var more []string
		if c.PersonasFile != "" {
			var err error
			if more, err = readPersonasFile(c.PersonasFile); err != nil {
				errs = append(errs, err)
			}
		}
		p.accts = union(p.accts, more)
	}
	undo, err := record.CheckOutDir(c.Out)
	if err != nil {
		errs = append(errs, fmt.Errorf("--out %s cannot take the run's record: %w", c.Out, err))
	}
	if len(errs) > 0 {
		undo()
		return nil, usage(errors.Join(errs...))
	}
	if p.results, err = c.openResults(); err != nil { // last: nothing after it fails with the file open
		undo()
		return nil, err
	}
	p.undoOut = undo
	return p, nil
}

// personas is the union of the targets the command line names, in
// order; the --personas-file is read when the run starts.
func (c Config) personas() ([]string, error) {
	var accts []string
	for _, a := range c.Persona {
		acct, err := traffic.ParsePersona(a)
		if err != nil {
			return nil, fmt.Errorf("--persona: want acct:name@host: %v", err)
		}
		accts = append(accts, acct)
	}
	switch {
	case c.Personas != "":
		l, err := traffic.ExpandPersonas(c.Personas, c.Count)
		if err != nil {
			return nil, err
		}
		accts = append(accts, l...)
	case c.Count != 0:
		return nil, errors.New("--count needs --personas 'name%d@host'")
	}
	return union(accts, nil), nil
}

// readPersonasFile reads --personas-file; an error names the flag.
func readPersonasFile(path string) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--personas-file: %w", err)
	}
	defer fh.Close()
	l, err := traffic.ParsePersonaList(fh)
	if err != nil {
		return nil, fmt.Errorf("--personas-file %s: %w", path, err)
	}
	if len(l) == 0 {
		return nil, fmt.Errorf("--personas-file %s names no persona", path)
	}
	return l, nil
}

// union is a then the accounts of b not in a, each once, in order.
func union(a, b []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range slices.Concat(a, b) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// Defaults are the values a command line starts from (its flags'
// defaults): this package's and the flood's defaults, in Config's words.
func Defaults() Config {
	return Config{Rates: []float64{DefaultRate}, Seconds: DefaultSeconds, Step: DefaultStep, NoteBytes: DefaultNoteBytes,
		MaxInflight: flood.DefaultMaxInflight, Timeout: flood.DefaultTimeout, Signing: traffic.SigningPipeline,
		Arrivals: flood.ArrivalsConstant, Client: flood.DefaultClient, SignerNice: traffic.NiceAuto, DispatcherPriority: flood.DefaultPriority, Inbox: traffic.InboxAuto, Algorithm: signing.RSASHA256,
		PresignMaxBytes: traffic.DefaultPresignMaxBytes, Mix: record.DefaultMix(), Signature: traffic.SignatureCavage,
		Out: filepath.Join("out", "load")}
}
