package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/pasture"
	"github.com/crowdfed/crowd/pasture/weather"
)

// worldFlags are the flags that say which world to build, read into the world's own
// configuration (its Validate names the flag at fault).
type worldFlags struct{ cfg actors.Config }

func (f *worldFlags) register(cmd *cobra.Command) {
	def := actors.DefaultConfig()
	f.cfg = actors.Config{Origins: def.Origins, Actors: def.Actors, Domain: def.Domain, StateDir: def.StateDir}
	fl := cmd.Flags()
	fl.IntVar(&f.cfg.Origins, "origins", def.Origins, "how many fake servers to serve")
	fl.IntVar(&f.cfg.Actors, "actors", def.Actors, "how many actors each origin has")
	fl.StringVar(&f.cfg.Domain, "domain", def.Domain, "host-name pattern of the origins, with one %d for the origin number")
	fl.StringVar(&f.cfg.StateDir, "state", def.StateDir, "directory for keys, the CA, the follow graph and the activity log")
	fl.Var(shardFlag{&f.cfg.Shard}, "shard", "serve only shard i of n of the origins (i/n, 0-based)")
	fl.IntVar(&f.cfg.KeyPool, "key-pool", 0, fmt.Sprintf("how many RSA keys the actors share, each actor keeping its own key id (0: a key per actor up to %d actors, a pool of %d beyond); made once and kept in --state", actors.DefaultKeyPoolBound, actors.DefaultKeyPoolBound))
}

// given reports whether any flag of the world's shape (all but --state)
// was set, on the command line or from the environment.
func (f *worldFlags) given(fl *pflag.FlagSet) bool {
	for _, name := range []string{"origins", "actors", "domain", "shard", "key-pool"} {
		if fl.Changed(name) {
			return true
		}
	}
	return false
}

// shardFlag is --shard read as the world's Shard ("i/n"; empty is every origin).
type shardFlag struct{ s *actors.Shard }

func (f shardFlag) String() string {
	if f.s == nil {
		return ""
	}
	return f.s.String()
}

func (f shardFlag) Set(v string) error {
	sh, err := actors.ParseShard(v)
	if err != nil {
		return err
	}
	*f.s = sh
	return nil
}

func (shardFlag) Type() string { return "i/n" }

type serveFlags struct {
	world                    worldFlags
	https, http, dns, admin  string
	advertise                []string
	dnsRecords, dnsUpstreams []string
	dnsForwardFor            []string
	adminHosts               []string
	adminToken               string
	shutdownGrace            time.Duration
	weather                  weather.Spec
	// recordsTyped: the --dns-record values are the command line's, not
	// an environment's (a fleet maps every origin to its shard that way).
	recordsTyped bool
}

func newServeCmd(g *globalOptions) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the world: origins with actors, WebFinger, NodeInfo, inboxes, over HTTPS and HTTP, with DNS and an admin API",
		Long: `Serve the crowd's world. With no flags: 20 origins flood1.test … flood20.test with 10 actors each,
state in ./crowd-state, HTTPS on :443, HTTP on :80, DNS on :53 and the admin API on 127.0.0.1:9180.
Every flag can also be set as CROWD_<FLAG> (e.g. CROWD_DNS_RECORD=sut.test=10.0.0.5).`,
		Args: noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.recordsTyped = onCommandLine(cmd, "dns-record")
			return runServe(cmd.Context(), g, f, cmd.ErrOrStderr())
		},
	}
	f.world.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.https, "https", ":443", "HTTPS listen address (empty disables)")
	fl.StringVar(&f.http, "http", ":80", "HTTP listen address (empty disables)")
	fl.StringVar(&f.dns, "dns", ":53", "DNS listen address, UDP and TCP (empty disables)")
	fl.StringVar(&f.admin, "admin", "127.0.0.1:9180", "admin API listen address (keep it on loopback: anywhere else every route but /healthz, /readyz, /metrics and /ca.pem requires the admin token)")
	fl.StringVar(&f.adminToken, "admin-token", "", "the token the admin API requires when --admin is off loopback (better set as CROWD_ADMIN_TOKEN, out of the process list; default: made once into the "+pasture.AdminTokenFile+" file of --state)")
	fl.StringSliceVar(&f.adminHosts, "admin-host", nil, "more host names the admin API answers to (a compose service name); it refuses (421) other names than localhost, IPs, the --admin host and this machine's")
	fl.StringSliceVar(&f.advertise, "advertise", []string{"127.0.0.1"}, "where the SUT reaches the origins, answered by the DNS: one address (per family) shared by all, or a range (a CIDR such as 127.1.0.0/16, or a list of addresses and CIDRs) giving origin k the k-th address and sending from it; --shard i/n takes the i-th n-th of the range")
	fl.StringArrayVar(&f.dnsRecords, "dns-record", nil, "extra DNS name the crowd answers, NAME=IP (repeatable; the SUT's own name)")
	fl.StringSliceVar(&f.dnsUpstreams, "dns-upstream", nil, "DNS server(s) for other names, IP[:port], asked for clients on loopback, private and link-local networks, this machine or --dns-forward-for only (default: the machine's resolv.conf)")
	fl.StringSliceVar(&f.dnsForwardFor, "dns-forward-for", nil, "more networks, CIDR or IP (a SUT on a public address: 203.0.113.0/24), whose clients the DNS forwards other names for")
	fl.DurationVar(&f.shutdownGrace, "shutdown-grace", 5*time.Second, "how long a graceful shutdown may take")
	fl.Var(weatherValue{&f.weather}, "weather", "bad weather the origins start in (crowd weather changes it at run time): "+weatherHelp)
	return cmd
}

