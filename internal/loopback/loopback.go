// Package loopback gives tests loopback addresses to start servers on
// that cannot say which port they picked for :0.
package loopback

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Free returns 127.0.0.1:PORT for a TCP port that was free a
// moment ago (bound, then released), for a server a test starts that
// cannot say which port it picked for :0.
//
// The port is drawn below the kernel's ephemeral range: a port from that
// range may be taken, between the release and the server's bind, as the
// local port of a connection any other test opens (CI runs packages side
// by side, each opening thousands), while one below it is only ever taken
// by another bind.
func Free(t testing.TB) string {
	t.Helper()
	return freeBelowEphemeral(t, false)
}

// FreeTCPAndUDP is Free for a listener that binds both
// (a DNS server): the port was free for both a moment ago.
func FreeTCPAndUDP(t testing.TB) string {
	t.Helper()
	return freeBelowEphemeral(t, true)
}

// freeBelowEphemeral draws ports below the ephemeral range until one binds
// (for UDP too when udp), bounded to 200 draws; on a machine whose range
// starts too low to leave room, it asks the kernel for one.
func freeBelowEphemeral(t testing.TB, udp bool) string {
	t.Helper()
	low := ephemeralLow()
	for range 200 {
		port := 0
		if low >= 4096 {
			port = low/2 + rand.IntN(low-low/2) // e.g. 16384-32767 under Linux's default
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		if udp {
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				l.Close()
				continue
			}
			pc.Close()
		}
		l.Close()
		return addr
	}
	t.Fatal("no free loopback port in 200 draws")
	return ""
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range), 32768 where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	if f := strings.Fields(string(b)); len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil {
			return n
		}
	}
	return 32768
}
