package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/pasture/nameserver"
	"github.com/crowdfed/crowd/pasture/tlsca"
)

// The scale section's rows: a large world's start-up, memory, TLS and DNS.
const (
	rowScaleStartup = "scale_startup"
	rowScaleMemory  = "scale_memory"
	rowScaleTLS     = "scale_tls"
	rowScaleDNS     = "scale_dns"
)

// scaleRowKeys are the scale section's rows, in table order.
func scaleRowKeys() []string {
	return []string{rowScaleStartup, rowScaleMemory, rowScaleTLS, rowScaleDNS}
}

// The shapes compared: the default world's origins and the large world
// (-large-origins, 10 000 by default), each origin with scaleActors actors,
// both in a pool of -large-pool keys (made once under -state), so the
// origins alone differ.
const (
	scaleSmall  = 20
	scaleActors = 100
)

// scaleDir is where a scale world's state lives under the bench's -state.
func (b *bench) scaleDir(origins int) string {
	return filepath.Join(b.cfg.State, fmt.Sprintf("o%d-a%d-pool%d", origins, scaleActors, b.cfg.LargePool))
}

// scaleNames are the host names of the large world, in origin order.
func (b *bench) scaleNames() []string {
	names := make([]string, b.cfg.LargeOrigins)
	for i := range names {
		names[i] = fmt.Sprintf(benchDomain, i+1)
	}
	return names
}

func (b *bench) scaleSection(ctx context.Context) {
	b.scaleStartup(ctx)
	names := b.scaleNames()
	if ctx.Err() == nil {
		b.scaleTLS(ctx, names)
	}
	if ctx.Err() == nil {
		b.scaleDNS(ctx, names)
	}
}

// scaleStartup: exec → /readyz 200 of `crowd serve` with persisted state,
// 20 and 10 000 origins × 100 actors, in rounds (roundOrder), and VmHWM then.
func (b *bench) scaleStartup(ctx context.Context) {
	nameT := fmt.Sprintf("start-up, %d → %d origins × %d actors, persisted state (exec → /readyz 200)", scaleSmall, b.cfg.LargeOrigins, scaleActors)
	nameM := fmt.Sprintf("crowd serve peak RSS at ready, %d origins × %d actors", b.cfg.LargeOrigins, scaleActors)
	fail := func(err error) {
		b.rep.fail(rowScaleStartup, nameT, "< 2 s", err)
		b.rep.fail(rowScaleMemory, nameM, "≤ 1 GiB", err)
	}
	if b.crowdErr != nil {
		fail(b.crowdErr)
		return
	}
	sizes := []int{scaleSmall, b.cfg.LargeOrigins}
	for _, n := range sizes {
		t0 := time.Now()
		w, err := actors.Open(actors.Config{Origins: n, Actors: scaleActors, Domain: benchDomain, StateDir: b.scaleDir(n),
			KeyPool: b.cfg.LargePool, EphemeralGraph: true})
		if err != nil {
			fail(err)
			return
		}
		w.Close()
		b.logf("  %d origins × %d actors: state ready in %s (keys are made once)", n, scaleActors, time.Since(t0).Round(time.Millisecond))
		// The first start makes the CA: not a start with persisted state.
		if _, _, err := b.serveScale(ctx, n); err != nil {
			fail(err)
			return
		}
	}
	var times, mems [2][]float64
	for round := range b.cfg.Rounds {
		for _, i := range roundOrder(round, len(sizes)) {
			n := sizes[i]
			t, hwm, err := b.serveScale(ctx, n)
			if err != nil {
				fail(err)
				return
			}
			times[i], mems[i] = append(times[i], ms(t)), append(mems[i], kbToMiB(hwm))
			b.logf("  crowd serve, %5d origins × %d: ready in %6.1f ms, VmHWM %.1f MiB", n, scaleActors, ms(t), kbToMiB(hwm))
		}
	}
	b.rep.Details[rowScaleStartup] = map[string]any{"origins": sizes, "actors": scaleActors, "key_pool": b.cfg.LargePool, "ms": times, "vmhwm_mib": mems}
	tS, tL := median(times[0]), median(times[1])
	mS, mL := median(mems[0]), median(mems[1])
	rounds := fmt.Sprintf("median of %d starts, the order reversed every other round", len(times[0]))
	perActor := (mL - mS) * 1024 * 1024 / float64((b.cfg.LargeOrigins-scaleSmall)*(scaleActors+1))
	b.rep.set(Row{Key: rowScaleStartup, Name: nameT, Value: tL, Unit: "ms", Ceiling: tS, CeilingName: fmt.Sprintf("%d origins", scaleSmall),
		Ratio: tL / tS, Target: "< 2 s", Met: met(tL < 2000),
		Notes: fmt.Sprintf("%s; --key-pool %d; %d origins: %.0f ms, %d: %.0f ms", rounds, b.cfg.LargePool, b.cfg.LargeOrigins, tL, scaleSmall, tS)})
	b.rep.set(Row{Key: rowScaleMemory, Name: nameM, Value: mL, Unit: "MiB", Ceiling: 1024, CeilingName: "1 GiB",
		Ratio: mL / 1024, Target: "≤ 1 GiB", Met: met(mL <= 1024),
		Notes: fmt.Sprintf("%s; %d origins: %.1f MiB; (%.1f − %.1f) MiB over %d more actors: %.1f bytes an actor at ready (actors are computed on demand; a rendered document costs about 2 KB while cached)",
			rounds, scaleSmall, mS, mL, mS, (b.cfg.LargeOrigins-scaleSmall)*(scaleActors+1), perActor)})
}