func (f *serveFlags) pastureConfig() (pasture.Config, error) {
	var cfg pasture.Config
	cfg.HTTPSAddr, cfg.HTTPAddr, cfg.DNSAddr, cfg.AdminAddr = f.https, f.http, f.dns, f.admin
	cfg.ShutdownGrace, cfg.AdminHosts, cfg.Weather = f.shutdownGrace, f.adminHosts, f.weather
	// Checked here, before a first start spends its seconds on keys.
	for _, l := range []struct{ flag, addr string }{{"https", f.https}, {"http", f.http}, {"dns", f.dns}, {"admin", f.admin}} {
		if l.addr == "" {
			continue
		}
		_, port, err := net.SplitHostPort(l.addr)
		if err != nil || port == "" {
			return cfg, usage(fmt.Errorf("--%s %q is not a listen address: want [host]:port, or empty to disable", l.flag, l.addr))
		}
		if _, err := net.LookupPort("tcp", port); err != nil {
			return cfg, usage(fmt.Errorf("--%s %q: port %q is neither 0-65535 nor a service name", l.flag, l.addr, port))
		}
	}
	if cfg.AdminToken = strings.TrimSpace(f.adminToken); cfg.AdminToken != "" {
		if err := checkAdminToken(cfg.AdminToken); err != nil {
			return cfg, usage(err)
		}
	}
	rng, err := originaddr.ParseRange(strings.Join(f.advertise, ","))
	if err != nil {
		return cfg, usage(err)
	}
	cfg.Range = &rng
	cfg.DNSRecords = map[string][]net.IP{}
	for _, r := range f.dnsRecords {
		name, addr, ok := strings.Cut(r, "=")
		ip := net.ParseIP(strings.TrimSpace(addr))
		if !ok || strings.TrimSpace(name) == "" || ip == nil {
			return cfg, usage(fmt.Errorf("--dns-record %q is not NAME=IP", r))
		}
		name = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
		cfg.DNSRecords[name] = append(cfg.DNSRecords[name], ip)
	}
	for _, u := range f.dnsUpstreams {
		u = strings.TrimSpace(u)
		if _, _, err := net.SplitHostPort(u); err != nil {
			u = net.JoinHostPort(u, "53")
		}
		host, port, _ := net.SplitHostPort(u)
		if net.ParseIP(host) == nil {
			return cfg, usage(fmt.Errorf("--dns-upstream %q is not IP[:port]", u))
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return cfg, usage(fmt.Errorf("--dns-upstream %q: the port is not a number from 1 to 65535", u))
		}
		cfg.DNSUpstreams = append(cfg.DNSUpstreams, u)
	}
	for _, n := range f.dnsForwardFor {
		p, err := parseNetwork(strings.TrimSpace(n))
		if err != nil {
			return cfg, usage(fmt.Errorf("--dns-forward-for %q: want a network (CIDR, as 203.0.113.0/24) or an IP: %v", n, err))
		}
		cfg.DNSForwardFor = append(cfg.DNSForwardFor, p)
	}
	return cfg, nil
}

