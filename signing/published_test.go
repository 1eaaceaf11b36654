package signing

import (
	"bufio"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha512"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// The published examples of RFC 9421 (Appendix B.2) and of
// draft-cavage-http-signatures-12 (Appendix C), as test data: see
// testdata/README.md for where each file was taken from.

const (
	appendixB = "testdata/rfc9421-appendix-b"
	appendixC = "testdata/cavage-12-appendix-c"
)

func readTestdata(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pemBlock is the n-th PEM block of a test data file, as PEM text.
func pemBlock(t *testing.T, text string, n int) string {
	t.Helper()
	rest := []byte(text)
	for i := 0; ; i++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			t.Fatalf("no PEM block %d", n)
		}
		if i == n {
			return string(pem.EncodeToMemory(b))
		}
	}
}

// appendixBKey is the verification key of a B.1 key name: the public key
// as published, except test-key-rsa-pss, whose type (RSA-PSS) only its
// PKCS#8 private key declares (id-RSASSA-PSS); its public PEM is a plain
// rsaEncryption SubjectPublicKeyInfo.
func appendixBKey(t *testing.T, keyID string) any {
	t.Helper()
	switch keyID {
	case "test-shared-secret":
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(readTestdata(t, appendixB, "test-shared-secret.txt")))
		if err != nil {
			t.Fatal(err)
		}
		return SharedSecret(b)
	case "test-key-rsa-pss":
		text := readTestdata(t, appendixB, keyID+".pem")
		_, pub, err := parsePrivateKeyPEM(pemBlock(t, text, 1))
		if err != nil {
			t.Fatal(err)
		}
		published, err := ParsePublicKeyPEM(pemBlock(t, text, 0))
		if err != nil {
			t.Fatal(err)
		}
		pss, ok := pub.(RSAPSSPublicKey)
		if !ok || !pss.Equal(published) {
			t.Fatalf("test-key-rsa-pss: private key gives %T, not the published public key as RSA-PSS", pub)
		}
		return pub
	}
	k, err := ParsePublicKeyPEM(readTestdata(t, appendixB, keyID+".pem"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// appendixBMessage reads test-request or test-response with the
// signature headers of a case added.
func appendixBMessage(t *testing.T, file, headers string) (message9421, []byte) {
	t.Helper()
	raw := readTestdata(t, appendixB, file)
	br := bufio.NewReader(strings.NewReader(raw))
	var m message9421
	var body io.Reader
	if strings.HasPrefix(raw, "HTTP/") {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, body = message9421{status: resp.StatusCode, header: resp.Header}, resp.Body
	} else {
		req, err := http.ReadRequest(br)
		if err != nil {
			t.Fatal(err)
		}
		m, body = message9421{req: req, header: req.Header}, req.Body
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(headers) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		m.header.Add(k, v)
	}
	return m, b
}

// TestRFC9421AppendixB verifies every signature of RFC 9421 Appendix
// B.2.1-B.2.6 with the keys of B.1: the signature base this package builds
// from the published message is the published base byte for byte, and the
// published signature verifies over it with the algorithm the key's type
// picks (none of the examples names an alg). A changed bit fails.
func TestRFC9421AppendixB(t *testing.T) {
	tests := []struct {
		name, file string
		key        string
		alg        Algorithm // what the key's type picks
	}{
		{"b21", "test-request.http", "test-key-rsa-pss", RFC9421RSAPSSSHA512},      // B.2.1 minimal, no component
		{"b22", "test-request.http", "test-key-rsa-pss", RFC9421RSAPSSSHA512},      // B.2.2 @query-param;name="Pet"
		{"b23", "test-request.http", "test-key-rsa-pss", RFC9421RSAPSSSHA512},      // B.2.3 full coverage
		{"b24", "test-response.http", "test-key-ecc-p256", RFC9421ECDSAP256SHA256}, // B.2.4 a response, @status
		{"b25", "test-request.http", "test-shared-secret", RFC9421HMACSHA256},      // B.2.5 HMAC
		{"b26", "test-request.http", "test-key-ed25519", RFC9421Ed25519},           // B.2.6 Ed25519
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, body := appendixBMessage(t, tc.file, readTestdata(t, appendixB, tc.name+".headers"))
			if tc.name == "b24" {
				// The published test-response's Content-Digest is not its body's
				// sha-512; B.2.4's signature base carries the body's (see
				// testdata/README.md). The base is built from the body's.
				sum := sha512.Sum512(body)
				m.header.Set("Content-Digest", "sha-512=:"+base64.StdEncoding.EncodeToString(sum[:])+":")
			}
			s, err := parseRFC9421(m.header)
			if err != nil {
				t.Fatal(err)
			}
			if s.keyID != tc.key || s.alg != "" {
				t.Fatalf("keyid %q alg %q", s.keyID, s.alg)
			}
			params, err := httpsfv.Marshal(s.in)
			if err != nil {
				t.Fatal(err)
			}
			base, err := m.signatureBase(s.comps, params)
			if err != nil {
				t.Fatal(err)
			}
			if want := readTestdata(t, appendixB, tc.name+".base"); string(base) != want {
				t.Fatalf("signature base differs from the published one.\nours:\n%s\npublished:\n%s", base, want)
			}
			key := appendixBKey(t, tc.key)
			if alg, err := RFC9421AlgorithmFor(key); err != nil || alg != tc.alg {
				t.Fatalf("key type picks %q (%v), want %q", alg, err, tc.alg)
			}
			if err := verifyRFC9421With(nil, "", key, base, s.sig); err != nil {
				t.Fatalf("published signature: %v", err)
			}
			if err := verifyRFC9421With(nil, tc.alg, key, base, s.sig); err != nil {
				t.Fatalf("published signature with alg %s named: %v", tc.alg, err)
			}
			for _, b := range backends(t) { // the RSA ones through each backend of this build, as the inbox verifies
				if err := verifyRFC9421With(b, "", key, base, s.sig); err != nil {
					t.Errorf("published signature, %s backend: %v", b.Name(), err)
				}
			}
			bad := slices.Clone(s.sig)
			bad[len(bad)/2] ^= 1
			if err := verifyRFC9421With(nil, "", key, base, bad); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("a changed signature: err = %v, want ErrBadSignature", err)
			}
			if err := verifyRFC9421With(nil, "", key, append(base, ' '), s.sig); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("a changed base: err = %v, want ErrBadSignature", err)
			}
		})
	}
}

