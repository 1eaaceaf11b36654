// Package tlsca is the crowd's own certificate authority: made once and kept in the state
// directory (ca.pem for the SUT to trust), issuing leaf files for a SUT (crowd ca issue) and,
// on demand by SNI, the origins' leaf certificates, derived so a restart serves the same ones.
package tlsca

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// File names inside the CA directory. The CA directory is the crowd's state dir, so a SUT
// operator finds the CA at STATE/ca.pem.
const (
	CACertFile = "ca.pem"     // the CA certificate, PEM; what a SUT is told to trust
	CAKeyFile  = "ca-key.pem" // the CA private key, PKCS#8 PEM, mode 0600
	CACertsDir = "certs"      // leaf certificates of earlier crowds, one HOST.pem per host; leaves are now made on demand (OnDemandTLSConfig), writing none
)

// CommonName is the subject common name of the crowd's CA, the name a user sees in a trust store.
const CommonName = "crowd local CA"

const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
	// leafRenewBefore: a leaf that expires within this window is replaced, so that a crowd
	// (re)started today never serves a certificate that dies during a run.
	leafRenewBefore = 30 * 24 * time.Hour
	// certBackdate tolerates a SUT whose clock is a little behind the crowd's.
	certBackdate = time.Hour
)

// ErrCA is wrapped by every error about the CA's own files: unreadable, corrupted, mismatched
// or expired. The message names the file and says how to recover.
var ErrCA = errors.New("pasture: crowd CA")

// ErrCertHost is wrapped when a host name cannot get a certificate (empty, or not a DNS name
// or IP address; names also become file names, so path separators are refused).
var ErrCertHost = errors.New("pasture: invalid certificate host name")

// ErrUnknownServerName is wrapped by the TLS GetCertificate error when a client asks (by SNI)
// for a host the crowd does not serve; the handshake then fails.
var ErrUnknownServerName = errors.New("pasture: unknown TLS server name")

// CA is the crowd's certificate authority: made once at first start in a directory, loaded
// byte-identical on every later start, and used to issue a leaf certificate for each origin.
// Its methods are safe for concurrent use.
type CA struct {
	dir     string
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	now     func() time.Time // tests move the clock; nil means time.Now
}

// LoadOrCreate loads the CA from dir/ca.pem and dir/ca-key.pem, or creates one (ECDSA P-256,
// subject "crowd local CA", valid 10 years) when neither exists. Files are written atomically
// (temp file, fsync, rename, fsync of the directory), the key first and with mode 0600, so a
// kill at any moment leaves either nothing, a key alone (its certificate is then re-made from
// that key), or both. A corrupted, mismatched or expired pair is an error wrapping ErrCA and is
// never silently replaced: SUTs may already trust the old CA.
func LoadOrCreate(dir string) (*CA, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: empty state directory", ErrCA)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: create state directory: %w", ErrCA, err)
	}
	certPath := filepath.Join(dir, CACertFile)
	keyPath := filepath.Join(dir, CAKeyFile)

	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case certErr != nil && !errors.Is(certErr, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: read %s: %w", ErrCA, certPath, certErr)
	case keyErr != nil && !errors.Is(keyErr, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: read %s: %w", ErrCA, keyPath, keyErr)
	}
	c := &CA{dir: dir}

	if keyErr != nil { // no key
		if certErr == nil {
			return nil, fmt.Errorf("%w: %s exists but its key %s is missing; restore the key, or remove %s to make a new CA (SUTs must then trust the new one)",
				ErrCA, certPath, keyPath, certPath)
		}
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("%w: generate key: %w", ErrCA, err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("%w: encode key: %w", ErrCA, err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		if keyPEM, err = caCreateFile(keyPath, keyPEM, 0o600); err != nil {
			return nil, fmt.Errorf("%w: write %s: %w", ErrCA, keyPath, err)
		}
	}
	key, err := caParseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w (the file is corrupted: restore it, or remove %s and %s to make a new CA)",
			ErrCA, keyPath, err, keyPath, certPath)
	}
	c.key = key

	if certErr != nil { // no certificate: first start, or a crash between the two writes
		certPEM, err = c.selfSign()
		if err != nil {
			return nil, err
		}
		if certPEM, err = caCreateFile(certPath, certPEM, 0o644); err != nil {
			return nil, fmt.Errorf("%w: write %s: %w", ErrCA, certPath, err)
		}
	}
	cert, err := caParseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w (the file is corrupted: restore it, or remove it to re-make it from %s)",
			ErrCA, certPath, err, keyPath)
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("%w: %s is not a CA certificate", ErrCA, certPath)
	}
	if !caPublicKeyEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("%w: %s does not belong to the key in %s", ErrCA, certPath, keyPath)
	}
	if now := time.Now(); now.After(cert.NotAfter) {
		return nil, fmt.Errorf("%w: %s expired on %s; remove %s and %s to make a new CA",
			ErrCA, certPath, cert.NotAfter.Format(time.DateOnly), certPath, keyPath)
	}
	c.cert = cert
	c.certPEM = certPEM
	return c, nil
}

