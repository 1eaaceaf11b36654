package loadrun

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/pasture"
)

// Environment is where a run happens: the world whose actors send, how
// to reach the targets, where Follows are registered, and the crowd's
// admin API. It is attached (a running crowd serve) or standalone (the
// world started in this process); Close ends what it started.
type Environment struct {
	// unreached says why the attached crowd's own origins are not reached
	// at its HTTPS listener ("" when they are, or standalone): the advice
	// to a flood that cannot resolve the crowd's names begins with it.
	unreached string
	World     *actors.World
	Roots     *x509.CertPool    // the machine's roots and the crowd's CA
	Hosts     map[string]string // host → ip:port of the crowd's own origins, when known
	Register  func(context.Context, traffic.FollowRegistration) error
	Outbox    traffic.OutboxSink // where the Creates sent are listed: the crowd's outboxes
	Admin     *adminapi.Client   // the crowd's admin API (nil: none)
	What      string             // which crowd, for the log
	Shard     string
	close     func()
	// Fetchbacks counts what the SUT fetches back from the crowd's origins
	// during a run (nil: it cannot).
	Fetchbacks FetchbackCounter
	// Plan is where the origins are, when each has its own address: the
	// run's signed requests leave from them. Nil: one shared address.
	Plan    *originaddr.Plan
	vocab   vocabSinks     // where edits, deletions and undone Follows go
	weather weatherControl // where a weather timeline is put in force
}

// Close ends the environment: the in-process crowd, or the borrowed keys.
func (e *Environment) Close() { e.close() }

// openEnvironment starts or reaches the run's environment.
func openEnvironment(ctx context.Context, c Config, log *zap.Logger) (*Environment, error) {
	if c.Standalone {
		return standalone(ctx, c, log)
	}
	return attached(ctx, c, log)
}

// standalone runs the world in this process, on the HTTPS/HTTP/DNS
// listeners of c and an admin API on AdminAddr (default 127.0.0.1:0).
func standalone(ctx context.Context, c Config, log *zap.Logger) (*Environment, error) {
	admin := c.AdminAddr
	if admin == "" {
		admin = "127.0.0.1:0"
	}
	listen := pasture.Config{HTTPSAddr: c.HTTPS, HTTPAddr: c.HTTP, DNSAddr: c.DNS, AdminAddr: admin, AdminToken: c.AdminToken,
		Advertise: []net.IP{net.IPv4(127, 0, 0, 1)}}
	// The in-process crowd logs only what needs attention: the flood's
	// output is the report; but a first start's key making is worth seeing.
	cw, err := pasture.StartCrowd(ctx, pasture.CrowdConfig{World: c.World, Listen: listen, Version: c.Version,
		UserAgent: c.UserAgent, Logger: quietLogger(log.Named("crowd")), WorldLogger: log.Named("crowd")})
	if errors.Is(err, statedir.ErrNotDir) || errors.Is(err, actors.ErrConfig) {
		return nil, usage(err)
	}
	if err != nil {
		return nil, err
	}
	addr := dialable(cw.Pasture.Addr("https"))
	hosts := map[string]string{}
	for _, h := range cw.World.Hosts() {
		hosts[h] = addr
	}
	log.Info("in-process crowd", zap.Int("origins", len(cw.World.Origins)), zap.Int("actors", cw.World.NumPersons()),
		zap.String("https", addr), zap.String("admin", cw.Pasture.Addr("admin")), zap.String("state", c.World.StateDir))
	// nil only without an admin listener; off loopback it needs the token the pasture took
	ac, _ := adminapi.New("http://"+dialable(cw.Pasture.Addr("admin")), adminapi.Options{Token: cw.Pasture.AdminToken()})
	return &Environment{
		World: cw.World, Roots: pasture.RootsWith(cw.Pasture.CA().CertPEM()), Hosts: hosts, Admin: ac,
		Register: traffic.GraphRegister(cw.World.Graph), Outbox: traffic.WorldOutbox(cw.World),
		What: "the in-process crowd", Shard: c.World.Shard.String(), Fetchbacks: localFetchbacks{cw.Pasture.Fetchbacks()},
		vocab: worldVocab(cw.World), weather: pastureWeather{p: cw.Pasture},
		close: func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := cw.Shutdown(sctx); err != nil {
				log.Warn("in-process crowd shutdown", zap.Error(err))
			}
		},
	}, nil
}

