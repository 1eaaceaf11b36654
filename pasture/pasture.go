// Package pasture is the crowd's environment: the listeners (HTTPS with
// the crowd's own CA, HTTP, DNS, the admin API), routing by Host, and the
// admin server that a flood or a person drives the running crowd with: it
// serves adminapi's routes (its own, and those Config.Admin adds, the
// inbox's) behind a guard against web pages. It is also the serve
// composition root: StartCrowd builds a running crowd (world, CA, inbox,
// listeners) from one CrowdConfig, on a state directory it owns.
package pasture

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/pasture/fetchback"
	"github.com/crowdfed/crowd/pasture/nameserver"
	"github.com/crowdfed/crowd/pasture/tlsca"
	"github.com/crowdfed/crowd/pasture/weather"
)

// ErrListen marks a listener that could not be started; the message names
// the flag that sets its address.
var ErrListen = errors.New("cannot listen")

// Config is what a Pasture serves and where. An empty address disables
// that listener.
type Config struct {
	// World is the crowd's world.
	World *actors.World
	// HTTPSAddr, HTTPAddr, DNSAddr and AdminAddr are the listen addresses
	// (--https, --http, --dns, --admin).
	HTTPSAddr, HTTPAddr, DNSAddr, AdminAddr string
	// Advertise are the addresses the SUT reaches the crowd at: the DNS
	// answers the origins' names with them.
	Advertise []net.IP
	// DNSRecords are extra names the DNS answers (the SUT's own name).
	DNSRecords map[string][]net.IP
	// DNSUpstreams are where other names are forwarded ("ip:port"); nil
	// means the machine's resolv.conf.
	DNSUpstreams []string
	// DNSForwardFor are more networks whose clients the DNS forwards other
	// names for (--dns-forward-for), beside loopback, private and
	// link-local networks and this machine (nameserver.Config.ForwardFor).
	DNSForwardFor []netip.Prefix
	// Version is the crowd's version, shown in NodeInfo and the admin API.
	Version string
	// Logger receives the pasture's logs; nil means none.
	Logger *zap.Logger
	// Inbox answers POSTs to the inboxes; nil answers 405. When it also
	// logs weathered deliveries (inbox.Inbox.LogWeathered), the deliveries
	// the weather answers in its stead are logged there too; when it logs
	// refusals (inbox.Inbox.LogRefused), so are the connections, TLS
	// handshakes and DNS lookups the weather refuses below HTTP.
	Inbox http.Handler
	// Admin adds routes to the admin API (the inbox's activity log, the
	// follow graph's controls) by calling handle with "METHOD /path"
	// patterns; it may be nil. They are served behind the admin's guard.
	Admin func(handle func(pattern string, h http.Handler))
	// AdminHosts are host names, besides localhost, the --admin host and
	// the machine's name, that the admin API answers to in Host
	// (--admin-host): a compose service name, a reverse proxy's name.
	AdminHosts []string
	// AdminToken is the token the admin API requires when AdminAddr is off
	// loopback (AdminOffLoopback); "" takes the state directory's token
	// file (AdminTokenFile), made on the first start that needs one. On
	// loopback no token is required.
	AdminToken string
	// ShutdownGrace bounds a graceful shutdown (default 5 s).
	ShutdownGrace time.Duration
	// Registry collects the metrics /metrics serves; nil makes a new one.
	// Share it with the inbox so its metrics are served too.
	Registry *prometheus.Registry
	// Range, when set, is --advertise as a range: each origin answers at
	// its own address of it (see originaddr.Plan), and Advertise is
	// ignored. A range of one address per family is shared, as Advertise.
	Range *originaddr.Range
	// Weather is the weather the origins start in (--weather); the zero
	// Spec is clear. It changes at run time through Sky.
	Weather weather.Spec
}

// Pasture runs the crowd's listeners. Start it, then Shutdown it.
type Pasture struct {
	cfg     Config
	log     *zap.Logger
	ca      *tlsca.CA
	origins http.Handler
	admin   http.Handler
	auth    *adminAuth // nil: the admin API is on loopback and needs no token
	fetch   *fetchback.Windows
	wx      weatherClock // when the sky's forecast was put in force
	sky     *weather.Sky
	wire    wireTrace     // what the weather refuses below HTTP leaves behind
	closing chan struct{} // closed by Shutdown: the weather's held connections end

	mu      sync.Mutex
	servers []*http.Server
	dns     *nameserver.Server
	addrs   map[string]string
	plan    *originaddr.Plan // nil: every origin at Advertise
	ready   bool
	errc    chan error
}

