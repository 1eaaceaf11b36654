package flood

import (
	"testing"
	"time"
)

// TestNewTransportHandshakeFollowsTimeout: a TLS handshake may take as long
// as a whole send (the run's --timeout), never less than the dial's bound.
func TestNewTransportHandshakeFollowsTimeout(t *testing.T) {
	for _, c := range []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		// A minute for a send: an overloaded SUT may take most of it to handshake.
		{"long timeout", time.Minute, time.Minute},
		// A short timeout ends the send first; the handshake keeps the dial's bound.
		{"short timeout", 2 * time.Second, connectTimeout},
		// No timeout given: the flood's default one.
		{"default", 0, DefaultTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := NewTransport(4, c.timeout, nil).TLSHandshakeTimeout; got != c.want {
				t.Errorf("timeout %v: handshake bound %v, want %v", c.timeout, got, c.want)
			}
		})
	}
}