// dialable turns a listener's address into one to dial: a wildcard host
// (":8443", "[::]:8443") becomes loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// attached drives the crowd serving at c.Admin: its world's shape comes
// from /api/world, its keys from World.StateDir (checked against the ones
// it serves), its CA from /ca.pem, and Follows are registered through
// /api/following.
func attached(ctx context.Context, c Config, log *zap.Logger) (*Environment, error) {
	info, err := c.Admin.World(ctx)
	if err != nil {
		var nc *adminapi.UnreachableError
		if errors.As(err, &nc) {
			return nil, fmt.Errorf("no crowd answers at %s (--admin): start one with `crowd serve`, or pass --standalone to run the world in this process", c.AdminAddr)
		}
		return nil, err
	}
	if len(info.Origins) == 0 || len(info.Origins[0].Actors) == 0 {
		return nil, fmt.Errorf("the crowd at %s (--admin) describes an empty world", c.AdminAddr)
	}
	plan, err := attachedPlan(info, c.AdminAddr)
	if err != nil {
		return nil, err
	}
	world, err := borrowKeys(c, info)
	if err != nil {
		return nil, err
	}
	caPEM, err := c.Admin.CA(ctx)
	if err != nil {
		world.Close()
		return nil, fmt.Errorf("the crowd's CA from %s: %w", c.AdminAddr, err)
	}
	hosts, unreached, err := crowdHosts(ctx, c, world, plan, listenerFrom(info.HTTPS, c.AdminAddr), pasture.RootsWith(caPEM), log)
	if err != nil {
		world.Close()
		return nil, err
	}
	log.Info("attached", zap.String("admin", c.AdminAddr), zap.Int("origins", len(world.Origins)),
		zap.Int("actors", world.NumPersons()), zap.String("state", c.World.StateDir))
	return &Environment{
		World: world, Roots: pasture.RootsWith(caPEM), Hosts: hosts,
		Register: func(ctx context.Context, f traffic.FollowRegistration) error {
			_, err := c.Admin.RegisterFollowing(ctx, adminapi.FollowingRequest(f))
			return err
		}, Outbox: adminOutbox(c.Admin), Admin: c.Admin, What: "the crowd at " + c.AdminAddr, Shard: info.Shard,
		Fetchbacks: adminFetchbacks{c.Admin},
		vocab: vocabSinks{changes: adminChanges(c.Admin), reactions: adminReactions(c.Admin), unfollow: func(ctx context.Context, f traffic.FollowRegistration) error {
			_, err := c.Admin.Unfollow(ctx, adminapi.FollowingRequest(f))
			return err
		}},
		close: func() { world.Close() }, Plan: plan, weather: adminWeather{c: c.Admin},
		unreached: unreached,
	}, nil
}