// New prepares a pasture: loads or creates the CA and its certificates.
func New(cfg Config) (*Pasture, error) {
	if cfg.World == nil {
		return nil, errors.New("pasture: no world")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 5 * time.Second
	}
	ca, err := tlsca.LoadOrCreate(filepath.Join(cfg.World.Config.StateDir, "tls"))
	if err != nil {
		return nil, err
	}
	reg := cfg.Registry
	if reg == nil {
		reg = NewRegistry()
	}
	p := &Pasture{cfg: cfg, log: cfg.Logger, ca: ca, addrs: map[string]string{}, errc: make(chan error, 8),
		fetch: fetchback.New(nil), sky: &weather.Sky{}, closing: make(chan struct{})}
	p.wire = wireTrace{sky: p.sky}
	if rl, ok := cfg.Inbox.(refusedLog); ok {
		p.wire.log = rl.LogRefused
	}
	if err := p.SetWeather(cfg.Weather); err != nil {
		return nil, err
	}
	if p.plan, err = originPlan(cfg.Range, cfg.World.Config); err != nil {
		return nil, err
	}
	weatherHTTP := &weather.HTTP{Sky: p.sky, Closing: p.closing}
	if p.origins, err = originRouter(cfg.World, cfg.World.Origin, cfg.Version, cfg.Inbox, newHTTPMetrics(reg, cfg.World.Origins), p.fetch, weatherHTTP); err != nil {
		return nil, err
	}
	if cfg.AdminAddr != "" && AdminOffLoopback(cfg.AdminAddr) {
		token := cfg.AdminToken
		if token == "" {
			token, err = loadOrMakeAdminToken(cfg.World.Config.StateDir)
		} else {
			err = CheckAdminToken(token)
		}
		if err != nil {
			return nil, err
		}
		p.auth = newAdminAuth(token)
	}
	p.adminHandler(reg)
	return p, nil
}

// Fetchbacks is the crowd's fetch-back windows: a run in this process (a
// standalone flood) opens its window here directly; others go through the
// admin API's fetch-back routes.
func (p *Pasture) Fetchbacks() *fetchback.Windows { return p.fetch }

// Sky is the weather in force over the origins.
func (p *Pasture) Sky() *weather.Sky { return p.sky }

// SetWeather puts spec in force over the world's origins at once (the
// zero Spec clears it); an error wrapping weather.ErrSpec names an origin
// the world does not have or shares it cannot fill, and changes nothing.
// @followers rules are resolved from the follow graph first, so the
// forecast's spec lists the origins they took.
func (p *Pasture) SetWeather(spec weather.Spec) error {
	_, err := p.setWeather(spec)
	return err
}

// setWeather is SetWeather, reporting whether the weather changed: the
// weather in force already is left in force since it was.
func (p *Pasture) setWeather(spec weather.Spec) (bool, error) {
	spec, err := p.resolveWeather(spec)
	if err != nil {
		return false, err
	}
	f, err := weather.Assign(spec, p.cfg.World.Hosts(), weatherSeed)
	if err != nil {
		return false, err
	}
	return p.putWeather(f), nil
}

// weatherSeed fixes which origins a share of the weather takes: the same
// spec on the same world names the same origins at every start.
const weatherSeed = 1

// CA is the crowd's certificate authority.
func (p *Pasture) CA() *tlsca.CA { return p.ca }

// Handler serves the origins' routes (as both HTTP listeners do); tests
// and benchmarks can call it directly.
func (p *Pasture) Handler() http.Handler { return p.origins }

// Addr is the bound address of a listener ("https", "http", "dns",
// "admin"), useful when its configured port was 0.
func (p *Pasture) Addr(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs[name]
}

// Start binds every configured listener and serves in the background.
// It fails, having started nothing that keeps running, when any address
// cannot be bound; the error names the flag.
func (p *Pasture) Start(ctx context.Context) error {
	type plan struct {
		name, flag, addr string
		handler          http.Handler
		tls              *tls.Config
		origins          bool // serves the origins: a down origin's address is refused
	}
	var plans []plan
	if p.cfg.HTTPSAddr != "" {
		tc, err := p.originTLS()
		if err != nil {
			return err
		}
		plans = append(plans, plan{"https", "--https", p.cfg.HTTPSAddr, p.origins, tc, true})
	}
	if p.cfg.HTTPAddr != "" {
		plans = append(plans, plan{"http", "--http", p.cfg.HTTPAddr, p.origins, nil, true})
	}
	if p.cfg.AdminAddr != "" {
		plans = append(plans, plan{"admin", "--admin", p.cfg.AdminAddr, p.admin, nil, false})
	}
	var listeners []net.Listener
	fail := func(err error) error {
		for _, l := range listeners {
			l.Close()
		}
		return err
	}
	for _, pl := range plans {
		l, err := net.Listen("tcp", pl.addr)
		if err != nil {
			return fail(listenError(pl.addr, pl.name, pl.flag, err))
		}
		listeners = append(listeners, l)
	}
	if p.cfg.DNSAddr != "" {
		h, err := nameserver.NewHandler(p.dnsConfig())
		if err != nil {
			return fail(err)
		}
		p.logSkippedUpstreams(h)
		d := nameserver.NewServer(p.cfg.DNSAddr, h)
		if err := d.Start(ctx); err != nil {
			return fail(err)
		}
		p.mu.Lock()
		p.dns = d
		p.addrs["dns"] = d.Addr()
		p.mu.Unlock()
		p.log.Info("listening", zap.String("listener", "dns"), zap.String("addr", d.Addr()+" (udp, tcp)"))
	}
	hostAt := p.hostsByAddress()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, pl := range plans {
		srv := &http.Server{Handler: pl.handler, TLSConfig: pl.tls, ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout: 120 * time.Second, ErrorLog: zap.NewStdLog(p.log.Named(pl.name))}
		l := listeners[i]
		p.addrs[pl.name] = l.Addr().String()
		if pl.origins && hostAt != nil {
			l = &downListener{Listener: l, sky: p.sky, hostAt: hostAt, trace: p.wire}
		}
		if pl.tls != nil {
			l = tls.NewListener(l, pl.tls)
		}
		p.servers = append(p.servers, srv)
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				p.errc <- fmt.Errorf("%s listener: %w", pl.name, err)
			}
		}()
		p.log.Info("listening", zap.String("listener", pl.name), zap.String("addr", l.Addr().String()))
	}
	p.logPlan(map[string]string{"--https": p.cfg.HTTPSAddr, "--http": p.cfg.HTTPAddr, "--dns": p.cfg.DNSAddr})
	p.ready = true
	return nil
}

