package pasture

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/internal/statedir"
	"github.com/crowdfed/crowd/pasture/tlsca"
	"github.com/crowdfed/crowd/signing"
)

// CrowdConfig is everything a running crowd is built from: the world, the
// listeners and who the crowd says it is.
type CrowdConfig struct {
	// World is the world's shape and state directory, checked by StartCrowd; its Logger is
	// set from WorldLogger.
	World actors.Config
	// Listen are the listeners' addresses and the DNS's records; its World,
	// Version, Logger, Registry, Inbox and Admin are filled by StartCrowd.
	Listen Config
	// Version is the crowd's version (NodeInfo, the admin API).
	Version string
	// UserAgent is what the crowd's own requests (Accepts, sends) say.
	UserAgent string
	// Logger receives the crowd's logs; nil means none.
	Logger *zap.Logger
	// WorldLogger receives the world's own logs (a first start's key
	// making, worth seeing when Logger is quiet); nil means Logger.
	WorldLogger *zap.Logger
}

// Crowd is a started crowd: the world, its inboxes and its listeners, on a
// state directory it owns. `crowd serve` runs one, a standalone flood one
// in-process. Shut it down with Shutdown.
type Crowd struct {
	// World is the served world.
	World *actors.World
	// Pasture is its listeners (Addr, CA, Errors).
	Pasture *Pasture
	inbox   *inbox.Inbox
	lock    *statedir.Lock
}

// StartCrowd checks cfg.World (an error wrapping actors.ErrConfig names the
// flag), takes the state directory (one owner at a time: an error wrapping
// statedir.ErrNotDir, or naming the owner's pid), opens
// the world (keys, follow graph), builds its inboxes and serves them on
// cfg.Listen. On error nothing started keeps running and the state is
// released; ctx done while the world's keys are made stops that making
// (the error wraps ctx.Err(), the keys made are kept).
func StartCrowd(ctx context.Context, cfg CrowdConfig) (*Crowd, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	wcfg := cfg.World
	if err := wcfg.Validate(); err != nil {
		return nil, err
	}
	wcfg.Logger = cmp.Or(cfg.WorldLogger, cfg.Logger)
	plan, err := originPlan(cfg.Listen.Range, wcfg)
	if err != nil {
		return nil, err // before a first start makes keys for a minute
	}
	// A range whose shard's addresses this machine cannot bind (no local
	// route yet) is said at once, naming --advertise and the route to add:
	// every Accept and signed GET the crowd sends leaves from its origin's
	// address, and so does an attached flood's every send (which stops,
	// saying so). Warned of, not refused: the compose recipe adds the route
	// from a one-shot container once the crowd's has started.
	if plan != nil {
		switch err := plan.CheckLocal(wcfg.Shard.I); {
		case errors.Is(err, originaddr.ErrUncheckable):
			cfg.Logger.Warn("the origins' addresses cannot be checked here", zap.Error(err))
		case err != nil:
			cfg.Logger.Warn("the origins' addresses are not local yet: their sends fail until the route is added", zap.Error(err))
		}
	}
	lock, err := statedir.Acquire(wcfg.StateDir)
	if err != nil {
		return nil, err
	}
	// A port in use is found now, not after a first start's keys; after
	// the lock, so that a second serve of the same state (and ports) is
	// told whose state it is.
	if err := cfg.Listen.CheckListen(); err != nil {
		lock.Release()
		return nil, err
	}
	world, err := actors.OpenContext(ctx, wcfg) // a SIGINT stops a first start's key making
	if err != nil {
		lock.Release()
		return nil, err
	}
	// For crowd keys rotate, which must rotate in the world served here.
	if err := actors.RecordServed(wcfg); err != nil {
		world.Close()
		lock.Release()
		return nil, err
	}
	c, err := serveWorld(ctx, world, cfg)
	if err != nil {
		world.Close()
		lock.Release()
		return nil, err
	}
	c.lock = lock
	return c, nil
}

// serveWorld builds the inboxes of world and serves them with the
// listeners of cfg.Listen.
func serveWorld(ctx context.Context, world *actors.World, cfg CrowdConfig) (*Crowd, error) {
	ca, err := tlsca.LoadOrCreate(filepath.Join(world.Config.StateDir, "tls"))
	if err != nil {
		return nil, err
	}
	reg := NewRegistry()
	plan, err := originPlan(cfg.Listen.Range, world.Config)
	if err != nil {
		return nil, err
	}
	// The inbox reads the weather of the pasture made after it, set before
	// either serves.
	var p *Pasture
	in, err := inbox.New(inbox.Config{World: world, Client: originClient(ca, 30*time.Second, plan),
		Signer: signing.NewSigner(signing.SignerOptions{UserAgent: cfg.UserAgent}), StateDir: world.Config.StateDir,
		Logger: cfg.Logger.Named("inbox"), Registerer: reg, OriginWeather: func(host string) string { return p.OriginWeather(host) }})
	if err != nil {
		return nil, err
	}
	pcfg := cfg.Listen
	pcfg.World, pcfg.Version, pcfg.Logger, pcfg.Registry = world, cfg.Version, cfg.Logger, reg
	pcfg.Inbox, pcfg.Admin = in, in.AdminRoutes
	if p, err = New(pcfg); err != nil {
		return nil, err
	}
	if err := in.Start(ctx); err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		in.Shutdown(context.Background())
		return nil, err
	}
	return &Crowd{World: world, Pasture: p, inbox: in}, nil
}

// Shutdown stops the crowd within ctx: the inbox's live streams first
// (they would hold the admin server open), then the listeners (held
// deliveries let go, requests in flight answered by a working inbox and
// journaled), then the inbox, the world's follow graph, and the state
// directory's lock.
func (c *Crowd) Shutdown(ctx context.Context) error {
	var errs []error
	c.inbox.EndStreams()
	if err := c.Pasture.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := c.inbox.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("inbox: %w", err))
	}
	if err := c.World.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := c.lock.Release(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// OutgoingClient is the crowd's client for the SUT and other peers: the
// machine's roots plus the crowd's own CA (its origins talk to each other
// over TLS too), keep-alive, and bounded timeouts.
func OutgoingClient(ca *tlsca.CA, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           originaddr.BindDial(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}),
			TLSClientConfig:       &tls.Config{RootCAs: RootsWith(ca.CertPEM()), MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
	}
}

// RootsWith is the machine's roots plus caPEM (the crowd's CA): what a
// client of the crowd's origins and of the SUT trusts.
func RootsWith(caPEM []byte) *x509.CertPool {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	roots.AppendCertsFromPEM(caPEM)
	return roots
}
