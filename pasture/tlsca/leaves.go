package tlsca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// DefaultLeafCache bounds how many leaf certificates an on-demand TLS
// configuration keeps made: more than the 10 000 origins of the largest
// world, about 1.5 KB each.
const DefaultLeafCache = 16384

// WrongNameHost is the name on the certificate a Handshake of WrongName
// serves: no origin's name, and never one a resolver can find (RFC 6761).
const WrongNameHost = "wrong-name.invalid"

// ErrRefused is wrapped by the error of a handshake that Refuse reset.
var ErrRefused = errors.New("pasture: connection refused for the name's weather")

// Handshake is what an on-demand TLS configuration does at a handshake for
// an SNI name: the origin's weather as TLS shows it. The zero value is Good.
type Handshake uint8

const (
	// Good serves the name's own valid leaf.
	Good Handshake = iota
	// Expired serves the name's leaf from the CA, expired: a lapsed
	// certificate, which clients reject with x509's Expired error.
	Expired
	// WrongName serves a valid leaf from the CA for WrongNameHost: a
	// server answering with another site's certificate, which clients
	// reject with a hostname error.
	WrongName
	// Refuse resets the TCP connection (SO_LINGER 0) once the ClientHello
	// is read, before the server writes a byte: the host is up, its
	// server is not.
	Refuse
)

// OnDemand is what OnDemandTLSConfig serves.
type OnDemand struct {
	// Serves reports whether name (normalized: lower case, no trailing
	// dot) is one of the crowd's hosts; it is asked once per name, when
	// its leaf is first made. Required.
	Serves func(name string) bool
	// Handshake, when set, is asked once at every handshake with an SNI
	// name what to do for it (the name normalized), given the client's
	// address (nil when the connection has none), so that it can note a
	// handshake it breaks; nil is always Good. It is asked before session
	// resumption, so a client holding a session of the name cannot skip a
	// Refuse or a broken certificate.
	Handshake func(name string, client net.Addr) Handshake
	// CacheSize bounds the leaves kept made (0: DefaultLeafCache).
	CacheSize int
}

// OnDemandTLSConfig returns a server configuration that makes the leaf for
// an SNI name when a client first asks for it, for names that o.Serves
// accepts (the crowd's origins; any other name, or no SNI, fails the
// handshake with an error wrapping ErrUnknownServerName, and nothing is
// made for it). The last o.CacheSize leaves are kept. What o.Handshake
// says for a name (an expired leaf, another name's, a reset) is done at
// each handshake, so a change takes effect at the next one; the
// configurations that serve a broken leaf issue and accept no session
// tickets, so that every handshake shows the certificate.
//
// A leaf is a function of the CA and the name: its ECDSA P-256 key is
// derived from the CA key and the name, its serial from both, its validity
// is the CA's, and its signature is deterministic (RFC 6979), so a leaf
// made again, after a restart or an eviction, is byte-identical: a SUT's
// TLS caches see one certificate per name for as long as the CA lives, and
// nothing is made or written at start-up, whatever the number of origins.
// The expired leaf of a name is made alike (see expiredValidity).
func (c *CA) OnDemandTLSConfig(o OnDemand) (*tls.Config, error) {
	if o.Serves == nil {
		return nil, fmt.Errorf("%w: an on-demand TLS configuration needs Serves", ErrCA)
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultLeafCache
	}
	cache, err := lru.New[leafKey, *tls.Certificate](o.CacheSize)
	if err != nil {
		return nil, err
	}
	secret, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		return nil, fmt.Errorf("%w: the CA key cannot derive leaves: %v", ErrCA, err)
	}
	l := &leafMint{ca: c, serves: o.Serves, cache: cache, secret: secret}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: l.getCertificate}
	if o.Handshake != nil {
		l.handshake = o.Handshake
		l.expired = &tls.Config{MinVersion: tls.VersionTLS12, SessionTicketsDisabled: true, GetCertificate: l.expiredCertificate}
		l.wrong = &tls.Config{MinVersion: tls.VersionTLS12, SessionTicketsDisabled: true, GetCertificate: l.wrongCertificate}
		cfg.GetConfigForClient = l.configForClient
	}
	return cfg, nil
}

// leafKey names a leaf in the cache: the name and which of its leaves.
type leafKey struct {
	name string
	kind Handshake // Good or Expired; WrongName's leaf is WrongNameHost's Good
}

// leafMint makes and keeps the leaves of one OnDemandTLSConfig.
type leafMint struct {
	ca     *CA
	serves func(string) bool
	cache  *lru.Cache[leafKey, *tls.Certificate]
	secret []byte // the CA key's DER: the leaves' keys derive from it
	flight singleflight.Group

	handshake      func(string, net.Addr) Handshake // nil: always Good
	expired, wrong *tls.Config                      // the configurations serving broken leaves
}

// sniName is the normalized SNI name of hello; no SNI, or one that is no
// host name, is an error wrapping ErrUnknownServerName.
func sniName(hello *tls.ClientHelloInfo) (string, error) {
	if hello.ServerName == "" {
		return "", fmt.Errorf("%w: the client sent no SNI", ErrUnknownServerName)
	}
	name, err := caNormalizeHost(hello.ServerName)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrUnknownServerName, hello.ServerName)
	}
	return name, nil
}

