package signing

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-fed/httpsig"
)

const (
	keyA  = "https://flood3.test/users/alice#main-key"
	ownA  = "https://flood3.test/users/alice"
	inbox = "https://sut.test/users/bob/inbox"
)

var testBody = []byte(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://flood3.test/users/alice/follows/1","type":"Follow","actor":"https://flood3.test/users/alice","object":"https://sut.test/users/bob"}`)

// TestSignVerifyRoundTrip signs with every algorithm and verifies the request
// as a server receives it (written out and read back).
func TestSignVerifyRoundTrip(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		alg  Algorithm
		key  Key
		get  bool
	}{
		{"default rsa-sha256 POST", "", k.rsaA, false},               // the fediverse default
		{"rsa-sha256 GET", RSASHA256, k.rsaA, true},                  // authorized-fetch GET
		{"hs2019 with RSA POST", HS2019, k.rsaA, false},              // Mastodon-style hs2019 label
		{"hs2019 with ed25519 POST", HS2019, k.edA, false},           // hs2019 derives ed25519 from the key
		{"rsa-sha512 POST", RSASHA512, k.rsaA, false},                // SHA-512 variant
		{"rsa-sha512 GET", RSASHA512, k.rsaA, true},                  // SHA-512 on a GET
		{"ed25519 POST", Ed25519, k.edA, false},                      // GoToSocial-style ed25519
		{"ed25519 GET", Ed25519, k.edA, true},                        // ed25519 on a GET
		{"upper-case label normalised", "RSA-SHA256", k.rsaA, false}, // options are case-insensitive
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSigner(SignerOptions{Algorithm: tc.alg, Now: func() time.Time { return now }})
			var req *http.Request
			var body []byte
			if tc.get {
				req, _ = http.NewRequest(http.MethodGet, "https://sut.test/users/bob?page=1", nil)
				if err := s.SignGet(req, keyA, tc.key); err != nil {
					t.Fatal(err)
				}
			} else {
				body = testBody
				req, _ = http.NewRequest(http.MethodPost, inbox, nil)
				if err := s.SignPost(req, body, keyA, tc.key); err != nil {
					t.Fatal(err)
				}
			}
			sreq := overTheWire(t, req)
			got, _ := io.ReadAll(sreq.Body)
			if !bytes.Equal(got, body) {
				t.Fatalf("body on the wire = %q", got)
			}
			res := &fakeResolver{keys: map[string]PublicKey{keyA: {Key: tc.key.Public(), Owner: ownA, ID: keyA}}}
			v := &Verifier{Keys: res, Now: func() time.Time { return now.Add(30 * time.Minute) }}
			ver, err := v.Verify(context.Background(), sreq, got)
			if err != nil {
				t.Fatalf("Verify: %v\nSignature: %s", err, req.Header.Get("Signature"))
			}
			want := s.Algorithm()
			if ver.Owner != ownA || ver.KeyID != keyA || ver.Algorithm != want || ver.Scheme != "cavage" {
				t.Errorf("Verified = %+v", ver)
			}
			if res.refreshes.Load() != 0 {
				t.Errorf("a good signature caused %d refreshes", res.refreshes.Load())
			}
		})
	}
}

