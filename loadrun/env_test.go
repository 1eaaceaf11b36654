package loadrun

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/loopback"
	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/pasture"
	"github.com/crowdfed/crowd/pasture/tlsca"
)

// TestQuietLoggerKeepsWarnings: the in-process crowd's logger shows
// warnings and up whatever --log-level says, and never makes zap complain
// about the level (it did under --log-level error).
func TestQuietLoggerKeepsWarnings(t *testing.T) {
	for _, c := range []struct {
		level    zapcore.Level
		warnings bool
	}{
		{zapcore.DebugLevel, true},  // raised to warn
		{zapcore.InfoLevel, true},   // raised to warn
		{zapcore.WarnLevel, true},   // already there
		{zapcore.ErrorLevel, false}, // less than warn asked: kept as asked
	} {
		var complaints bytes.Buffer
		core, logs := observer.New(c.level)
		quiet := quietLogger(zap.New(core, zap.ErrorOutput(zapcore.AddSync(&complaints))))
		quiet.Info("info")
		quiet.Warn("warn")
		if complaints.Len() > 0 {
			t.Errorf("%v: zap complained: %s", c.level, complaints.String())
		}
		if n := logs.FilterMessage("info").Len(); n != 0 {
			t.Errorf("%v: an info line got through", c.level)
		}
		if n := logs.FilterMessage("warn").Len(); (n == 1) != c.warnings {
			t.Errorf("%v: %d warnings, want shown=%v", c.level, n, c.warnings)
		}
	}
}

// TestListenerFrom: where the crowd's HTTPS listener answers from here, by
// the address it was given and the admin API's: as given when it names a
// host, on the admin's host when it listens on every interface.
func TestListenerFrom(t *testing.T) {
	for _, c := range []struct{ listen, admin, want string }{
		{"127.0.0.1:18443", "127.0.0.1:9180", "127.0.0.1:18443"}, // a host of its own
		{":8443", "10.0.0.5:9180", "10.0.0.5:8443"},              // every interface: the admin's host
		{"0.0.0.0:8443", "10.0.0.5:9180", "10.0.0.5:8443"},       // the same, written out
		{"[::]:8443", "[::1]:9180", "[::1]:8443"},                // and in IPv6
		{"", "127.0.0.1:9180", ""},                               // no listener (or an older crowd)
		{"127.0.0.1:0", "127.0.0.1:9180", ""},                    // a port picked at start: not known
	} {
		if got := listenerFrom(c.listen, c.admin); got != c.want {
			t.Errorf("listenerFrom(%q, %q) = %q, want %q", c.listen, c.admin, got, c.want)
		}
	}
}

// crowdListener serves the crowd's origins over TLS as crowd serve does
// (leaves its CA makes on demand), each handshake as weather says for its
// name; its address and the CA's roots.
func crowdListener(t *testing.T, weather func(name string) tlsca.Handshake) (string, *x509.CertPool) {
	t.Helper()
	tc, roots := crowdTLS(t, weather)
	return serveTLS(t, loopback.Free(t), tc), roots
}

// crowdTLS is a crowd's TLS: a CA of its own, leaves made on demand, each
// handshake as weather says for its name; and the CA's roots.
func crowdTLS(t *testing.T, weather func(name string) tlsca.Handshake) (*tls.Config, *x509.CertPool) {
	t.Helper()
	ca, err := tlsca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := ca.OnDemandTLSConfig(tlsca.OnDemand{Serves: func(string) bool { return true },
		Handshake: func(name string, _ net.Addr) tlsca.Handshake { return weather(name) }})
	if err != nil {
		t.Fatal(err)
	}
	return tc, pasture.RootsWith(ca.CertPEM())
}

