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

// OnDemandTLSConfig returns a server configuration that makes the leaf for
// an SNI name when a client first asks for it, for names that serves
// accepts (the crowd's origins; any other name, or no SNI, fails the
// handshake with an error wrapping ErrUnknownServerName, and nothing is
// made for it). The last cacheSize leaves (0: DefaultLeafCache) are kept.
//
// A leaf is a function of the CA and the name: its ECDSA P-256 key is
// derived from the CA key and the name, its serial from both, its validity
// is the CA's, and its signature is deterministic (RFC 6979), so a leaf
// made again, after a restart or an eviction, is byte-identical: a SUT's
// TLS caches see one certificate per name for as long as the CA lives, and
// nothing is made or written at start-up, whatever the number of origins.
func (c *CA) OnDemandTLSConfig(serves func(name string) bool, cacheSize int) (*tls.Config, error) {
	if cacheSize <= 0 {
		cacheSize = DefaultLeafCache
	}
	cache, err := lru.New[string, *tls.Certificate](cacheSize)
	if err != nil {
		return nil, err
	}
	secret, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		return nil, fmt.Errorf("%w: the CA key cannot derive leaves: %v", ErrCA, err)
	}
	l := &leafMint{ca: c, serves: serves, cache: cache, secret: secret}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: l.getCertificate}, nil
}

// leafMint makes and keeps the leaves of one OnDemandTLSConfig.
type leafMint struct {
	ca     *CA
	serves func(string) bool
	cache  *lru.Cache[string, *tls.Certificate]
	secret []byte // the CA key's DER: the leaves' keys derive from it
	flight singleflight.Group
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

func (l *leafMint) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name, err := sniName(hello)
	if err != nil {
		return nil, err
	}
	if leaf, ok := l.cache.Get(name); ok {
		return leaf, nil
	}
	if !l.serves(name) {
		return nil, fmt.Errorf("%w: %q is not one of the crowd's hosts", ErrUnknownServerName, name)
	}
	v, err, _ := l.flight.Do(name, func() (any, error) {
		leaf, err := l.ca.deriveLeaf(name, l.secret)
		if err != nil {
			return nil, err
		}
		l.cache.Add(name, leaf)
		return leaf, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*tls.Certificate), nil
}

// deriveLeaf makes the leaf of name (normalized) from the CA and secret:
// the same inputs give the same certificate, byte for byte.
func (c *CA) deriveLeaf(name string, secret []byte) (*tls.Certificate, error) {
	key, err := deriveLeafKey(secret, name)
	if err != nil {
		return nil, fmt.Errorf("pasture: certificate for %s: %w", name, err)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("serial\x00" + name))
	serial := new(big.Int).SetBytes(mac.Sum(nil)[:16])
	serial.SetBit(serial, 127, 0) // positive and at most 127 bits, as caSerial's
	serial.SetBit(serial, 126, 1) // and never zero
	tmpl := leafTemplate(name, serial, c.cert.NotBefore, c.cert.NotAfter)
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
