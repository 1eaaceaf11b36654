package tlsca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestCA(t *testing.T) (*CA, string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatalf("LoadOrCreate: %v", err)
	}
	return ca, dir
}

func TestCACreateAndReloadByteIdentical(t *testing.T) {
	ca, dir := newTestCA(t)

	cert := ca.cert
	if cert.Subject.CommonName != CommonName || !cert.IsCA {
		t.Fatalf("CA subject %q IsCA=%v", cert.Subject.CommonName, cert.IsCA)
	}
	if life := cert.NotAfter.Sub(cert.NotBefore); life < 9*365*24*time.Hour {
		t.Fatalf("CA lifetime %v, want about 10 years", life)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, ca.CertPEM()) {
		t.Fatal("CertPEM differs from ca.pem")
	}
	st, err := os.Stat(filepath.Join(dir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v, want 0600", st.Mode().Perm())
	}
	keyBefore, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))

	again, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatalf("second LoadOrCreate: %v", err)
	}
	if !bytes.Equal(again.CertPEM(), ca.CertPEM()) {
		t.Fatal("CA PEM changed across restart")
	}
	keyAfter, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if !bytes.Equal(keyBefore, keyAfter) {
		t.Fatal("CA key file changed across restart")
	}
	// No temp files left behind by the atomic writes.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("leftover temp file %s", e.Name())
		}
	}
}

// Crowd replicas that share a state volume start at once: they must agree on one CA.
func TestCAConcurrentFirstStartAgrees(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	pems := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ca, err := LoadOrCreate(dir)
			errs[i] = err
			if err == nil {
				pems[i] = ca.CertPEM()
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		if !bytes.Equal(pems[i], pems[0]) {
			t.Fatalf("replica %d has another CA", i)
		}
	}
	again, err := LoadOrCreate(dir)
	if err != nil || !bytes.Equal(again.CertPEM(), pems[0]) {
		t.Fatalf("restart after concurrent start: %v", err)
	}
}

// A kill between writing the key and writing the certificate leaves only the key: the
// certificate is re-made from it, the key is kept.
func TestCAKeyWithoutCertRemakesCert(t *testing.T) {
	ca, dir := newTestCA(t)
	keyBefore, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err := os.Remove(filepath.Join(dir, CACertFile)); err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatalf("LoadOrCreate: %v", err)
	}
	keyAfter, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if !bytes.Equal(keyBefore, keyAfter) {
		t.Fatal("key replaced")
	}
	if !again.cert.PublicKey.(*ecdsa.PublicKey).Equal(ca.cert.PublicKey) {
		t.Fatal("re-made certificate has another key")
	}
}

func TestCABadFilesAreClearErrors(t *testing.T) {
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherDER, _ := x509.MarshalPKCS8PrivateKey(otherKey)
	otherPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: otherDER})

	tests := []struct {
		name   string
		file   string // file to replace (or remove when data is nil)
		data   []byte
		expect string // a fragment of the error message
	}{
		// Garbage in the key file: not PEM at all.
		{"garbage key", CAKeyFile, []byte("not a key\x00\xff"), CAKeyFile},
		// A PEM block of the right type whose DER is truncated.
		{"truncated key DER", CAKeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: otherDER[:20]}), CAKeyFile},
		// An empty key file, as left by a full disk.
		{"empty key", CAKeyFile, []byte{}, CAKeyFile},
		// A valid key that is not the CA's.
		{"mismatched key", CAKeyFile, otherPEM, "does not belong"},
		// The certificate is garbage.
		{"garbage cert", CACertFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), CACertFile},
		// The key is gone but the certificate remains: SUTs trust a CA that can no longer sign.
		{"cert without key", CAKeyFile, nil, "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, dir := newTestCA(t)
			p := filepath.Join(dir, tc.file)
			if tc.data == nil {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(p, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(p)
			_, err := LoadOrCreate(dir)
			if err == nil {
				t.Fatal("LoadOrCreate succeeded on a bad CA")
			}
			if !errors.Is(err, ErrCA) {
				t.Fatalf("error %v does not wrap ErrCA", err)
			}
			if !strings.Contains(err.Error(), tc.expect) {
				t.Fatalf("error %q does not mention %q", err, tc.expect)
			}
			// A bad CA is never silently replaced: SUTs may trust it.
			after, _ := os.ReadFile(p)
			if !bytes.Equal(before, after) {
				t.Fatal("bad file was overwritten")
			}
		})
	}
}

// serveTLS runs a TLS listener on 127.0.0.1:0 that completes handshakes and writes "ok".
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if err := c.(*tls.Conn).Handshake(); err != nil {
					return
				}
				io.WriteString(c, "ok")
			}()
		}
	}()
	return ln.Addr().String()
}

