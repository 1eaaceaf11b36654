package tlsca

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// crowdNames is the membership test of a 10 000-origin world flood%d.test.
func crowdNames(asked *atomic.Int64) func(string) bool {
	names := map[string]bool{}
	for i := 1; i <= 10000; i++ {
		names[fmt.Sprintf("flood%d.test", i)] = true
	}
	return func(n string) bool {
		asked.Add(1)
		return names[n]
	}
}

// Leaves are made per SNI name when a client first asks, for the crowd's
// names only, and verify as the name's certificate under the CA.
func TestOnDemandLeavesBySNI(t *testing.T) {
	ca, _ := newTestCA(t)
	var asked atomic.Int64
	cfg, err := ca.OnDemandTLSConfig(OnDemand{Serves: crowdNames(&asked)})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, cfg)
	for _, c := range []struct {
		sni, want string // want: the leaf's name; "" means the handshake fails
	}{
		{"flood1.test", "flood1.test"},       // the first origin
		{"flood9999.test", "flood9999.test"}, // one far along
		{"FLOOD42.test.", "flood42.test"},    // case and a trailing dot do not matter
		{"flood10001.test", ""},              // past the world
		{"sub.flood1.test", ""},              // no wildcards
		{"example.org", ""},                  // a public name is never minted
		{"flood1.test\x00.evil", ""},         // not a host name
	} {
		t.Run(c.sni, func(t *testing.T) {
			conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: c.sni, RootCAs: caPool(ca)})
			if c.want == "" {
				if err == nil {
					conn.Close()
					t.Fatal("handshake succeeded for a name outside the crowd")
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			defer conn.Close()
			io.ReadAll(conn)
			leaf := conn.ConnectionState().PeerCertificates[0]
			if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != c.want {
				t.Fatalf("leaf names %v, want %s", leaf.DNSNames, c.want)
			}
		})
	}
	for _, sni := range []string{"", "nope.test"} {
		if _, err := cfg.GetCertificate(&tls.ClientHelloInfo{ServerName: sni}); !errors.Is(err, ErrUnknownServerName) {
			t.Errorf("GetCertificate(%q) = %v, want ErrUnknownServerName", sni, err)
		}
	}
	// A made leaf is served from the cache: the world is not asked again.
	before := asked.Load()
	leafDER(t, cfg, "flood1.test")
	if asked.Load() != before {
		t.Error("a cached leaf asked the world again")
	}
}