// serveScale starts crowd serve as a large world runs: its DNS on, each
// origin at its own address (the DNS table and the address plan are made
// at start), so the row times what such a start does.
func (b *bench) serveScale(ctx context.Context, origins int) (time.Duration, int64, error) {
	return b.serveReady(ctx, "--state", b.scaleDir(origins), "--origins", strconv.Itoa(origins),
		"--actors", strconv.Itoa(scaleActors), "--key-pool", strconv.Itoa(b.cfg.LargePool),
		"--dns", "127.0.0.1:0", "--advertise", scaleAdvertise)
}

// scaleAdvertise gives each origin its own loopback address: on Linux all
// of 127.0.0.0/8 is local, so it needs no set-up.
const scaleAdvertise = "127.1.0.0/16"

// scaleTLS: full handshakes/s against the crowd's on-demand TLS, the SNI
// name cycling over the 10 000 origins (every leaf made before the
// measurement), beside a bare crypto/tls server with one certificate of
// the same kind (ECDSA P-256 from the same CA), in rounds (roundOrder).
func (b *bench) scaleTLS(ctx context.Context, names []string) {
	name := fmt.Sprintf("TLS handshakes/s across %d SNI names (leaves on demand)", len(names))
	target := "≥ 0.8"
	ca, err := tlsca.LoadOrCreate(filepath.Join(b.tmp, "scale-ca"))
	if err != nil {
		b.rep.fail(rowScaleTLS, name, target, err)
		return
	}
	serves := make(map[string]bool, len(names))
	for _, n := range names {
		serves[n] = true
	}
	crowdCfg, err := ca.OnDemandTLSConfig(tlsca.OnDemand{Serves: func(n string) bool { return serves[n] }})
	if err != nil {
		b.rep.fail(rowScaleTLS, name, target, err)
		return
	}
	one, err := crowdCfg.GetCertificate(&tls.ClientHelloInfo{ServerName: names[0]})
	if err != nil {
		b.rep.fail(rowScaleTLS, name, target, err)
		return
	}
	bareCfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*one}}
	crowdAddr, stopCrowd, err := serveHandshakes(crowdCfg)
	if err != nil {
		b.rep.fail(rowScaleTLS, name, target, err)
		return
	}
	defer stopCrowd()
	bareAddr, stopBare, err := serveHandshakes(bareCfg)
	if err != nil {
		b.rep.fail(rowScaleTLS, name, target, err)
		return
	}
	defer stopBare()
	first := handshakeRate(ctx, crowdAddr, names, len(names), time.Minute) // makes every leaf
	b.logf("  first contact with %d names (each leaf made): %.0f handshakes/s", len(names), first)
	addrs := [2]string{crowdAddr, bareAddr}
	var rates [2][]float64
	for round := range b.cfg.Rounds {
		for _, i := range roundOrder(round, 2) {
			rates[i] = append(rates[i], handshakeRate(ctx, addrs[i], names, 0, b.cfg.Measure))
		}
		b.logf("  handshakes/s: crowd %.0f, bare crypto/tls %.0f", rates[0][round], rates[1][round])
	}
	crowd, bare := rates[0], rates[1]
	b.rep.Details[rowScaleTLS] = map[string]any{"crowd": crowd, "bare": bare, "first_contact": first, "names": len(names)}
	c, r := median(crowd), median(bare)
	b.rep.set(Row{Key: rowScaleTLS, Name: name, Value: c, Unit: "/s", Ceiling: r, CeilingName: "bare crypto/tls, one certificate",
		Ratio: c / r, Target: target, Met: met(c/r >= 0.8),
		Notes: fmt.Sprintf("full handshakes (no resumption), client in the bench's process, %d connections at a time, %s per trial; first contact, every leaf made: %.0f/s",
			handshakeWorkers(), b.cfg.Measure, first)})
}

// serveHandshakes accepts TLS connections on 127.0.0.1:0, completes each
// handshake and closes it.
func serveHandshakes(cfg *tls.Config) (string, func(), error) {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		return "", nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	})
	return ln.Addr().String(), func() { ln.Close(); wg.Wait() }, nil
}

func handshakeWorkers() int { return 2 * runtime.GOMAXPROCS(0) }

