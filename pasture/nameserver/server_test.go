package nameserver

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDNSGarbagePackets writes raw garbage to the UDP and TCP sockets; the server must keep
// answering real queries afterwards.
func TestDNSGarbagePackets(t *testing.T) {
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, crowdDNSConfig()))

	valid := new(dns.Msg)
	valid.SetQuestion("flood1.test.", dns.TypeA)
	packed, err := valid.Pack()
	if err != nil {
		t.Fatal(err)
	}
	header := func(qd, an, ns, ar uint16) []byte {
		b := make([]byte, 12)
		binary.BigEndian.PutUint16(b[0:], 0x1234)
		binary.BigEndian.PutUint16(b[4:], qd)
		binary.BigEndian.PutUint16(b[6:], an)
		binary.BigEndian.PutUint16(b[8:], ns)
		binary.BigEndian.PutUint16(b[10:], ar)
		return b
	}
	garbage := []struct {
		name string
		b    []byte
	}{
		{"empty", []byte{}},                                                      // zero-length datagram
		{"one byte", []byte{0x42}},                                               // shorter than a header
		{"eleven bytes", packed[:11]},                                            // header cut short
		{"header only, claims a question", header(1, 0, 0, 0)},                   // question missing
		{"question cut mid-name", packed[:len(packed)-6]},                        // truncated packet
		{"question cut before type", packed[:len(packed)-3]},                     // truncated packet
		{"compression loop", append(header(1, 0, 0, 0), 0xc0, 0x0c, 0, 1, 0, 1)}, // pointer to itself
		{"label too long", append(header(1, 0, 0, 0), append([]byte{64}, make([]byte, 64)...)...)},
		{"counts lie", append(header(1, 65535, 65535, 65535), packed[12:]...)}, // RRs promised, absent
		{"all ones", func() []byte {
			b := make([]byte, 512)
			for i := range b {
				b[i] = 0xff
			}
			return b
		}()},
		{"random-ish", func() []byte {
			b := make([]byte, 300)
			for i := range b {
				b[i] = byte(i*131 + 7)
			}
			return b
		}()},
		{"response bit set", func() []byte { b := append([]byte(nil), packed...); b[2] |= 0x80; return b }()},
	}

	t.Run("udp", func(t *testing.T) {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, g := range garbage {
			if _, err := conn.Write(g.b); err != nil {
				t.Fatalf("%s: %v", g.name, err)
			}
		}
		// Any replies to the garbage must be FORMERR-ish, never a crash; drain them.
		buf := make([]byte, 4096)
		conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		for {
			n, err := conn.Read(buf)
			if err != nil {
				break
			}
			r := new(dns.Msg)
			if err := r.Unpack(buf[:n]); err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
				t.Errorf("garbage got a positive answer: %v", r)
			}
		}
		if r := askDNS(t, "udp", addr, "flood1.test.", dns.TypeA); len(r.Answer) != 1 {
			t.Fatalf("after garbage: %v", r)
		}
	})

	t.Run("tcp", func(t *testing.T) {
		send := func(b []byte, framed bool) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if framed {
				conn.Write(binary.BigEndian.AppendUint16(nil, uint16(len(b))))
			}
			conn.Write(b)
			conn.(*net.TCPConn).CloseWrite()
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 4096)
			for {
				if _, err := conn.Read(buf); err != nil {
					return // the server closes or stays quiet; either is fine
				}
			}
		}
		for _, g := range garbage {
			send(g.b, true)
		}
		send([]byte{0x00}, false)                                 // half a length prefix
		send([]byte{0x01, 0x00, 0xde, 0xad}, false)               // length 256, 2 bytes of body, then EOF
		send([]byte{0xff, 0xff}, false)                           // maximum length, no body
		send(append([]byte{0, 12}, header(0, 0, 0, 0)...), false) // a query with no question
		if r := askDNS(t, "tcp", addr, "flood1.test.", dns.TypeA); len(r.Answer) != 1 {
			t.Fatalf("after garbage: %v", r)
		}
	})
}

func TestDNSServerBindErrorNamesFlag(t *testing.T) {
	// UDP taken.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	err = NewServer(pc.LocalAddr().String(), dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) {})).Start(context.Background())
	if !errors.Is(err, ErrListen) || !strings.Contains(err.Error(), "--dns") {
		t.Fatalf("UDP port taken: %v", err)
	}

	// TCP taken on the port of a free UDP one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = NewServer(ln.Addr().String(), dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) {})).Start(context.Background())
	if !errors.Is(err, ErrListen) || !strings.Contains(err.Error(), "--dns") || !strings.Contains(err.Error(), "tcp") {
		t.Fatalf("TCP port taken: %v", err)
	}

	// Not an address at all.
	err = NewServer("no-port", dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) {})).Start(context.Background())
	if !errors.Is(err, ErrListen) {
		t.Fatalf("bad address: %v", err)
	}
}