// crowdHosts is where the attached crowd's own origins are reached: at
// --crowd-https when given (a usage error when this crowd's HTTPS does not
// answer there), else at the HTTPS listener the crowd's admin API gave
// (listener), so that no resolver is asked for names the crowd itself
// says where to find; each origin at its own address on that port when
// plan gives origins theirs. "Answers" is a TLS handshake for one of the
// origins' names that roots (the crowd's CA) accept: a bare connection
// would pass a plain HTTP port or another crowd's listener, whose every
// send then fails. The origins are tried in turn (at most
// maxListenerChecks): one in weather refuses its handshake, or serves a
// broken certificate, on purpose. A listener that does not answer so from
// here (the crowd in another network, its port not published), or none,
// leaves the names to this machine's resolver; note then says why, for
// the advice when that does not know them either.
func crowdHosts(ctx context.Context, c Config, world *actors.World, plan *originaddr.Plan, listener string, roots *x509.CertPool, log *zap.Logger) (hosts map[string]string, note string, err error) {
	hosts = map[string]string{}
	given := c.CrowdHTTPS != ""
	if given {
		if _, _, err := net.SplitHostPort(c.CrowdHTTPS); err != nil {
			return nil, "", usagef("--crowd-https %q is not host:port", c.CrowdHTTPS)
		}
		listener = c.CrowdHTTPS
	}
	if listener == "" {
		return hosts, "the crowd's admin API gives no HTTPS listener (a serve started with --https \"\" has none)", nil
	}
	// Every send of a self-flood goes there (each origin to its own
	// address, when they have theirs).
	planHosts(world, plan, listener, hosts)
	// Through a guard, as every send: a listener on a public address is
	// not sent a byte without --allow-public-target.
	guard := flood.NewGuard(flood.GuardOptions{AllowPublic: c.AllowPublic})
	var conn net.Conn
	var addr, why string
	for _, o := range world.Origins[:min(len(world.Origins), maxListenerChecks)] {
		at := cmp.Or(hosts[o.Host], listener)
		cn, err := handshake(ctx, guard, at, &tls.Config{RootCAs: roots, ServerName: o.Host, NextProtos: []string{"http/1.1"}})
		if err == nil {
			conn = cn
			break
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err() // interrupted: 130, not a refusal
		}
		reason := flood.NoAnswerReason(err)
		if why == "" {
			addr = at
			switch reason {
			case record.NoAnswerRefused, record.NoAnswerTimeout:
				why = "nothing answers there"
			case record.NoAnswerPublic:
				why = "it is on a public address (pass --allow-public-target to reach it)"
			default:
				why = "it answers, but not as this crowd's HTTPS (" + reason + " for " + o.Host + ")"
			}
		}
		if reason == record.NoAnswerTimeout || reason == record.NoAnswerPublic || len(hosts) == 0 && !weatherBroken(reason) {
			break // no other name fares better at the one listener
		}
	}
	clear(hosts)
	if conn == nil {
		if given {
			return nil, "", usagef("--crowd-https %s: %s: pass where the HTTPS listener of the crowd at %s (its --https) answers from here", addr, why, c.AdminAddr)
		}
		log.Info("the crowd's HTTPS listener, by its admin API, does not answer from here: its names are asked of this machine's resolver",
			zap.String("listener", addr), zap.String("why", why))
		return hosts, "its HTTPS listener, by its admin API, is " + addr + ", and " + why + " from here", nil
	}
	// The address dialled, as an IP: a listener on every interface is on
	// the admin API's host, which may be a name (a compose service's).
	reached := conn.RemoteAddr().String()
	conn.Close()
	for _, h := range world.Hosts() {
		hosts[h] = reached
	}
	planHosts(world, plan, reached, hosts)
	from := "by its admin API"
	if given {
		from = "by --crowd-https"
	}
	log.Info("the crowd's own origins are reached at its HTTPS listener, "+from, zap.String("listener", reached))
	return hosts, "", nil
}

// handshake connects to addr through guard and completes a TLS handshake
// of tc, within 3 s.
func handshake(ctx context.Context, guard *flood.Guard, addr string, tc *tls.Config) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	raw, err := guard.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn := tls.Client(raw, tc)
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}

// weatherBroken reports whether a handshake failed (flood.NoAnswerReason)
// as the crowd's weather breaks one origin's on purpose: down resets the
// connection, tls-expired and tls-wrong-name serve such certificates.
// Another origin's name may then find the listener.
func weatherBroken(reason string) bool {
	switch reason {
	case record.NoAnswerReset, record.NoAnswerExpired, record.NoAnswerWrongName:
		return true
	}
	return false
}

// maxListenerChecks bounds the origins whose names crowdHosts tries at
// the listener: enough that a weather spec putting a few in conditions
// that break a handshake leaves one to answer, few enough that a listener
// that is someone else's is said at once.
const maxListenerChecks = 20

// listenerFrom is where a listener given as listen (":8443", "0.0.0.0:8443",
// "127.0.0.1:8443") answers from this machine: on the admin API's host
// when it listens on every interface; "" when listen says nothing usable.
func listenerFrom(listen, admin string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || port == "" || port == "0" {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if host, _, err = net.SplitHostPort(admin); err != nil {
			return ""
		}
	}
	return net.JoinHostPort(host, port)
}

