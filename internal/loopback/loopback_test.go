package loopback

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeIsBelowTheEphemeralRange: the address is on loopback, its port
// below the range connections take their local ports from, and free: a
// listener (both kinds for FreeTCPAndUDP) binds it.
func TestFreeIsBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for _, c := range []struct {
		name string
		free func(testing.TB) string
		udp  bool
	}{
		{"tcp", Free, false},                 // a TCP server's
		{"tcp and udp", FreeTCPAndUDP, true}, // a DNS server's
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := c.free(t)
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.Atoi(port)
			if host != "127.0.0.1" || (low >= 4096 && (n < low/2 || n >= low)) {
				t.Fatalf("%s: want 127.0.0.1 and a port in [%d, %d)", addr, low/2, low)
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatalf("the port is not free: %v", err)
			}
			defer l.Close()
			if c.udp {
				pc, err := net.ListenPacket("udp", addr)
				if err != nil {
					t.Fatalf("the port is not free for UDP: %v", err)
				}
				pc.Close()
			}
		})
	}
}
