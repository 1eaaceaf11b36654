package loadrun

import (
	"bytes"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
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