// borrowKeys opens the attached crowd's world from its --state, read only,
// and checks that the first origin's keys are the ones the crowd serves (a usage error
// otherwise: the --state is another crowd's).
func borrowKeys(c Config, info adminapi.WorldInfo) (*actors.World, error) {
	shard, err := actors.ParseShard(info.Shard)
	if err != nil {
		return nil, fmt.Errorf("the crowd at %s (--admin): %w", c.AdminAddr, err)
	}
	state := c.World.StateDir
	if st, err := os.Stat(filepath.Join(state, "keys")); err != nil || !st.IsDir() {
		return nil, usagef("--state %s holds no keys: pass the --state of the crowd serving at %s, whose keys the flood signs with", state, c.AdminAddr)
	}
	cfg := actors.Config{Actors: len(info.Origins[0].Actors), Domain: info.Domain, StateDir: state, Shard: shard,
		EphemeralGraph: true, BorrowKeys: true, Backend: c.World.Backend}
	for _, o := range info.Origins {
		cfg.Origins = max(cfg.Origins, o.Index)
	}
	if info.Summary != nil { // a paged world: its size is in the summary
		cfg.Origins, cfg.Actors = info.Summary.Origins, info.Summary.ActorsPerOrigin
	}
	// The first origin's keys (its actors and its instance actor) prove the
	// --state is that crowd's; checking a million would add nothing.
	first := info.Origins[0]
	want := map[string]string{first.Instance.ID: first.Instance.KeySHA256}
	for _, a := range first.Actors {
		want[a.ID] = a.KeySHA256
	}
	world, err := actors.Open(cfg)
	if errors.Is(err, actors.ErrKeyFile) {
		return nil, usage(err) // a key missing or unreadable: --state is not that crowd's
	}
	if err != nil {
		return nil, fmt.Errorf("loading the crowd's keys from --state %s: %w", state, err)
	}
	for _, a := range append(world.Origins[0].Persons(), world.Origins[0].Instance) {
		der, err := x509.MarshalPKIXPublicKey(a.Key.Public())
		sum := sha256.Sum256(der)
		if err != nil || want[a.ID] != hex.EncodeToString(sum[:]) {
			world.Close()
			return nil, usagef("the key of %s in --state %s is not the one the crowd at %s serves: pass that crowd's --state", a.Acct(), state, c.AdminAddr)
		}
	}
	return world, nil
}

// quietLogger is log raised to warnings, or log itself when the level
// already asks for less: zap refuses, and complains on stderr, to
// "increase" to a level below the one set.
func quietLogger(log *zap.Logger) *zap.Logger {
	if !log.Core().Enabled(zap.InfoLevel) {
		return log
	}
	return log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))
}

// crowdRelations reads the crowd's follow graph through its admin API and
// answers the state of crowd actor local's relation to remote (pending,
// accepted, rejected; "" for none), as it stood when read.
func crowdRelations(ctx context.Context, admin *adminapi.Client) (func(local, remote string) string, error) {
	infos, err := admin.Follows(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("reading the crowd's follows: %w", err)
	}
	type pair struct{ local, remote string }
	state := map[pair]string{}
	for _, fi := range infos {
		for _, rel := range fi.Following {
			state[pair{rel.Local, rel.Remote}] = rel.State
		}
	}
	return func(local, remote string) string { return state[pair{local, remote}] }, nil
}

// DefaultPruneAge is how long a Follow of the crowd's may stay pending
// before it is taken for one the SUT will never answer: servers answer a
// Follow in seconds, and retry a failed Accept for minutes.
const DefaultPruneAge = time.Hour

// warnStalePending reports the crowd's Follows pending (unanswered) for
// longer than DefaultPruneAge: they keep their pairs from being followed
// again. A crowd that cannot say is not an error here.
func warnStalePending(ctx context.Context, log *zap.Logger, admin *adminapi.Client) {
	res, err := admin.Prune(ctx, adminapi.PruneRequest{OlderThan: DefaultPruneAge.String(), DryRun: true})
	if err != nil || len(res.Stale) == 0 {
		return
	}
	log.Warn("some of the crowd's Follows were never answered: their pairs are not followed again until `crowd follows prune` clears them",
		zap.Int("pending", len(res.Stale)), zap.Duration("older_than", DefaultPruneAge))
}
