package nameserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/miekg/dns"
)

// Server serves a dns.Handler over UDP and TCP on one address.
type Server struct {
	addr string
	h    dns.Handler

	mu       sync.Mutex
	udp, tcp *dns.Server
	bound    string
	done     chan error // receives each server's exit, two in all
}

// NewServer returns a server for addr (host:port; ":53" listens on every address) that
// will pass queries to h. Nothing listens before Start.
func NewServer(addr string, h dns.Handler) *Server {
	return &Server{addr: addr, h: h}
}

// Start binds UDP and TCP on the same address (with port 0, TCP takes the port UDP got) and
// returns once both are serving. A bind failure wraps ErrListen and the cause, and names
// the --dns flag. ctx bounds only the start; Shutdown stops the server.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.udp != nil {
		return errors.New("pasture: DNS server already started")
	}
	pc, ln, err := dnsListen(s.addr)
	if err != nil {
		return err
	}
	udpStarted, tcpStarted := make(chan struct{}), make(chan struct{})
	s.udp = &dns.Server{
		PacketConn: pc, Handler: s.h, UDPSize: dnsServerUDPReadBytes,
		ReadTimeout: dnsServerReadTimeout, NotifyStartedFunc: func() { close(udpStarted) },
	}
	s.tcp = &dns.Server{
		Listener: ln, Handler: s.h,
		ReadTimeout: dnsServerReadTimeout, NotifyStartedFunc: func() { close(tcpStarted) },
	}
	s.bound = pc.LocalAddr().String()
	s.done = make(chan error, 2)
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		go func() { s.done <- srv.ActivateAndServe() }()
	}
	for _, started := range []chan struct{}{udpStarted, tcpStarted} {
		select {
		case <-started:
		case err := <-s.done:
			s.stopLocked(context.Background())
			return fmt.Errorf("%w on %s (change the --dns flag): %w", ErrListen, s.addr, err)
		case <-ctx.Done():
			s.stopLocked(context.Background())
			return ctx.Err()
		}
	}
	return nil
}

// CheckListen binds addr for UDP and TCP, as Start does, and closes both at
// once: nil when Start could bind it a moment later, else Start's error
// (wrapping ErrListen, naming --dns).
func CheckListen(addr string) error {
	pc, ln, err := dnsListen(addr)
	if err != nil {
		return err
	}
	pc.Close()
	ln.Close()
	return nil
}

func dnsListen(addr string) (net.PacketConn, net.Listener, error) {
	fail := func(network string, err error) error {
		return fmt.Errorf("%w: %s %s (change the --dns flag): %w", ErrListen, network, addr, err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fail("udp", err)
	}
	// With port 0 the kernel picks a UDP port that may be taken on TCP: try a few.
	for attempt := 0; ; attempt++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, fail("udp", err)
		}
		_, got, _ := net.SplitHostPort(pc.LocalAddr().String())
		ln, err := net.Listen("tcp", net.JoinHostPort(host, got))
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		if port != "0" || attempt >= 10 {
			return nil, nil, fail("tcp", err)
		}
	}
}

// Addr returns the bound address (port 0 resolved) once started, else the configured one.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bound != "" {
		return s.bound
	}
	return s.addr
}

// Shutdown stops both listeners and waits, within ctx, for queries in progress. Calling it
// on a server that is not running is a no-op.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked(ctx)
}

func (s *Server) stopLocked(ctx context.Context) error {
	if s.udp == nil {
		return nil
	}
	var errs []error
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		// A server that never got to run answers "not started": nothing to wait for.
		if err := srv.ShutdownContext(ctx); err != nil && ctx.Err() != nil {
			errs = append(errs, err)
		}
	}
	// ShutdownContext does not close the PacketConn or listener when the server never started.
	s.udp.PacketConn.Close()
	s.tcp.Listener.Close()
	s.udp, s.tcp, s.bound = nil, nil, ""
	return errors.Join(errs...)
}