// startOutsideEphemeral starts a server of h on a 127.0.0.1 port outside
// the kernel's ephemeral range (below it, else above it). A port the
// kernel handed out could be handed again to any process's outgoing
// socket between a server's shutdown and its restart (one CI run saw
// exactly that), which would fail the restart for a reason not the
// server's; a port outside that range only an explicit bind can take.
// Ports are tried by starting the server on them, so none is probed and
// then lost.
func startOutsideEphemeral(t *testing.T, h dns.Handler) *Server {
	t.Helper()
	low, high := 32768, 60999 // Linux's default ip_local_port_range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			lo, errLo := strconv.Atoi(f[0])
			hi, errHi := strconv.Atoi(f[1])
			if errLo == nil && errHi == nil {
				low, high = lo, hi
			}
		}
	}
	// Neither side goes below 1024, the ports only root may bind, nor
	// tries more than a few hundred: taken ports are rare out there.
	var ports []int
	for p := low - 1; p >= 1024 && p > low-300; p-- {
		ports = append(ports, p)
	}
	for p := high + 1; p <= 65535 && p < high+300; p++ {
		ports = append(ports, p)
	}
	for _, p := range ports {
		s := NewServer(net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), h)
		if err := s.Start(context.Background()); err == nil {
			return s
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no 127.0.0.1 port outside the ephemeral range %d-%d could be served", low, high)
	}
	t.Skipf("no 127.0.0.1 port outside the ephemeral range %d-%d could be served", low, high)
	return nil
}

func TestDNSServerShutdownFreesPort(t *testing.T) {
	s := startOutsideEphemeral(t, mustDNSHandler(t, crowdDNSConfig()))
	addr := s.Addr()
	askDNS(t, "udp", addr, "flood1.test.", dns.TypeA)
	askDNS(t, "tcp", addr, "flood1.test.", dns.TypeA)
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	// Both ports are free again: a restart on the same address works.
	again := NewServer(addr, mustDNSHandler(t, crowdDNSConfig()))
	if err := again.Start(ctx); err != nil {
		t.Fatalf("restart on %s: %v", addr, err)
	}
	again.Shutdown(ctx)
}

// TestDNSWithDig asks through dig (BIND's client, written by no one here), over UDP and TCP.
func TestDNSWithDig(t *testing.T) {
	dig, err := exec.LookPath("dig")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dig not installed (CI installs bind9-dnsutils)")
		}
		t.Skip("dig not installed")
	}
	good := startUpstream(t, "127.0.0.2:0", dns.RcodeSuccess)
	cfg := crowdDNSConfig()
	cfg.Upstreams = []string{good.addr}
	addr := startDNS(t, "127.0.0.1:0", mustDNSHandler(t, cfg))
	host, port, _ := net.SplitHostPort(addr)

	tests := []struct {
		args []string
		want []string // substrings of dig's output
	}{
		{[]string{"flood1.test", "A"}, []string{"status: NOERROR", "flags: qr aa", "flood1.test.\t\t60\tIN\tA\t127.0.0.1"}},
		{[]string{"+tcp", "FLOOD1.test", "AAAA"}, []string{"status: NOERROR", "fd00::1"}},
		{[]string{"nope.test", "A"}, []string{"status: NXDOMAIN", "test.\t\t\t60\tIN\tSOA\tns.test. hostmaster.test."}},
		{[]string{"test", "NS"}, []string{"IN\tNS\tns.test.", "ns.test.\t\t60\tIN\tA\t127.0.0.1"}},
		{[]string{"sut.example", "A"}, []string{"127.0.0.9"}},
		{[]string{"example.org", "A"}, []string{"status: NOERROR", "192.0.2.1", " ra"}},
		{[]string{"+tcp", "big.example", "A"}, []string{"ANSWER: 60"}},
		{[]string{"+noedns", "big.example", "A"}, []string{"ANSWER: 60"}}, // dig retries over TCP on TC
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"@" + host, "-p", port, "+time=3", "+tries=1"}, tc.args...)
			out, err := exec.Command(dig, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("dig %v: %v\n%s", args, err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("dig output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