// TestSignPostHeaders checks every header SignPost promises.
func TestSignPostHeaders(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("CEST", 7200))
	s := NewSigner(SignerOptions{UserAgent: "crowd/1.0 (+https://github.com/crowdfed/crowd)", Now: func() time.Time { return now }})
	req, _ := http.NewRequest(http.MethodPost, "https://sut.test:8443/inbox?x=1", nil)
	if err := s.SignPost(req, testBody, keyA, k.rsaA); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(testBody)
	checks := []struct{ header, want string }{
		{"Host", "sut.test:8443"},                                          // port kept, as sent on the wire
		{"Date", "Sun, 01 Jun 2025 10:00:00 GMT"},                          // RFC 9110 form, in GMT
		{"Digest", "SHA-256=" + base64.StdEncoding.EncodeToString(sum[:])}, // exact body hash
		{"Content-Type", "application/activity+json"},                      // default content type
		{"User-Agent", "crowd/1.0 (+https://github.com/crowdfed/crowd)"},   // configured UA
	}
	for _, c := range checks {
		if got := req.Header.Get(c.header); got != c.want {
			t.Errorf("%s = %q, want %q", c.header, got, c.want)
		}
	}
	if req.Host != "sut.test:8443" || req.ContentLength != int64(len(testBody)) || req.GetBody == nil {
		t.Errorf("Host %q ContentLength %d GetBody %v", req.Host, req.ContentLength, req.GetBody != nil)
	}
	p, err := ParseSignatureHeader(req.Header.Get("Signature"))
	if err != nil {
		t.Fatal(err)
	}
	if p.KeyID != keyA || p.Algorithm != RSASHA256 || strings.Join(p.Headers, " ") != PostHeaders || len(p.Signature) != 256 {
		t.Errorf("params = %+v", p)
	}
	if !strings.HasPrefix(req.Header.Get("Signature"), `keyId="`+keyA+`",algorithm="rsa-sha256",headers="(request-target) host date digest content-type",signature="`) {
		t.Errorf("Signature = %s", req.Header.Get("Signature"))
	}

	// A caller's own Date, Content-Type and User-Agent are kept; default UA otherwise.
	req2, _ := http.NewRequest(http.MethodGet, "https://sut.test/users/bob", nil)
	req2.Header.Set("Date", "Mon, 02 Jun 2025 00:00:00 GMT")
	if err := NewSigner(SignerOptions{}).SignGet(req2, keyA, k.rsaA); err != nil {
		t.Fatal(err)
	}
	if req2.Header.Get("Date") != "Mon, 02 Jun 2025 00:00:00 GMT" || req2.Header.Get("User-Agent") != "crowd/dev" || req2.Header.Get("Accept") != AcceptActivity {
		t.Errorf("GET headers = %v", req2.Header)
	}
}