// configForClient runs first in every handshake, before resumption and
// before the server writes: it resets a refused name's connection and
// hands a broken certificate's configuration to the names that have one.
func (l *leafMint) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	name, err := sniName(hello)
	if err != nil {
		return nil, nil // getCertificate fails the handshake with its reason
	}
	var client net.Addr
	if hello.Conn != nil {
		client = hello.Conn.RemoteAddr()
	}
	switch l.handshake(name, client) {
	case Expired:
		return l.expired, nil
	case WrongName:
		return l.wrong, nil
	case Refuse:
		reset(hello.Conn)
		return nil, fmt.Errorf("%w: %s", ErrRefused, name)
	}
	return nil, nil
}

// reset closes c so that its peer reads a reset (RST), not a FIN nor a
// TLS alert: the server is gone, not closing politely.
func reset(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (l *leafMint) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name, err := sniName(hello)
	if err != nil {
		return nil, err
	}
	return l.leaf(leafKey{name, Good})
}

func (l *leafMint) expiredCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name, err := sniName(hello)
	if err != nil {
		return nil, err
	}
	return l.leaf(leafKey{name, Expired})
}

func (l *leafMint) wrongCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return l.leaf(leafKey{WrongNameHost, Good})
}

// leaf is the cached leaf of k, made once on a miss; a name the crowd does
// not serve gets none (WrongNameHost excepted: it is the crowd's own).
func (l *leafMint) leaf(k leafKey) (*tls.Certificate, error) {
	if leaf, ok := l.cache.Get(k); ok {
		return leaf, nil
	}
	if k.name != WrongNameHost && !l.serves(k.name) {
		return nil, fmt.Errorf("%w: %q is not one of the crowd's hosts", ErrUnknownServerName, k.name)
	}
	v, err, _ := l.flight.Do(string(rune('0'+k.kind))+k.name, func() (any, error) {
		leaf, err := l.ca.deriveLeaf(k.name, k.kind == Expired, l.secret)
		if err != nil {
			return nil, err
		}
		l.cache.Add(k, leaf)
		return leaf, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*tls.Certificate), nil
}

// expiredValidity is the validity of an expired leaf: a 90-day
// certificate, as ACME issues, that lapsed the day before the CA was made.
// Fixed by the CA, it is in the past at any time the CA is used and the
// leaf stays byte-identical across restarts.
func (c *CA) expiredValidity() (notBefore, notAfter time.Time) {
	notAfter = c.cert.NotBefore.Add(-24 * time.Hour)
	return notAfter.Add(-90 * 24 * time.Hour), notAfter
}

// deriveLeaf makes the leaf of name (normalized) from the CA and secret,
// the expired one when expired (its own serial: an issuer never reuses
// one): the same inputs give the same certificate, byte for byte.
func (c *CA) deriveLeaf(name string, expired bool, secret []byte) (*tls.Certificate, error) {
	key, err := deriveLeafKey(secret, name)
	if err != nil {
		return nil, fmt.Errorf("pasture: certificate for %s: %w", name, err)
	}
	mac := hmac.New(sha256.New, secret)
	notBefore, notAfter, label := c.cert.NotBefore, c.cert.NotAfter, "serial\x00"
	if expired {
		notBefore, notAfter = c.expiredValidity()
		label = "serial-expired\x00"
	}
	mac.Write([]byte(label + name))
	serial := new(big.Int).SetBytes(mac.Sum(nil)[:16])
	serial.SetBit(serial, 127, 0) // positive and at most 127 bits, as caSerial's
	serial.SetBit(serial, 126, 1) // and never zero
	tmpl := leafTemplate(name, serial, notBefore, notAfter)
	// A nil random source: RFC 6979 deterministic ECDSA (Ed25519 and RSA
	// PKCS#1 v1.5 CAs are deterministic anyway).
	der, err := x509.CreateCertificate(nil, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return nil, fmt.Errorf("pasture: certificate for %s: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pasture: certificate for %s: %w", name, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// leafTemplate is the server certificate of host (a DNS SAN, or an IP SAN
// for an address) with this serial and validity.
func leafTemplate(host string, serial *big.Int, notBefore, notAfter time.Time) *x509.Certificate {
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	return tmpl
}

// deriveLeafKey is the P-256 key of name: its scalar is HMAC-SHA256(secret,
// name) (with a counter, tried again in the 2^-32 case that the value is
// not below the curve's order).
func deriveLeafKey(secret []byte, name string) (*ecdsa.PrivateKey, error) {
	var ctr [4]byte
	for i := uint32(0); i < 16; i++ {
		binary.BigEndian.PutUint32(ctr[:], i)
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte("leaf-key\x00" + name + "\x00"))
		mac.Write(ctr[:])
		if key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), mac.Sum(nil)); err == nil {
			return key, nil
		}
	}
	return nil, fmt.Errorf("no P-256 scalar derived for %q", name)
}