func leafDER(t *testing.T, cfg *tls.Config, host string) []byte {
	t.Helper()
	c, err := cfg.GetCertificate(&tls.ClientHelloInfo{ServerName: host})
	if err != nil {
		t.Fatal(err)
	}
	return c.Certificate[0]
}

func TestCAIssueFilesRejectsBadHosts(t *testing.T) {
	ca, _ := newTestCA(t)
	for _, h := range []string{
		"",              // empty
		"../etc/passwd", // path traversal: names become file names
		"a/b.test",      // path separator
		"a..test",       // empty label
		"fe80::1%eth0",  // zoned address
		"sp ace.test",   // space
	} {
		if _, _, err := ca.IssueFiles(h, t.TempDir()); !errors.Is(err, ErrCertHost) {
			t.Errorf("IssueFiles(%q) = %v, want ErrCertHost", h, err)
		}
	}
}

func TestCAIssueFiles(t *testing.T) {
	ca, _ := newTestCA(t)
	out := t.TempDir()

	tests := []struct {
		host    string
		dnsName string // expected DNS SAN ("" for an IP)
		ip      string // expected IP SAN
	}{
		{"Sut.Test", "sut.test", ""},     // a SUT's own name, normalized
		{"sut.test:443", "sut.test", ""}, // a port is ignored
		{"127.0.0.5", "", "127.0.0.5"},   // an address gets an IP SAN
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			certPath, keyPath, err := ca.IssueFiles(tc.host, out)
			if err != nil {
				t.Fatalf("IssueFiles: %v", err)
			}
			st, err := os.Stat(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Fatalf("key mode %v", st.Mode().Perm())
			}
			pair, err := tls.LoadX509KeyPair(certPath, keyPath)
			if err != nil {
				t.Fatalf("LoadX509KeyPair: %v", err)
			}
			if len(pair.Certificate) != 2 {
				t.Fatalf("chain has %d certificates, want leaf + CA", len(pair.Certificate))
			}
			name := tc.dnsName
			if name == "" {
				name = tc.ip
			}
			if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: caPool(ca), DNSName: name}); err != nil {
				t.Fatalf("verify: %v", err)
			}
			// A second call keeps the files: the SUT's certificate is stable.
			before, _ := os.ReadFile(certPath)
			if _, _, err := ca.IssueFiles(tc.host, out); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(certPath)
			if !bytes.Equal(before, after) {
				t.Fatal("IssueFiles re-issued a fresh certificate")
			}
		})
	}

	// The issued pair serves real TLS to a client trusting only the crowd CA.
	certPath, keyPath, err := ca.IssueFiles("sut.test", out)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, &tls.Config{Certificates: []tls.Certificate{pair}})
	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "sut.test", RootCAs: caPool(ca)})
	if err != nil {
		t.Fatalf("handshake with issued files: %v", err)
	}
	conn.Close()
}

// An RSA CA brought by an operator (PKCS#1 key, as older openssl writes) is accepted.
func TestCAAcceptsOperatorRSAKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	// Replace with an RSA pair made the way an operator would: key only, certificate re-made.
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, CACertFile))
	os.WriteFile(filepath.Join(dir, CAKeyFile), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}), 0o600)
	ca, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatalf("RSA CA: %v", err)
	}
	cfg, err := ca.OnDemandTLSConfig(OnDemand{Serves: func(n string) bool { return n == "flood1.test" }})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, cfg)
	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "flood1.test", RootCAs: caPool(ca)})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	conn.Close()
}

func TestCACertPEMIsACopy(t *testing.T) {
	ca, _ := newTestCA(t)
	p := ca.CertPEM()
	p[0] = 'X'
	if ca.CertPEM()[0] == 'X' {
		t.Fatal("CertPEM exposes internal bytes")
	}
}

// FuzzCANormalizeHost: host names become file names, so whatever is accepted must be a single
// safe path element, and normalizing must be idempotent.
func FuzzCANormalizeHost(f *testing.F) {
	for _, s := range []string{"flood1.test", "FLOOD1.test.", "flood1.test:443", "[::1]:443", "../x", "a/b", "127.0.0.1", "::ffff:1.2.3.4", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		name, err := caNormalizeHost(host)
		if err != nil {
			return
		}
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || filepath.Base(name) != name {
			t.Fatalf("caNormalizeHost(%q) = %q: not a safe file name", host, name)
		}
		again, err := caNormalizeHost(name)
		if err != nil || again != name {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", host, name, again, err)
		}
	})
}

// caPool is a pool holding only ca: a client that trusts the crowd and nothing else.
func caPool(ca *CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}
