package loadrun

import (
	"strings"
	"testing"
	"time"
)

// TestMetricsAddr: --metrics-addr as given becomes the address listened
// on, loopback unless a host is named; a bad one is an error naming the
// flag.
func TestMetricsAddr(t *testing.T) {
	for _, c := range []struct {
		addr   string
		linger time.Duration
		want   string // "" with err: an error naming the flag in err
		err    string
	}{
		{"", 0, "", ""},                                 // off
		{":9464", 0, "127.0.0.1:9464", ""},              // no host: loopback
		{"0.0.0.0:9464", 0, "0.0.0.0:9464", ""},         // every address, when asked
		{"[::1]:0", 0, "[::1]:0", ""},                   // IPv6, any free port
		{"9464", 0, "", "--metrics-addr"},               // a port alone is not host:port
		{":http", 0, "", "--metrics-addr"},              // a service name is not a port
		{":70000", 0, "", "--metrics-addr"},             // out of range
		{":9464", -time.Second, "", "--metrics-linger"}, // negative linger
	} {
		got, err := Config{Metrics: MetricsConfig{Addr: c.addr, Linger: c.linger}}.metricsAddr()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q linger %v: error %v, want one naming %s", c.addr, c.linger, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.addr, got, err, c.want)
		}
	}
}