// TestSignErrors covers what a Signer refuses to sign.
func TestSignErrors(t *testing.T) {
	k := loadKeys(t)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tests := []struct {
		name  string
		alg   Algorithm
		key   Key
		keyID string
		want  error
	}{
		{"rsa label with ed25519 key", RSASHA256, k.edA, keyA, ErrUnsupportedAlgorithm}, // no silent relabelling
		{"ed25519 label with RSA key", Ed25519, k.rsaA, keyA, ErrUnsupportedAlgorithm},  // likewise
		{"unknown label", "hmac-sha256", k.rsaA, keyA, ErrUnsupportedAlgorithm},         // not an asymmetric label we sign
		{"ECDSA key", HS2019, ec, keyA, ErrUnsupportedAlgorithm},                        // fediverse verifiers do not take ECDSA
		{"quote in keyId", RSASHA256, k.rsaA, `https://x/"a`, ErrMalformedSignature},    // would break the header
		{"empty keyId", RSASHA256, k.rsaA, "", ErrMalformedSignature},                   // keyId is required
		{"nil key", RSASHA256, nil, keyA, ErrUnsupportedAlgorithm},                      // no key, no signature
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, inbox, nil)
			err := NewSigner(SignerOptions{Algorithm: tc.alg}).SignPost(req, testBody, tc.keyID, tc.key)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestCrossCheckGoFed uses go-fed/httpsig as an independent oracle: its
// verifier accepts our requests, and its signer, given the same headers and
// key, produces the very same signature bytes (RSA PKCS#1 v1.5 and Ed25519 are
// deterministic), which means both built the same signing string. go-fed also
// computes the Digest itself, which must equal ours.
func TestCrossCheckGoFed(t *testing.T) {
	k := loadKeys(t)
	now := time.Now() // go-fed's own checks use the real clock
	tests := []struct {
		name   string
		alg    Algorithm
		gofed  httpsig.Algorithm
		key    Key
		get    bool
		target string
	}{
		{"rsa-sha256 POST", RSASHA256, httpsig.RSA_SHA256, k.rsaA, false, inbox},                              // the default
		{"rsa-sha256 POST with query", RSASHA256, httpsig.RSA_SHA256, k.rsaA, false, inbox + "?a=1&b=2"},      // query is in (request-target)
		{"rsa-sha512 POST", RSASHA512, httpsig.RSA_SHA512, k.rsaA, false, inbox},                              // SHA-512
		{"ed25519 POST", Ed25519, httpsig.ED25519, k.edA, false, inbox},                                       // ed25519
		{"rsa-sha256 GET", RSASHA256, httpsig.RSA_SHA256, k.rsaA, true, "https://sut.test/users/bob"},         // GET header set
		{"hs2019 GET with port", HS2019, httpsig.RSA_SHA256, k.rsaB, true, "https://sut.test:8443/users/bob"}, // host with port
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSigner(SignerOptions{Algorithm: tc.alg, Now: func() time.Time { return now }})
			method, headers := http.MethodPost, PostHeaders
			if tc.get {
				method, headers = http.MethodGet, GetHeaders
			}
			ours, _ := http.NewRequest(method, tc.target, nil)
			if tc.get {
				if err := s.SignGet(ours, keyA, tc.key); err != nil {
					t.Fatal(err)
				}
			} else if err := s.SignPost(ours, testBody, keyA, tc.key); err != nil {
				t.Fatal(err)
			}

			// 1. go-fed's verifier accepts our request as the server sees it.
			sreq := overTheWire(t, ours)
			gv, err := httpsig.NewVerifier(sreq)
			if err != nil {
				t.Fatal(err)
			}
			if err := gv.Verify(tc.key.Public(), tc.gofed); err != nil {
				t.Fatalf("go-fed rejects our signature: %v", err)
			}

			// 2. go-fed's signer, same inputs, same signature bytes.
			theirs, _ := http.NewRequest(method, tc.target, nil)
			for _, h := range []string{"Host", "Date", "Content-Type", "Accept"} {
				if v := ours.Header.Get(h); v != "" {
					theirs.Header.Set(h, v)
				}
			}
			gs, _, err := httpsig.NewSigner([]httpsig.Algorithm{tc.gofed}, httpsig.DigestSha256, strings.Fields(headers), httpsig.Signature, 0)
			if err != nil {
				t.Fatal(err)
			}
			var body []byte
			if !tc.get {
				body = testBody
			}
			if err := gs.SignRequest(crypto.PrivateKey(tc.key), keyA, theirs, body); err != nil {
				t.Fatal(err)
			}
			if !tc.get && theirs.Header.Get("Digest") != ours.Header.Get("Digest") {
				t.Errorf("Digest: go-fed %q, ours %q", theirs.Header.Get("Digest"), ours.Header.Get("Digest"))
			}
			pt, err := ParseSignatureHeader(theirs.Header.Get("Signature"))
			if err != nil {
				t.Fatal(err)
			}
			po, _ := ParseSignatureHeader(ours.Header.Get("Signature"))
			if !bytes.Equal(pt.Signature, po.Signature) {
				msg, _ := appendSigningString(nil, ours, requestTarget(ours), strings.FieldsSeq(headers), 0, 0)
				t.Errorf("signatures differ: go-fed signed a different string than ours:\n%s", msg)
			}
		})
	}
}

// TestSignConcurrent shares one Signer between goroutines (run with -race).
func TestSignConcurrent(t *testing.T) {
	k := loadKeys(t)
	s := NewSigner(SignerOptions{Algorithm: Ed25519})
	res := &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.edA.Public(), Owner: ownA, ID: keyA}}}
	v := &Verifier{Keys: res}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if _, err := v.Verify(r.Context(), r, b); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/users/bob/inbox", nil)
			body := []byte(strings.Repeat("x", i+1))
			if err := s.SignPost(req, body, keyA, k.edA); err != nil {
				errs <- err
				return
			}
			resp, err := srv.Client().Do(req)
			if err == nil {
				msg, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					err = errors.New(resp.Status + ": " + string(msg))
				}
			}
			errs <- err
		}()
	}
	for i := 0; i < 16; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