// A leaf is a function of the CA and the name: made again after a restart
// or an eviction, it is the same certificate, byte for byte; two names
// have different keys and serials.
func TestOnDemandLeavesAreDeterministic(t *testing.T) {
	ca, dir := newTestCA(t)
	var asked atomic.Int64
	cfg, err := ca.OnDemandTLSConfig(OnDemand{Serves: crowdNames(&asked), CacheSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	first := leafDER(t, cfg, "flood7.test")
	for _, n := range []string{"flood8.test", "flood9.test", "flood10.test"} {
		leafDER(t, cfg, n) // evicts flood7 from a cache of 2
	}
	if again := leafDER(t, cfg, "flood7.test"); !bytes.Equal(first, again) {
		t.Error("a leaf made again after its eviction differs")
	}
	ca2, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg2, err := ca2.OnDemandTLSConfig(OnDemand{Serves: crowdNames(&asked)})
	if err != nil {
		t.Fatal(err)
	}
	if restarted := leafDER(t, cfg2, "flood7.test"); !bytes.Equal(first, restarted) {
		t.Error("a leaf made after a restart differs")
	}
	a, _ := x509.ParseCertificate(first)
	b, _ := x509.ParseCertificate(leafDER(t, cfg, "flood8.test"))
	if a.SerialNumber.Cmp(b.SerialNumber) == 0 || bytes.Equal(a.RawSubjectPublicKeyInfo, b.RawSubjectPublicKeyInfo) {
		t.Error("two names share a serial or a key")
	}
	if _, err := a.Verify(x509.VerifyOptions{DNSName: "flood7.test", Roots: caPool(ca)}); err != nil {
		t.Errorf("the leaf does not verify under the CA: %v", err)
	}
	other, _ := newTestCA(t)
	cfg3, err := other.OnDemandTLSConfig(OnDemand{Serves: crowdNames(&asked)})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first, leafDER(t, cfg3, "flood7.test")) {
		t.Error("two CAs made the same leaf")
	}
}

// countingConn counts the bytes its client reads from the server.
type countingConn struct {
	net.Conn
	read int
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read += n
	return n, err
}

// Each handshake asks the weather of its SNI name: a refused name's
// connection is reset before the server writes a byte, an expired or
// wrong-name leaf fails the client's verification with x509's own error,
// and each is lifted at the next handshake once the weather clears. A
// client holding a session of the name, from before the weather, cannot
// resume its way past it.
func TestOnDemandHandshakeWeather(t *testing.T) {
	ca, _ := newTestCA(t)
	var asked atomic.Int64
	var weather atomic.Pointer[map[string]Handshake]
	weather.Store(&map[string]Handshake{})
	var asker atomic.Pointer[string] // the client address the last handshake was asked with
	cfg, err := ca.OnDemandTLSConfig(OnDemand{Serves: crowdNames(&asked), Handshake: func(n string, client net.Addr) Handshake {
		a := "<nil>"
		if client != nil {
			a = client.String()
		}
		asker.Store(&a)
		return (*weather.Load())[n]
	}})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, cfg)
	for _, c := range []struct {
		name    string
		kind    Handshake
		version uint16
		check   func(err error, read int) string // "" when the failure is the expected one
	}{
		// refused over TLS 1.3: a reset, and not one byte of the server's handshake
		{"refuse 1.3", Refuse, tls.VersionTLS13, wantReset},
		// refused over TLS 1.2 alike
		{"refuse 1.2", Refuse, tls.VersionTLS12, wantReset},
		// an expired leaf: x509's Expired, as any client reports a lapsed certificate
		{"expired", Expired, tls.VersionTLS13, func(err error, _ int) string {
			var inv x509.CertificateInvalidError
			if !errors.As(err, &inv) || inv.Reason != x509.Expired {
				return fmt.Sprintf("%v, want x509's Expired", err)
			}
			return ""
		}},
		// expired over TLS 1.2, where tickets would otherwise resume
		{"expired 1.2", Expired, tls.VersionTLS12, func(err error, _ int) string {
			var inv x509.CertificateInvalidError
			if !errors.As(err, &inv) || inv.Reason != x509.Expired {
				return fmt.Sprintf("%v, want x509's Expired", err)
			}
			return ""
		}},
		// another name's valid leaf: x509's HostnameError naming what was served
		{"wrong name", WrongName, tls.VersionTLS13, func(err error, _ int) string {
			var hn x509.HostnameError
			if !errors.As(err, &hn) || hn.Certificate.Subject.CommonName != WrongNameHost {
				return fmt.Sprintf("%v, want a HostnameError for %s", err, WrongNameHost)
			}
			return ""
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sni := "flood77.test"
			client := &tls.Config{ServerName: sni, RootCAs: caPool(ca), MinVersion: c.version, MaxVersion: c.version,
				ClientSessionCache: tls.NewLRUClientSessionCache(4)}
			var local string
			dial := func() (int, error) {
				raw, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				local = raw.LocalAddr().String()
				cc := &countingConn{Conn: raw}
				conn := tls.Client(cc, client)
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				if err := conn.Handshake(); err != nil {
					return cc.read, err
				}
				if _, err := io.ReadAll(conn); err != nil { // reads "ok", and the session ticket
					return cc.read, err
				}
				return cc.read, nil
			}
			weather.Store(&map[string]Handshake{})
			if _, err := dial(); err != nil {
				t.Fatalf("clear weather: %v", err)
			}
			weather.Store(&map[string]Handshake{sni: c.kind, "flood78.test": Refuse})
			read, err := dial()
			if err == nil {
				t.Fatal("the handshake succeeded in bad weather (resumed past it?)")
			}
			if msg := c.check(err, read); msg != "" {
				t.Fatal(msg)
			}
			if got := *asker.Load(); got != local {
				t.Errorf("the weather was asked for the client %s, want the dialer's %s", got, local)
			}
			other := client.Clone()
			other.ServerName, other.ClientSessionCache = "flood79.test", nil
			if conn, err := tls.Dial("tcp", addr, other); err != nil {
				t.Fatalf("a clear origin beside it: %v", err)
			} else {
				conn.Close()
			}
			weather.Store(&map[string]Handshake{})
			if _, err := dial(); err != nil {
				t.Fatalf("cleared: the next handshake fails: %v", err)
			}
		})
	}
}