func runServe(ctx context.Context, g *globalOptions, f *serveFlags, stderr io.Writer) error {
	log, err := g.logger(stderr)
	if err != nil {
		return err
	}
	defer log.Sync()
	pcfg, err := f.pastureConfig()
	if err != nil {
		return err
	}
	started := time.Now()
	wcfg := f.world.cfg
	if err := checkWeatherOrigins(f.weather, wcfg); err != nil {
		return err
	}
	if err := g.applyCrypto(&wcfg); err != nil {
		return err
	}
	cw, err := startCrowd(ctx, log, wcfg, pcfg)
	if err != nil {
		return err
	}
	world, p := cw.World, cw.Pasture
	log.Info("crowd serving", zap.Int("origins", len(world.Origins)), zap.Int("actors", world.NumPersons()),
		zap.String("first", world.Origins[0].Host), zap.String("state", f.world.cfg.StateDir),
		zap.Duration("startup", time.Since(started)), zap.String("signing", world.Backend().Describe()))
	if link := p.AdminPageLink(); link != "" {
		// Off loopback a login link: its code works once, and sets the page's session cookie.
		log.Info("admin page: "+link, zap.Bool("token", p.AdminToken() != ""))
	}
	if f.recordsTyped && pcfg.DNSAddr != "" {
		warnOverriddenOrigins(log, world, pcfg.DNSRecords)
	}
	if pcfg.HTTPSAddr == "" {
		// Legitimate behind a proxy that ends TLS for the origins' names;
		// otherwise no SUT, and no attached flood, can reach them.
		log.Warn("--https is empty: the origins have no HTTPS listener, which Mastodon, GoToSocial and Fedify fetch from and an attached flood sends to; only a proxy that ends TLS for their names (onto --http) makes them reachable",
			zap.String("http", pcfg.HTTPAddr))
	}
	if wx := p.WeatherInfo(); wx.Spec != "" {
		log.Info("weather", zap.String("spec", wx.Spec), zap.Any("origins", wx.Counts))
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-p.Errors():
		log.Error("listener failed", zap.Error(err))
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), f.shutdownGrace)
	defer cancel()
	if serr := cw.Shutdown(shutdownCtx); serr != nil {
		log.Warn("shutdown", zap.Error(serr))
	}
	return err
}

// warnOverriddenOrigins warns of each --dns-record naming one of the
// world's origins: the record wins (a way to send an origin's traffic
// elsewhere), so the SUT reaches that origin at the record's address, not
// the crowd's; a slip of the SUT's name would do that too, silently.
func warnOverriddenOrigins(log *zap.Logger, world *actors.World, records map[string][]net.IP) {
	for _, name := range slices.Sorted(maps.Keys(records)) {
		if _, ok := world.Origin(name); !ok {
			continue
		}
		addrs := make([]string, 0, len(records[name]))
		for _, ip := range records[name] {
			addrs = append(addrs, ip.String())
		}
		log.Warn("--dns-record names one of the crowd's origins: the crowd's DNS answers it with the record's addresses, so the SUT reaches that origin there, not at the crowd",
			zap.String("origin", name), zap.Strings("answers", addrs))
	}
}

// startCrowd is pasture.StartCrowd with the CLI's version and User-Agent;
// a --state that is no directory is a usage error.
func startCrowd(ctx context.Context, log *zap.Logger, wcfg actors.Config, pcfg pasture.Config) (*pasture.Crowd, error) {
	c, err := pasture.StartCrowd(ctx, pasture.CrowdConfig{World: wcfg, Listen: pcfg, Version: version, UserAgent: userAgent(), Logger: log})
	if errors.Is(err, statedir.ErrNotDir) || errors.Is(err, actors.ErrConfig) {
		return nil, usage(err)
	}
	return c, weatherUsage(err)
}

// parseNetwork is s as a network (originaddr.ParseNetwork: a CIDR prefix
// or an IP alone, an IPv4-mapped one as its IPv4 network). Every address
// (0.0.0.0/0, ::/0) is refused: that is the open resolver the check keeps
// the crowd from being.
func parseNetwork(s string) (netip.Prefix, error) {
	p, err := originaddr.ParseNetwork(s)
	if err != nil {
		return p, err
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, fmt.Errorf("%s is every address: the crowd would forward for anyone, an open resolver", s)
	}
	return p, nil
}