// TestRFC9421KeyTypeDecides: B.2.1 names no alg, so the key's type picks
// the algorithm. Its published public PEM alone is a plain RSA key, which
// picks rsa-v1_5-sha256, and the RSA-PSS signature then fails; naming
// rsa-pss-sha512 (or the key's own id-RSASSA-PSS type) verifies it. An alg
// that does not fit the key is a bad signature.
func TestRFC9421KeyTypeDecides(t *testing.T) {
	m, _ := appendixBMessage(t, "test-request.http", readTestdata(t, appendixB, "b21.headers"))
	s, err := parseRFC9421(m.header)
	if err != nil {
		t.Fatal(err)
	}
	base := []byte(readTestdata(t, appendixB, "b21.base"))
	plain, err := ParsePublicKeyPEM(readTestdata(t, appendixB, "test-key-rsa-pss.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.(*rsa.PublicKey); !ok {
		t.Fatalf("public PEM is a %T", plain)
	}
	if err := verifyRFC9421With(nil, "", plain, base, s.sig); !errors.Is(err, ErrBadSignature) {
		t.Errorf("plain RSA key, no alg: err = %v, want ErrBadSignature (rsa-v1_5-sha256 picked)", err)
	}
	if err := verifyRFC9421With(nil, RFC9421RSAPSSSHA512, plain, base, s.sig); err != nil {
		t.Errorf("plain RSA key, alg rsa-pss-sha512: %v", err)
	}
	pss := appendixBKey(t, "test-key-rsa-pss")
	for _, alg := range []Algorithm{RFC9421RSAv15SHA256, RFC9421Ed25519, RFC9421HMACSHA256, RFC9421ECDSAP256SHA256} {
		if err := verifyRFC9421With(nil, alg, pss, base, s.sig); !errors.Is(err, ErrBadSignature) || !strings.Contains(err.Error(), "does not fit") {
			t.Errorf("RSA-PSS key, alg %s: err = %v, want ErrBadSignature (does not fit)", alg, err)
		}
	}
	if err := verifyRFC9421With(nil, "rsa-v1_5-sha1", pss, base, s.sig); !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Errorf("unknown alg: err = %v, want ErrUnsupportedAlgorithm", err)
	}
}

// TestRFC9421AppendixBProfile: the inbox's profile (what Mastodon
// requires: created, @method and @target-uri covered, content-digest on a
// POST) refuses every published example, each for a stated reason, with
// ErrRFC9421 so that a sender would fall back to cavage.
func TestRFC9421AppendixBProfile(t *testing.T) {
	created := time.Unix(1618884473, 0)
	for _, name := range []string{"b21", "b22", "b23", "b25", "b26"} {
		m, body := appendixBMessage(t, "test-request.http", readTestdata(t, appendixB, name+".headers"))
		m.req.Body = http.NoBody
		s, _ := parseRFC9421(m.header)
		res := &fakeResolver{keys: map[string]PublicKey{s.keyID: {Key: appendixBKey(t, s.keyID), Owner: "https://example.com/actor", ID: s.keyID}}}
		v := &Verifier{Keys: res, Now: func() time.Time { return created }}
		_, err := v.Verify(context.Background(), m.req, body)
		if !errors.Is(err, ErrRFC9421) || !errors.Is(err, ErrMalformedSignature) || !strings.Contains(err.Error(), "@target-uri") {
			t.Errorf("%s: err = %v, want ErrRFC9421 and ErrMalformedSignature for @method/@target-uri", name, err)
		}
	}
}