// wantReset checks a refused handshake: the connection was reset
// (ECONNRESET) before the client read one byte.
func wantReset(err error, read int) string {
	if !errors.Is(err, syscall.ECONNRESET) {
		return fmt.Sprintf("%v, want ECONNRESET", err)
	}
	if read != 0 {
		return fmt.Sprintf("the client read %d bytes before the reset", read)
	}
	return ""
}

// The broken leaves are the CA's: the expired one of a name is the name's,
// lapsed (NotBefore before NotAfter, NotAfter in the past), with its own
// serial; the wrong-name one is valid for WrongNameHost and no origin; both
// are made again byte for byte.
func TestBrokenLeaves(t *testing.T) {
	ca, _ := newTestCA(t)
	var asked atomic.Int64
	cfg, err := ca.OnDemandTLSConfig(OnDemand{Serves: crowdNames(&asked), Handshake: func(string, net.Addr) Handshake { return Good }})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := x509.ParseCertificate(leafDER(t, cfg, "flood5.test"))
	l := &leafMint{ca: ca, serves: crowdNames(&asked), cache: mustCache(t), secret: mustSecret(t, ca)}
	exp, err := l.leaf(leafKey{"flood5.test", Expired})
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Leaf.NotBefore.Before(exp.Leaf.NotAfter) || !exp.Leaf.NotAfter.Before(time.Now()) {
		t.Errorf("expired leaf valid %s to %s", exp.Leaf.NotBefore, exp.Leaf.NotAfter)
	}
	if exp.Leaf.SerialNumber.Cmp(good.SerialNumber) == 0 || exp.Leaf.DNSNames[0] != "flood5.test" {
		t.Errorf("expired leaf: serial reused or names %v", exp.Leaf.DNSNames)
	}
	if err := exp.Leaf.CheckSignatureFrom(ca.cert); err != nil || exp.Leaf.VerifyHostname("flood5.test") != nil {
		t.Errorf("the expired leaf is not the CA's for flood5.test: %v", err)
	}
	if _, err := l.leaf(leafKey{"flood10001.test", Expired}); !errors.Is(err, ErrUnknownServerName) {
		t.Errorf("an expired leaf for a name outside the crowd: %v", err)
	}
	wrong, err := l.leaf(leafKey{WrongNameHost, Good})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Leaf.Verify(x509.VerifyOptions{DNSName: WrongNameHost, Roots: caPool(ca)}); err != nil {
		t.Errorf("the wrong-name leaf is not valid for %s: %v", WrongNameHost, err)
	}
	l2 := &leafMint{ca: ca, serves: crowdNames(&asked), cache: mustCache(t), secret: mustSecret(t, ca)}
	again, _ := l2.leaf(leafKey{"flood5.test", Expired})
	if !bytes.Equal(again.Certificate[0], exp.Certificate[0]) {
		t.Error("an expired leaf made again differs")
	}
}

func mustCache(t *testing.T) *lru.Cache[leafKey, *tls.Certificate] {
	c, err := lru.New[leafKey, *tls.Certificate](8)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustSecret(t *testing.T, ca *CA) []byte {
	s, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
