package tlsca

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
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
	cfg, err := ca.OnDemandTLSConfig(crowdNames(&asked), 0)
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
	cfg, err := ca.OnDemandTLSConfig(crowdNames(&asked), 2)
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
	cfg2, err := ca2.OnDemandTLSConfig(crowdNames(&asked), 0)
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
	cfg3, err := other.OnDemandTLSConfig(crowdNames(&asked), 0)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first, leafDER(t, cfg3, "flood7.test")) {
		t.Error("two CAs made the same leaf")
	}
}