// listenError is the error of a listener that could not be bound, naming
// its flag.
func listenError(addr, name, flag string, err error) error {
	return fmt.Errorf("%w on %s for %s (set %s to another address): %v", ErrListen, addr, name, flag, err)
}

// CheckListen binds, and closes at once, every address c would listen on
// (its HTTPS, HTTP, admin and DNS listeners), returning the error Start
// would give for the first that cannot be bound (wrapping ErrListen, or
// the nameserver's): a port in use or privileged is found before a first
// start spends minutes making keys. Another process may still take a port
// before Start binds it.
func (c Config) CheckListen() error {
	for _, l := range []struct{ name, flag, addr string }{
		{"https", "--https", c.HTTPSAddr}, {"http", "--http", c.HTTPAddr}, {"admin", "--admin", c.AdminAddr},
	} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return listenError(l.addr, l.name, l.flag, err)
		}
		ln.Close()
	}
	if c.DNSAddr != "" {
		return nameserver.CheckListen(c.DNSAddr)
	}
	return nil
}

// originTLS is the HTTPS listener's configuration: a leaf for each origin
// by SNI, made on demand, as the origin's weather has it.
func (p *Pasture) originTLS() (*tls.Config, error) {
	return p.ca.OnDemandTLSConfig(tlsca.OnDemand{Serves: func(name string) bool {
		_, ok := p.cfg.World.Origin(name)
		return ok
	}, Handshake: skyHandshake(p.sky, p.wire)})
}

// ReleaseHeld lets go of every request the weather holds (black holes are
// closed, slow waits served at once), for good: a crowd shutting down
// calls it before its inbox stops, so that a held delivery still meets a
// working inbox. Shutdown calls it too.
func (p *Pasture) ReleaseHeld() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closing:
	default:
		close(p.closing) // hijacked black holes are not the servers' to close
	}
}

// Errors delivers listener failures after Start.
func (p *Pasture) Errors() <-chan error { return p.errc }

// Shutdown stops every listener, letting requests in flight finish
// within ctx's deadline (or the configured grace).
func (p *Pasture) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ShutdownGrace)
	defer cancel()
	p.ReleaseHeld()
	p.mu.Lock()
	p.ready = false
	servers, d := p.servers, p.dns
	p.servers, p.dns = nil, nil
	p.mu.Unlock()
	var errs []error
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, err)
			s.Close()
		}
	}
	if d != nil {
		errs = append(errs, d.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// logSkippedUpstreams warns, at start, of upstreams the DNS dropped as
// itself: the user asked for that forwarding, and would otherwise learn
// of its absence only from names refused later.
func (p *Pasture) logSkippedUpstreams(h nameserver.Handler) {
	why := h.SkipReason()
	if why == "" {
		return
	}
	fields := []zap.Field{zap.String("why", why), zap.Strings("skipped", h.Skipped()), zap.Strings("forwards_to", h.Upstreams())}
	if len(h.Upstreams()) == 0 {
		fields = append(fields, zap.String("then", "the crowd's DNS forwards no other names: answer them with --dns-record NAME=IP, or give --dns-upstream IP of a resolver that is not the crowd"))
	}
	p.log.Warn("a DNS upstream is the crowd's own DNS listener: skipped, as forwarding to it would loop", fields...)
}

// dnsConfig describes the DNS to serve. Self is just the listen address:
// the DNS handler widens a wildcard address to every local one itself.
func (p *Pasture) dnsConfig() nameserver.Config {
	c := nameserver.Config{
		Hosts:      p.cfg.World.Hosts(),
		Zone:       p.cfg.World.Config.Zone(),
		Advertise:  p.cfg.Advertise,
		Records:    p.cfg.DNSRecords,
		Upstreams:  p.cfg.DNSUpstreams,
		ForwardFor: p.cfg.DNSForwardFor,
		Self:       []string{p.cfg.DNSAddr},
		Logger:     p.log.Named("dns"),
		Lapsed:     skyLapsed(p.sky),
		OnLapsed:   lapsedLookup(p.sky, p.wire),
	}
	if p.plan != nil {
		p.planDNS(&c)
	}
	return c
}
