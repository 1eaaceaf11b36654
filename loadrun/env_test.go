package loadrun

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/internal/loopback"
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

// TestCrowdHostsReachTheListener: where an attached flood sends for the
// crowd's own origins, by --crowd-https and by the listener the crowd's
// admin API gives. No resolver is asked in any row: each either maps the
// names or leaves them unmapped and says what did not answer.
func TestCrowdHostsReachTheListener(t *testing.T) {
	w, err := actors.Open(actors.Config{Origins: 2, Actors: 1, Domain: "flood%d.test", StateDir: t.TempDir(), EphemeralGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l, err := net.Listen("tcp", loopback.Free(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	listening := l.Addr().String()
	silent := loopback.Free(t) // nothing listens there
	for _, c := range []struct {
		name, given, advertised string
		mapped                  string // where every origin goes; "" = left to the resolver
		unanswered              string // the advertised listener said not to answer
		refused                 string // an error containing this
	}{
		// The listener the admin API gives answers: every origin goes there.
		{"advertised", "", listening, listening, "", ""},
		// --crowd-https wins over the advertised listener.
		{"given", listening, silent, listening, "", ""},
		// The advertised listener does not answer from here: the names are left to the resolver, and the advice says so.
		{"advertised silent", "", silent, "", silent, ""},
		// No listener advertised (an older crowd, or --https ""): nothing mapped, nothing to say.
		{"none", "", "", "", "", ""},
		// A --crowd-https where nothing answers is refused before the run.
		{"given silent", silent, listening, "", "", "nothing answers at " + silent},
		// A --crowd-https that is not host:port is a usage error.
		{"given bad", "flood1.test", "", "", "", "is not host:port"},
	} {
		hosts, unanswered, err := crowdHosts(context.Background(), Config{CrowdHTTPS: c.given}, w, nil, c.advertised, zap.NewNop())
		if c.refused != "" {
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if unanswered != c.unanswered {
			t.Errorf("%s: unanswered %q, want %q", c.name, unanswered, c.unanswered)
		}
		for _, h := range w.Hosts() {
			if hosts[h] != c.mapped {
				t.Errorf("%s: %s goes to %q, want %q", c.name, h, hosts[h], c.mapped)
			}
		}
	}
}