// selfSign makes the CA certificate for c.key.
func (c *CA) selfSign() ([]byte, error) {
	serial, err := caSerial()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCA, err)
	}
	now := c.clock()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: CommonName, Organization: []string{"crowd"}},
		NotBefore:             now.Add(-certBackdate),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // the CA only signs leaves
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, c.key.Public(), c.key)
	if err != nil {
		return nil, fmt.Errorf("%w: self-sign: %w", ErrCA, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func (c *CA) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// CertPEM returns the CA certificate in PEM form, exactly the bytes of dir/ca.pem. The caller
// owns the returned slice.
func (c *CA) CertPEM() []byte { return bytes.Clone(c.certPEM) }

// leafFresh reports whether leaf was signed by this CA, names host, and is not within
// leafRenewBefore of its expiry.
func (c *CA) leafFresh(leaf *x509.Certificate, host string) bool {
	if !c.leafInTime(leaf) {
		return false
	}
	if !bytes.Equal(leaf.RawIssuer, c.cert.RawSubject) || leaf.CheckSignatureFrom(c.cert) != nil {
		return false
	}
	return leaf.VerifyHostname(host) == nil
}

// leafInTime reports whether leaf is valid now and not due for renewal.
func (c *CA) leafInTime(leaf *x509.Certificate) bool {
	if leaf == nil {
		return false
	}
	now := c.clock()
	if now.Before(leaf.NotBefore) || !now.Before(leaf.NotAfter) {
		return false
	}
	// A leaf that ends with its CA cannot be renewed into a longer one: keep it to the end
	// rather than re-issue it on every handshake.
	return now.Add(leafRenewBefore).Before(leaf.NotAfter) || !leaf.NotAfter.Before(c.cert.NotAfter)
}

// issue makes a new ECDSA P-256 leaf for host (already normalized), returning the certificate
// PEM and the PKCS#8 key PEM.
func (c *CA) issue(host string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pasture: certificate for %s: %w", host, err)
	}
	serial, err := caSerial()
	if err != nil {
		return nil, nil, fmt.Errorf("pasture: certificate for %s: %w", host, err)
	}
	now := c.clock()
	notAfter := now.Add(leafLifetime)
	if notAfter.After(c.cert.NotAfter) {
		notAfter = c.cert.NotAfter // a leaf cannot outlive its CA
	}
	tmpl := leafTemplate(host, serial, now.Add(-certBackdate), notAfter)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return nil, nil, fmt.Errorf("pasture: certificate for %s: %w", host, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pasture: certificate for %s: %w", host, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// IssueFiles gives a SUT its own certificate: it writes dir/HOST.crt (the leaf followed by the
// CA certificate, the "certificate chain" file GoToSocial and nginx expect) and dir/HOST.key
// (PKCS#8, mode 0600), and returns their paths. Files from an earlier call are kept when they
// still hold a fresh leaf of this CA for host, so a SUT's certificate survives restarts.
func (c *CA) IssueFiles(host, dir string) (certPath, keyPath string, err error) {
	name, err := caNormalizeHost(host)
	if err != nil {
		return "", "", err
	}
	// 0755: a SUT that runs as another user must reach its certificate;
	// the key file itself stays 0600 (chown it to the SUT's user).
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("pasture: certificate for %s: %w", name, err)
	}
	certPath = filepath.Join(dir, name+".crt")
	keyPath = filepath.Join(dir, name+".key")
	if cp, err := os.ReadFile(certPath); err == nil {
		if kp, err := os.ReadFile(keyPath); err == nil {
			if pair, err := tls.X509KeyPair(cp, kp); err == nil && c.leafFresh(pair.Leaf, name) {
				return certPath, keyPath, nil
			}
		}
	}
	certPEM, keyPEM, err := c.issue(name)
	if err != nil {
		return "", "", err
	}
	// Key first: a crash in between leaves a key without a matching certificate, which the
	// check above rejects and re-issues, never a certificate whose key is lost.
	if err := atomicfile.Write(keyPath, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("pasture: certificate for %s: %w", name, err)
	}
	chain := append(certPEM, c.certPEM...)
	if err := atomicfile.Write(certPath, chain, 0o644); err != nil {
		return "", "", fmt.Errorf("pasture: certificate for %s: %w", name, err)
	}
	return certPath, keyPath, nil
}

// CheckHost reports whether host can get a certificate (IssueFiles): an
// IP address or a DNS name, with no wildcard; the error wraps ErrCertHost.
func CheckHost(host string) error {
	_, err := caNormalizeHost(host)
	return err
}

// caNormalizeHost lower-cases host and strips a port and a trailing dot. It refuses anything
// that is neither an IP address nor a plausible DNS name, since the name becomes a file name.
func caNormalizeHost(host string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(host))
	if hp, _, err := net.SplitHostPort(h); err == nil {
		h = hp
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return "", fmt.Errorf("%w: %q", ErrCertHost, host)
		}
		return ip.Unmap().String(), nil
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return "", fmt.Errorf("%w: %q", ErrCertHost, host)
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("%w: %q", ErrCertHost, host)
		}
		for _, r := range label {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			default:
				return "", fmt.Errorf("%w: %q", ErrCertHost, host)
			}
		}
	}
	return h, nil
}

func caSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// caParseCertPEM parses the first CERTIFICATE block of data.
func caParseCertPEM(data []byte) (*x509.Certificate, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM CERTIFICATE block")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// caParseKeyPEM parses the first private-key block of data: PKCS#8, or the older SEC 1 and
// PKCS#1 forms, so an operator can bring a CA made with openssl.
func caParseKeyPEM(data []byte) (crypto.Signer, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM private key block")
		}
		var (
			k   any
			err error
		)
		switch block.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		switch k := k.(type) {
		case *ecdsa.PrivateKey, *rsa.PrivateKey, ed25519.PrivateKey:
			return k.(crypto.Signer), nil
		default:
			return nil, fmt.Errorf("unsupported private key type %T", k)
		}
	}
}

func caPublicKeyEqual(a, b crypto.PublicKey) bool {
	ae, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ae.Equal(b)
}

// caCreateFile creates path with data atomically unless it exists, and returns what path
// then holds: data, or the content another process wrote first. Crowd replicas sharing a state
// volume thus agree on one CA instead of each writing its own and leaving a mismatched pair.
func caCreateFile(path string, data []byte, perm os.FileMode) ([]byte, error) {
	err := atomicfile.Create(path, data, perm)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	}
	return data, err
}