// handshakeRate completes full handshakes with addr, the SNI name cycling
// over names, for d or until count (when > 0) are done, and returns their
// rate. The client skips certificate verification (the bare server's one
// certificate names one host) but, TLS 1.3, still checks the handshake
// signature, so both servers prove their key.
func handshakeRate(ctx context.Context, addr string, names []string, count int, d time.Duration) float64 {
	return measureRate(ctx, handshakeWorkers(), count, d, func() (func(i int) bool, func()) {
		dialer := &net.Dialer{Timeout: 5 * time.Second}
		return func(i int) bool {
			c, err := tls.DialWithDialer(dialer, "tcp", addr, &tls.Config{ServerName: names[i%len(names)], InsecureSkipVerify: true})
			if err != nil {
				return false
			}
			c.Close()
			return true
		}, func() {}
	})
}

// measureRate runs workers, each made by newWorker, calling its do with
// the next number (0, 1, …) until d has passed, count numbers (when > 0)
// were handed out or ctx ends, and returns the successful calls per second.
func measureRate(ctx context.Context, workers, count int, d time.Duration, newWorker func() (do func(i int) bool, stop func())) float64 {
	var next, done atomic.Int64
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			do, stop := newWorker()
			defer stop()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := next.Add(1) - 1
				if count > 0 && i >= int64(count) {
					return
				}
				if do(int(i)) {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

// scaleDNS: A queries/s answered by the crowd's DNS handler for the
// 10 000 origins, beside a bare miekg/dns handler answering the same names
// from a map, both behind the crowd's DNS server, in rounds (roundOrder).
func (b *bench) scaleDNS(ctx context.Context, names []string) {
	name := fmt.Sprintf("DNS answers/s, %d origins", len(names))
	target := "≥ 0.8"
	crowdH, err := nameserver.NewHandler(nameserver.Config{Hosts: names, Zone: "test.", Advertise: []net.IP{net.IPv4(127, 0, 0, 1)}, Upstreams: []string{}})
	if err != nil {
		b.rep.fail(rowScaleDNS, name, target, err)
		return
	}
	crowdAddr, stopCrowd, err := serveDNS(ctx, crowdH)
	if err != nil {
		b.rep.fail(rowScaleDNS, name, target, err)
		return
	}
	defer stopCrowd()
	bareAddr, stopBare, err := serveDNS(ctx, bareDNSHandler(names))
	if err != nil {
		b.rep.fail(rowScaleDNS, name, target, err)
		return
	}
	defer stopBare()
	addrs := [2]string{crowdAddr, bareAddr}
	var rates [2][]float64
	for round := range b.cfg.Rounds {
		for _, i := range roundOrder(round, 2) {
			rates[i] = append(rates[i], dnsRate(ctx, addrs[i], names, b.cfg.Measure))
		}
		b.logf("  DNS answers/s: crowd %.0f, bare miekg/dns %.0f", rates[0][round], rates[1][round])
	}
	crowd, bare := rates[0], rates[1]
	b.rep.Details[rowScaleDNS] = map[string]any{"crowd": crowd, "bare": bare, "names": len(names)}
	c, r := median(crowd), median(bare)
	b.rep.set(Row{Key: rowScaleDNS, Name: name, Value: c, Unit: "/s", Ceiling: r, CeilingName: "bare miekg/dns handler, same names",
		Ratio: c / r, Target: target, Met: met(c/r >= 0.8),
		Notes: fmt.Sprintf("UDP A queries cycling over every origin, %d clients in the bench's process, %s per trial", dnsWorkers(), b.cfg.Measure)})
}

// bareDNSHandler answers A for names from a map, authoritatively: the
// least a DNS for the crowd's origins must do.
func bareDNSHandler(names []string) dns.Handler {
	table := make(map[string]net.IP, len(names))
	for _, n := range names {
		table[dns.Fqdn(n)] = net.IPv4(127, 0, 0, 1).To4()
	}
	return dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		if len(r.Question) == 1 {
			q := r.Question[0]
			if ip, ok := table[strings.ToLower(q.Name)]; ok && q.Qtype == dns.TypeA {
				m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: ip}}
			} else if !ok {
				m.Rcode = dns.RcodeNameError
			}
		}
		w.WriteMsg(m)
	})
}

func serveDNS(ctx context.Context, h dns.Handler) (string, func(), error) {
	s := nameserver.NewServer("127.0.0.1:0", h)
	if err := s.Start(ctx); err != nil {
		return "", nil, err
	}
	return s.Addr(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(sctx)
	}, nil
}

func dnsWorkers() int { return 4 * runtime.GOMAXPROCS(0) }

// dnsRate asks A of names in turn over UDP, each client on its own socket,
// for d, and returns the answers (NOERROR with one A record) per second.
func dnsRate(ctx context.Context, addr string, names []string, d time.Duration) float64 {
	return measureRate(ctx, dnsWorkers(), 0, d, func() (func(i int) bool, func()) {
		c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
		conn, err := c.Dial(addr)
		if err != nil {
			return func(int) bool { return false }, func() {}
		}
		m := new(dns.Msg)
		return func(i int) bool {
			m.SetQuestion(dns.Fqdn(names[i%len(names)]), dns.TypeA)
			r, _, err := c.ExchangeWithConn(m, conn)
			return err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1
		}, func() { conn.Close() }
	})
}
