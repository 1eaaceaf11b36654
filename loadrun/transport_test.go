package loadrun

import (
	"testing"
	"time"
)

// TestSendTransportHandshakeFollowsTimeout: a TLS handshake may take as long as --timeout
// allows a whole send, never less than the transport's own bound.
func TestSendTransportHandshakeFollowsTimeout(t *testing.T) {
	for _, c := range []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		// A minute for a send: an overloaded SUT may take most of it to handshake.
		{"long timeout", time.Minute, time.Minute},
		// A short timeout ends the send first; the handshake keeps the transport's bound.
		{"short timeout", 2 * time.Second, 5 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.Timeout = c.timeout
			if got := sendTransport(cfg, nil).TLSHandshakeTimeout; got != c.want {
				t.Errorf("--timeout %v: handshake bound %v, want %v", c.timeout, got, c.want)
			}
		})
	}
}