// serveTLS serves HTTPS with tc at addr until the test ends; the address bound.
func serveTLS(t *testing.T, addr string, tc *tls.Config) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(tls.NewListener(l, tc))
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// TestCrowdHostsReachTheListener: where an attached flood sends for the
// crowd's own origins, by --crowd-https and by the listener the crowd's
// admin API gives, each answering (a TLS handshake for one of the crowd's
// names that its CA vouches for) or not. No resolver is asked in any row:
// each either maps the names, or leaves them unmapped and says why, or
// refuses --crowd-https as a usage error.
func TestCrowdHostsReachTheListener(t *testing.T) {
	w, err := actors.Open(actors.Config{Origins: 3, Actors: 1, Domain: "flood%d.test", StateDir: t.TempDir(), EphemeralGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	healthy := func(string) tlsca.Handshake { return tlsca.Good }
	crowd, roots := crowdListener(t, healthy)
	// The same crowd with its first origin down, or with every origin's certificate lapsed.
	firstDown, firstDownRoots := crowdListener(t, func(name string) tlsca.Handshake {
		return map[bool]tlsca.Handshake{true: tlsca.Refuse, false: tlsca.Good}[name == "flood1.test"]
	})
	allExpired, allExpiredRoots := crowdListener(t, func(string) tlsca.Handshake { return tlsca.Expired })
	another, _ := crowdListener(t, healthy) // another crowd: its own CA
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	plainAddr := plain.Listener.Addr().String()
	silent := loopback.Free(t) // nothing listens there
	for _, c := range []struct {
		name, given, advertised string
		roots                   *x509.CertPool // nil: the crowd's
		mapped                  string         // where every origin goes; "" = left to the resolver
		note                    string         // why not, for the advice (contained)
		refused                 string         // a usage error containing this
	}{
		// The listener the admin API gives answers: every origin goes there.
		{"advertised", "", crowd, nil, crowd, "", ""},
		// --crowd-https wins over the advertised listener.
		{"given", crowd, silent, nil, crowd, "", ""},
		// The first origin is down (its handshake reset): the second's name finds the listener.
		{"first origin down", "", firstDown, firstDownRoots, firstDown, "", ""},
		// The advertised listener does not answer from here: the names are left to the resolver, and the advice says so.
		{"advertised silent", "", silent, nil, "", "is " + silent + ", and nothing answers there from here", ""},
		// It answers, but not TLS: not taken for the crowd's listener.
		{"advertised plain", "", plainAddr, nil, "", "not as this crowd's HTTPS (TLS: the answer is not TLS", ""},
		// A listener on a public address: not sent a byte without --allow-public-target.
		{"advertised public", "", "93.184.215.14:443", nil, "", "it is on a public address (pass --allow-public-target", ""},
		// No listener advertised (an older crowd, or --https ""): said so.
		{"none", "", "", nil, "", "gives no HTTPS listener", ""},
		// A --crowd-https where nothing answers is refused before the run.
		{"given silent", silent, crowd, nil, "", "", "--crowd-https " + silent + ": nothing answers there"},
		// A --crowd-https on a plain HTTP port (the crowd's --http).
		{"given plain", plainAddr, crowd, nil, "", "", "it answers, but not as this crowd's HTTPS (TLS: the answer is not TLS"},
		// A --crowd-https that is another crowd's listener.
		{"given another's", another, "", nil, "", "", "not as this crowd's HTTPS (TLS: certificate signed by an authority not trusted for flood1.test)"},
		// Every origin's certificate lapsed: no name finds it, said by the first.
		{"given, all expired", allExpired, "", allExpiredRoots, "", "", "(TLS: certificate expired or not yet valid for flood1.test)"},
		// A --crowd-https that is not host:port.
		{"given bad", "flood1.test", "", nil, "", "", "is not host:port"},
	} {
		hosts, note, err := crowdHosts(context.Background(), Config{CrowdHTTPS: c.given}, w, nil, c.advertised, cmp.Or(c.roots, roots), zap.NewNop())
		if c.refused != "" {
			var ue *record.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: error %v, want a usage error containing %q", c.name, err, c.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if (note == "") != (c.note == "") || !strings.Contains(note, c.note) {
			t.Errorf("%s: note %q, want %q", c.name, note, c.note)
		}
		for _, h := range w.Hosts() {
			if hosts[h] != c.mapped {
				t.Errorf("%s: %s goes to %q, want %q", c.name, h, hosts[h], c.mapped)
			}
		}
	}
}

// TestCrowdHostsAtTheOriginsOwnAddresses: with an address per origin, the
// listener is found at an origin's own address though the first origin's
// refuses connections (down, as the weather puts it at its address), and
// every origin is mapped to its own address on the listener's port.
func TestCrowdHostsAtTheOriginsOwnAddresses(t *testing.T) {
	w, err := actors.Open(actors.Config{Origins: 3, Actors: 1, Domain: "flood%d.test", StateDir: t.TempDir(), EphemeralGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rng, err := originaddr.ParseRange("127.77.0.0/30")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := originaddr.NewPlan(rng, "flood%d.test", 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	own := func(k int) string { return plan.Addrs(k)[0].String() }
	tc, roots := crowdTLS(t, func(string) tlsca.Handshake { return tlsca.Good })
	// Origins 2 and 3 answer at their own addresses, on one port; nothing at origin 1's.
	_, port, _ := net.SplitHostPort(serveTLS(t, net.JoinHostPort(own(2), "0"), tc))
	serveTLS(t, net.JoinHostPort(own(3), port), tc)
	hosts, note, err := crowdHosts(context.Background(), Config{}, w, plan, net.JoinHostPort("127.0.0.1", port), roots, zap.NewNop())
	if err != nil || note != "" {
		t.Fatalf("error %v, note %q: want the listener found", err, note)
	}
	for k := 1; k <= 3; k++ {
		if h, want := fmt.Sprintf("flood%d.test", k), net.JoinHostPort(own(k), port); hosts[h] != want {
			t.Errorf("%s goes to %q, want its own address %s", h, hosts[h], want)
		}
	}
}

// TestResolveHintSaysWhatWasMet: the advice to a flood that cannot resolve
// the crowd's names begins with why its listener was not used, when one
// was tried, and always names the flag that mends it.
func TestResolveHintSaysWhatWasMet(t *testing.T) {
	for _, c := range []struct {
		unreached, begins string
	}{
		// Standalone, or the listener used: the flag alone.
		{"", "pass --crowd-https with where the crowd serve's HTTPS listener"},
		// The listener the admin API gave did not answer: said first.
		{"its HTTPS listener, by its admin API, is 10.0.0.5:8443, and nothing answers there from here",
			"its HTTPS listener, by its admin API, is 10.0.0.5:8443, and nothing answers there from here: pass --crowd-https"},
	} {
		env := &Environment{unreached: c.unreached}
		if got := env.resolveHint(); !strings.HasPrefix(got, c.begins) || !strings.HasSuffix(got, "or use --standalone") {
			t.Errorf("unreached %q: hint %q, want it to begin %q and end naming --standalone", c.unreached, got, c.begins)
		}
	}
}

// TestUnknownNameHint: a persona's host this machine's resolver does not
// know is told where to make it known; any other failure is left as is.
func TestUnknownNameHint(t *testing.T) {
	notFound := fmt.Errorf("resolve sut.test: %w", &net.DNSError{Err: "no such host", Name: "sut.test", IsNotFound: true})
	other := fmt.Errorf("resolve sut.test: %w", &net.DNSError{Err: "server misbehaving", Name: "sut.test", IsTemporary: true})
	if got := unknownNameHint(notFound, "sut.test").Error(); !strings.Contains(got, "run it where sut.test resolves") || !errors.Is(unknownNameHint(notFound, "sut.test"), notFound) {
		t.Errorf("not found: %q, want the hint, wrapping the error", got)
	}
	if got := unknownNameHint(other, "sut.test"); got != other {
		t.Errorf("a resolver failing: %v, want it as is", got)
	}
}

// TestNoAnswerSaid: a discovery that got no answer says why in the
// record's words, unless its own error says so already.
func TestNoAnswerSaid(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string // the error's text
	}{
		// A timeout's own words name no flag.
		{fmt.Errorf("webfinger: %w", context.DeadlineExceeded), "webfinger: context deadline exceeded (no answer: timeout (--timeout 10s))"},
		// Words that say it already: as is.
		{fmt.Errorf("webfinger: %w", errors.New("read: connection reset by peer")), "webfinger: read: connection reset by peer"},
		// A certificate the crowd does not accept, said as the record says it.
		{fmt.Errorf("webfinger: %w", x509.UnknownAuthorityError{}), "webfinger: x509: certificate signed by unknown authority (no answer: TLS: certificate signed by an authority not trusted)"},
	} {
		if got := noAnswerSaid(c.err, 10*time.Second).Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
