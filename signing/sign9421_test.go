package signing

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fedifyInput is the Signature-Input Fedify (>= 1.6) writes for a POST,
// with the crowd's keyId and time.
var fedifyInput = regexp.MustCompile(`^sig1=\("@method" "@target-uri" "@authority" "host" "date" "content-digest"\);alg="(rsa-v1_5-sha256|ed25519)";keyid="https://flood3\.test/users/alice#main-key";created=1748779200$`)

// TestSign9421RoundTrip signs POSTs and GETs with RFC 9421 and verifies
// them as a server receives them (over TLS, as the crowd's inbox does),
// under the inbox's profile (what Mastodon requires).
func TestSign9421RoundTrip(t *testing.T) {
	k := loadKeys(t)
	now := time.Unix(1748779200, 0)
	tests := []struct {
		name string
		key  Key
		get  bool
		alg  Algorithm
	}{
		{"RSA POST", k.rsaA, false, RFC9421RSAv15SHA256},          // what the flood sends
		{"Ed25519 POST", k.edA, false, RFC9421Ed25519},            // an Ed25519 actor key
		{"RSA GET", k.rsaA, true, RFC9421RSAv15SHA256},            // a signed fetch
		{"Ed25519 GET", k.edA, true, RFC9421Ed25519},              // a signed fetch with Ed25519
		{"RSA POST via Sign", k.rsaA, false, RFC9421RSAv15SHA256}, // the scheme switch
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSigner(SignerOptions{Now: func() time.Time { return now }})
			var req *http.Request
			var body []byte
			var err error
			if tc.get {
				req, _ = http.NewRequest(http.MethodGet, "https://sut.test/users/bob?page=1", nil)
				err = s.SignGet9421(req, keyA, tc.key)
			} else {
				body = testBody
				req, _ = http.NewRequest(http.MethodPost, inbox, nil)
				if strings.HasSuffix(tc.name, "via Sign") {
					err = s.Sign(SchemeRFC9421, req, body, keyA, tc.key)
				} else {
					err = s.SignPost9421(req, body, keyA, tc.key)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.get {
				if in := req.Header.Get("Signature-Input"); !fedifyInput.MatchString(in) {
					t.Errorf("Signature-Input %q is not Fedify's shape", in)
				}
				if req.Header.Get("Content-Digest") != ContentDigest(body) || req.Header.Get("Digest") != "" {
					t.Errorf("Content-Digest %q, Digest %q", req.Header.Get("Content-Digest"), req.Header.Get("Digest"))
				}
			}
			sreq := overTheWire(t, req)
			sreq.TLS = &tls.ConnectionState{}
			got, _ := io.ReadAll(sreq.Body)
			if !bytes.Equal(got, body) {
				t.Fatalf("body on the wire = %q", got)
			}
			res := &fakeResolver{keys: map[string]PublicKey{keyA: {Key: tc.key.Public(), Owner: ownA, ID: keyA}}}
			v := &Verifier{Keys: res, Now: func() time.Time { return now.Add(30 * time.Minute) }}
			ver, err := v.Verify(context.Background(), sreq, got)
			if err != nil {
				t.Fatalf("Verify: %v\nSignature-Input: %s", err, req.Header.Get("Signature-Input"))
			}
			if ver.Scheme != "rfc9421" || ver.Algorithm != tc.alg || ver.Owner != ownA || ver.KeyID != keyA {
				t.Errorf("Verified = %+v", ver)
			}
		})
	}
}

// TestSignSchemeSwitch: a request signed with one scheme and signed again
// with the other (a double knock) carries only the second one's headers,
// so a verifier (which takes Signature-Input for RFC 9421) checks the
// scheme that was meant.
func TestSignSchemeSwitch(t *testing.T) {
	k := loadKeys(t)
	now := time.Unix(1748779200, 0)
	s := NewSigner(SignerOptions{Now: func() time.Time { return now }})
	res := &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}}
	v := &Verifier{Keys: res, Now: func() time.Time { return now }}
	for _, order := range [][2]Scheme{{SchemeRFC9421, SchemeCavage}, {SchemeCavage, SchemeRFC9421}} {
		req, _ := http.NewRequest(http.MethodPost, inbox, nil)
		for _, sc := range order {
			if err := s.Sign(sc, req, testBody, keyA, k.rsaA); err != nil {
				t.Fatal(err)
			}
		}
		_, hasInput := req.Header["Signature-Input"]
		_, hasCD := req.Header["Content-Digest"]
		_, hasDigest := req.Header["Digest"]
		if second := order[1]; hasInput != (second == SchemeRFC9421) || hasCD != hasInput || hasDigest == hasInput {
			t.Fatalf("%v: Signature-Input %v, Content-Digest %v, Digest %v", order, hasInput, hasCD, hasDigest)
		}
		sreq := overTheWire(t, req)
		sreq.TLS = &tls.ConnectionState{}
		ver, err := v.Verify(context.Background(), sreq, testBody)
		if err != nil || ver.Scheme != string(order[1]) {
			t.Fatalf("%v: %+v, %v", order, ver, err)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, inbox, nil)
	if err := s.Sign("rfc9999", req, testBody, keyA, k.rsaA); !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Fatalf("unknown scheme: %v", err)
	}
}

// TestSign9421Errors: what the RFC 9421 signer refuses.
func TestSign9421Errors(t *testing.T) {
	k := loadKeys(t)
	s := NewSigner(SignerOptions{})
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tests := []struct {
		name  string
		keyID string
		key   Key
		want  error
	}{
		{"empty keyId", "", k.rsaA, ErrMalformedSignature},                      // nothing to name
		{"quote in keyId", `https://a.test/x"y`, k.rsaA, ErrMalformedSignature}, // would break the sf-string
		{"non-ASCII keyId", "https://a.test/ü", k.rsaA, ErrMalformedSignature},  // sf-strings are ASCII
		{"nil key", keyA, nil, ErrUnsupportedAlgorithm},                         // no key
		{"ECDSA key", keyA, ecKey, ErrUnsupportedAlgorithm},                     // the crowd signs RSA or Ed25519
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, inbox, nil)
			if err := s.SignPost9421(req, testBody, tc.keyID, tc.key); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestSign9421Concurrent: one Signer signs RFC 9421 from many goroutines
// (run with -race).
func TestSign9421Concurrent(t *testing.T) {
	k := loadKeys(t)
	s := NewSigner(SignerOptions{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 4 {
				req, _ := http.NewRequest(http.MethodPost, inbox, nil)
				if err := s.SignPost9421(req, testBody, keyA, k.edA); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