// cavageRequest reads draft-cavage-12 Appendix C's request as a server
// receives it, with header name: value added.
func cavageRequest(t *testing.T, name, value string) (*http.Request, []byte) {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(readTestdata(t, appendixC, "request.http"))))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(name, strings.TrimSpace(value))
	return req, body
}

// TestCavageAppendixC verifies draft-cavage-http-signatures-12 Appendix
// C's examples with its key (keyId "Test", RSA 1024 bits; the draft says
// 2048). C.1 and C.2: the signing string this package rebuilds from the
// header equals the published one and the signature verifies. C.3: the
// header lists (created) (expires), but the published signing string, and
// the signature, leave them out (the draft warns its vectors are "old and
// possibly wrong"): the signature verifies over the published string and,
// rightly, not over the string its header describes.
func TestCavageAppendixC(t *testing.T) {
	pub, err := ParsePublicKeyPEM(readTestdata(t, appendixC, "key-test.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pk := PublicKey{Key: pub, ID: "Test", Owner: "Test"}
	tests := []struct {
		name, header, file string
		asPublished        bool // the header's own signing string is the published one
	}{
		{"c1", "Signature", "c1.signature", true},         // C.1 default test: headers absent = date
		{"c2", "Authorization", "c2.authorization", true}, // C.2 basic test
		{"c3", "Signature", "c3.signature", false},        // C.3 all headers test
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := cavageRequest(t, tc.header, readTestdata(t, appendixC, tc.file))
			sig := ParseRequest(req.Header)
			p, err := sig.Params, sig.Err
			if err != nil {
				t.Fatal(err)
			}
			published := readTestdata(t, appendixC, tc.name+".string")
			if err := verifyCavage(nil, p, pk, []byte(published)); err != nil {
				t.Fatalf("published signing string: %v", err)
			}
			ours, err := appendSigningString(nil, req, requestTarget(req), slices.Values(p.Headers), p.Created, p.Expires)
			if err != nil {
				t.Fatal(err)
			}
			if (string(ours) == published) != tc.asPublished {
				t.Fatalf("signing string from the header:\n%s\npublished:\n%s", ours, published)
			}
			err = checkCavage(nil, req, p, pk)
			if tc.asPublished && err != nil {
				t.Fatalf("verify from the header: %v", err)
			}
			if !tc.asPublished && !errors.Is(err, ErrBadSignature) {
				t.Fatalf("C.3 over the string its header describes: err = %v, want ErrBadSignature", err)
			}
		})
	}
}

// oidRSASSAPSS is id-RSASSA-PSS (RFC 8017 A.2.3): a key for RSA-PSS alone.
var oidRSASSAPSS = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}

// parsePrivateKeyPEM parses a PEM private key of RFC 9421's examples: PKCS#8 (RSA, ECDSA,
// Ed25519, and id-RSASSA-PSS keys, which crypto/x509 does not read),
// PKCS#1 RSA or SEC 1 EC. It returns the signer and the public key to
// verify its signatures with: an id-RSASSA-PSS key's is an
// RSAPSSPublicKey, so that the key's type picks rsa-pss-sha512. Errors wrap
// ErrKeyUnavailable.
func parsePrivateKeyPEM(s string) (crypto.Signer, crypto.PublicKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, nil, fmt.Errorf("%w: no PEM block", ErrKeyUnavailable)
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if sg, ok := k.(crypto.Signer); ok {
			return sg, sg.Public(), nil
		}
	}
	var p8 struct {
		Version    int
		Algorithm  struct{ Algorithm asn1.ObjectIdentifier }
		PrivateKey []byte
	}
	if rest, err := asn1.Unmarshal(block.Bytes, &p8); err == nil && len(rest) == 0 && p8.Algorithm.Algorithm.Equal(oidRSASSAPSS) {
		k, err := x509.ParsePKCS1PrivateKey(p8.PrivateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: id-RSASSA-PSS key: %v", ErrKeyUnavailable, err)
		}
		return k, RSAPSSPublicKey{&k.PublicKey}, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, &k.PublicKey, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, &k.PublicKey, nil
	}
	return nil, nil, fmt.Errorf("%w: cannot parse %q PEM block as PKCS#8, PKCS#1 or SEC 1", ErrKeyUnavailable, block.Type)
}
