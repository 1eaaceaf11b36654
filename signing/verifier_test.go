package signing

import (
	"context"
	"crypto"
	"crypto/sha512"
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

// TestVerifyBadInput is the bad-input table: each request must fail with its
// sentinel and a reason, never verify, never panic.
func TestVerifyBadInput(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	signer := NewSigner(SignerOptions{Now: func() time.Time { return now }})
	good := func() *http.Request {
		req, _ := http.NewRequest(http.MethodPost, inbox, nil)
		if err := signer.SignPost(req, testBody, keyA, k.rsaA); err != nil {
			t.Fatal(err)
		}
		return req
	}
	// resign re-signs req with a custom headers list through go-fed.
	resign := func(req *http.Request, headers ...string) {
		req.Header.Del("Signature")
		gs, _, err := httpsig.NewSigner([]httpsig.Algorithm{httpsig.RSA_SHA256}, httpsig.DigestSha256, headers, httpsig.Signature, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := gs.SignRequest(k.rsaA, keyA, req, nil); err != nil {
			t.Fatal(err)
		}
	}
	setParam := func(req *http.Request, from, to string) {
		req.Header.Set("Signature", strings.Replace(req.Header.Get("Signature"), from, to, 1))
	}

	tests := []struct {
		name   string
		mutate func(req *http.Request) (body []byte)
		keys   map[string]PublicKey // nil: keyA → rsaA
		want   error
		reason string // substring of the error
	}{
		{"no signature", func(r *http.Request) []byte { r.Header.Del("Signature"); return testBody }, nil, ErrNoSignature, "no Signature header"},
		{"malformed header", func(r *http.Request) []byte { r.Header.Set("Signature", `keyId="a,b`); return testBody }, nil, ErrMalformedSignature, "unterminated"},
		{"garbage header", func(r *http.Request) []byte { r.Header.Set("Signature", `%%%`); return testBody }, nil, ErrMalformedSignature, "has no value"},
		{"header of commas", func(r *http.Request) []byte { r.Header.Set("Signature", `,,, ,`); return testBody }, nil, ErrMalformedSignature, "missing keyId"},
		{"missing signature parameter", func(r *http.Request) []byte {
			r.Header.Set("Signature", `keyId="`+keyA+`",headers="(request-target) host date digest"`)
			return testBody
		}, nil, ErrMalformedSignature, "missing signature"},
		{"signature not base64", func(r *http.Request) []byte { setParam(r, `signature="`, `signature="!!`); return testBody }, nil, ErrMalformedSignature, "base64"},
		{"tampered body", func(r *http.Request) []byte { return []byte(strings.Replace(string(testBody), "Follow", "Block", 1)) }, nil, ErrDigestMismatch, "Digest header says"},
		{"POST without Digest", func(r *http.Request) []byte { r.Header.Del("Digest"); return testBody }, nil, ErrDigestMismatch, "no Digest header"},
		{"Digest with only MD5", func(r *http.Request) []byte { r.Header.Set("Digest", "MD5=Q2hlY2sgSW50ZWdyaXR5IQ=="); return testBody }, nil, ErrDigestMismatch, "no SHA-256"},
		{"Digest not signed", func(r *http.Request) []byte { resign(r, "(request-target)", "host", "date"); return testBody }, nil, ErrMalformedSignature, "Digest is not among the signed headers"},
		{"Date not signed", func(r *http.Request) []byte { resign(r, "(request-target)", "host", "digest"); return testBody }, nil, ErrMalformedSignature, "neither date nor (created)"},
		{"signed header absent", func(r *http.Request) []byte { r.Header.Del("Content-Type"); return testBody }, nil, ErrMalformedSignature, `"content-type" is not in the request`},
		{"Date two hours old", func(r *http.Request) []byte {
			r.Header.Set("Date", now.Add(-2*time.Hour).Format(http.TimeFormat))
			return testBody
		}, nil, ErrDateSkew, "window"},
		{"Date two hours ahead", func(r *http.Request) []byte {
			r.Header.Set("Date", now.Add(2*time.Hour).Format(http.TimeFormat))
			return testBody
		}, nil, ErrDateSkew, "window"},
		{"Date unparsable", func(r *http.Request) []byte { r.Header.Set("Date", "yesterday"); return testBody }, nil, ErrDateSkew, "not an HTTP date"},
		{"wrong key", func(r *http.Request) []byte { return testBody }, map[string]PublicKey{keyA: {Key: k.rsaB.Public(), Owner: ownA, ID: keyA}}, ErrBadSignature, "verification error"},
		{"ed25519 key for rsa-sha256", func(r *http.Request) []byte { return testBody }, map[string]PublicKey{keyA: {Key: k.edA.Public(), Owner: ownA, ID: keyA}}, ErrBadSignature, "does not fit"},
		{"unknown keyId", func(r *http.Request) []byte { return testBody }, map[string]PublicKey{}, ErrKeyUnavailable, "unknown key"},
		{"signed header tampered", func(r *http.Request) []byte { r.Header.Set("Content-Type", "application/ld+json"); return testBody }, nil, ErrBadSignature, "rsa-sha256"},
		{"replayed to another inbox", func(r *http.Request) []byte { r.URL.Path = "/inbox"; return testBody }, nil, ErrBadSignature, "rsa-sha256"},
		{"replayed to another host", func(r *http.Request) []byte {
			r.Host = "other.test"
			r.Header.Set("Host", "other.test")
			return testBody
		}, nil, ErrBadSignature, "rsa-sha256"},
		{"algorithm label swapped", func(r *http.Request) []byte { setParam(r, "rsa-sha256", "rsa-sha512"); return testBody }, nil, ErrBadSignature, "rsa-sha512"},
		{"hmac algorithm", func(r *http.Request) []byte { setParam(r, "rsa-sha256", "hmac-sha256"); return testBody }, nil, ErrUnsupportedAlgorithm, "hmac-sha256"},
		{"keyId changed", func(r *http.Request) []byte {
			setParam(r, keyA, "https://flood3.test/users/mallory#main-key")
			return testBody
		}, map[string]PublicKey{"https://flood3.test/users/mallory#main-key": {Key: k.rsaB.Public(), Owner: "https://flood3.test/users/mallory", ID: "x"}}, ErrBadSignature, "mallory"},
		{"duplicate keyId", func(r *http.Request) []byte { setParam(r, "keyId=", `keyId="x",keyId=`); return testBody }, nil, ErrMalformedSignature, "duplicate"},
		{"key without owner", func(r *http.Request) []byte { return testBody }, map[string]PublicKey{keyA: {Key: k.rsaA.Public(), ID: keyA}}, ErrKeyUnavailable, "no owner"},
		{"RFC 9421 garbage", func(r *http.Request) []byte { r.Header.Set("Signature-Input", "sig1=(((("); return testBody }, nil, ErrRFC9421, "Signature-Input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := good()
			body := tc.mutate(req)
			sreq := overTheWire(t, req)
			keys := tc.keys
			if keys == nil {
				keys = map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}
			}
			v := &Verifier{Keys: &fakeResolver{keys: keys}, Now: func() time.Time { return now }}
			ver, err := v.Verify(context.Background(), sreq, body)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v (verified %+v)", err, tc.want, ver)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("reason %q not in %q", tc.reason, err)
			}
		})
	}
}

// TestVerifyAccepts covers valid variants real senders produce.
func TestVerifyAccepts(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewSigner(SignerOptions{Now: func() time.Time { return now }})
	tests := []struct {
		name   string
		mutate func(req *http.Request) // applied before signing
		after  func(req *http.Request) // applied after signing
		window time.Duration
		at     time.Time
	}{
		{"Date 59 minutes old", nil, nil, 0, now.Add(59 * time.Minute)},                  // inside the default 1 h window
		{"Date 5 hours old, window 6h", nil, nil, 6 * time.Hour, now.Add(5 * time.Hour)}, // configurable window
		{"SHA-256 and SHA-512 Digest", nil, func(r *http.Request) {
			r.Header.Set("Digest", r.Header.Get("Digest")+", "+sha512Digest(testBody))
			resignRSA(t, r, k.rsaA, PostHeaders)
		}, 0, now}, // several digests, all checked
		{"SHA-512 Digest only", nil, func(r *http.Request) {
			r.Header.Set("Digest", sha512Digest(testBody))
			resignRSA(t, r, k.rsaA, PostHeaders)
		}, 0, now}, // SHA-512 alone is fine
		{"Authorization: Signature", nil, func(r *http.Request) {
			r.Header.Set("Authorization", "Signature "+r.Header.Get("Signature"))
			r.Header.Del("Signature")
		}, 0, now}, // the older Authorization form
		{"escaped path", func(r *http.Request) { r.URL.Path = "/users/b b/inbox" }, nil, 0, now}, // (request-target) is the wire form
		{"no algorithm parameter", nil, func(r *http.Request) {
			r.Header.Set("Signature", strings.Replace(r.Header.Get("Signature"), `algorithm="rsa-sha256",`, "", 1))
		}, 0, now}, // derived from the key, as hs2019
		{"space after each comma", nil, func(r *http.Request) {
			r.Header.Set("Signature", strings.ReplaceAll(r.Header.Get("Signature"), `",`, `", `))
		}, 0, now}, // RFC 9110 list style, as Mastodon's parser allows
		{"spaces around commas and equals", nil, func(r *http.Request) {
			sp := strings.NewReplacer(`",`, `" , `, `keyId="`, `keyId = "`, `headers="`, `headers= "`, `signature="`, `signature ="`)
			r.Header.Set("Signature", sp.Replace(r.Header.Get("Signature")))
		}, 0, now}, // optional whitespace everywhere Mastodon allows it
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, inbox, nil)
			if tc.mutate != nil {
				tc.mutate(req)
			}
			if err := s.SignPost(req, testBody, keyA, k.rsaA); err != nil {
				t.Fatal(err)
			}
			if tc.after != nil {
				tc.after(req)
			}
			v := &Verifier{Keys: &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}}, Window: tc.window, Now: func() time.Time { return tc.at }}
			if _, err := v.Verify(context.Background(), overTheWire(t, req), testBody); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// resignRSA replaces req's signature with one by go-fed over its current headers.
func resignRSA(t testing.TB, req *http.Request, key crypto.PrivateKey, headers string) {
	t.Helper()
	req.Header.Del("Signature")
	gs, _, err := httpsig.NewSigner([]httpsig.Algorithm{httpsig.RSA_SHA256}, httpsig.DigestSha256, strings.Fields(headers), httpsig.Signature, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := gs.SignRequest(key, keyA, req, nil); err != nil {
		t.Fatal(err)
	}
}

func sha512Digest(b []byte) string {
	s := sha512.Sum512(b)
	return "SHA-512=" + base64.StdEncoding.EncodeToString(s[:])
}

// TestVerifyCreatedExpires: a go-fed signer (an independent implementation)
// signing hs2019 with (created) and (expires) and no Date.
func TestVerifyCreatedExpires(t *testing.T) {
	k := loadKeys(t)
	gs, _, err := httpsig.NewSigner([]httpsig.Algorithm{httpsig.ED25519}, httpsig.DigestSha256,
		[]string{"(request-target)", "host", "(created)", "(expires)", "digest"}, httpsig.Signature, 300)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, inbox, strings.NewReader(string(testBody)))
	req.Header.Set("Host", "sut.test")
	if err := gs.SignRequest(k.edA, keyA, req, testBody); err != nil {
		t.Fatal(err)
	}
	res := &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.edA.Public(), Owner: ownA, ID: keyA}}}
	v := &Verifier{Keys: res}
	sreq := overTheWire(t, req)
	ver, err := v.Verify(context.Background(), sreq, testBody)
	if err != nil {
		t.Fatalf("%v\n%s", err, req.Header.Get("Signature"))
	}
	if ver.Algorithm != HS2019 {
		t.Errorf("algorithm %q", ver.Algorithm)
	}
	// Its expires (5 min) plus Mastodon's 1 h skew margin and a little later,
	// the signature has expired.
	v.Now = func() time.Time { return time.Now().Add(time.Hour + 10*time.Minute) }
	if _, err := v.Verify(context.Background(), sreq, testBody); !errors.Is(err, ErrDateSkew) {
		t.Fatalf("expired: err = %v", err)
	}
}

// TestVerifyKeyRotation: the cached key is stale; one refresh fetches the new
// key and the request verifies. A bad signature refreshes exactly once.
func TestVerifyKeyRotation(t *testing.T) {
	k := loadKeys(t)
	req, _ := http.NewRequest(http.MethodPost, inbox, nil)
	if err := NewSigner(SignerOptions{}).SignPost(req, testBody, keyA, k.rsaB); err != nil {
		t.Fatal(err)
	}
	res := &fakeResolver{
		keys:    map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}},
		rotated: map[string]PublicKey{keyA: {Key: k.rsaB.Public(), Owner: ownA, ID: keyA}},
	}
	v := &Verifier{Keys: res}
	if _, err := v.Verify(context.Background(), overTheWire(t, req), testBody); err != nil {
		t.Fatal(err)
	}
	if res.calls.Load() != 2 || res.refreshes.Load() != 1 {
		t.Errorf("calls %d refreshes %d, want 2 and 1", res.calls.Load(), res.refreshes.Load())
	}

	// Signed with a key the actor never had: one refresh, then ErrBadSignature.
	req2, _ := http.NewRequest(http.MethodPost, inbox, nil)
	if err := NewSigner(SignerOptions{Algorithm: Ed25519}).SignPost(req2, testBody, keyA, k.edA); err != nil {
		t.Fatal(err)
	}
	res2 := &fakeResolver{keys: res.keys, rotated: res.keys}
	_, err := (&Verifier{Keys: res2}).Verify(context.Background(), overTheWire(t, req2), testBody)
	if !errors.Is(err, ErrBadSignature) || res2.refreshes.Load() != 1 {
		t.Fatalf("err %v, refreshes %d", err, res2.refreshes.Load())
	}
}

// TestVerifyKeyRotationWithKeyCache: the same through a real KeyCache and an
// httptest server whose actor changes key.
func TestVerifyKeyRotationWithKeyCache(t *testing.T) {
	k := loadKeys(t)
	w := newWeb(t)
	w.actor("a.test", "alice", k.rsaA.Public())
	kid := "http://a.test/users/alice#main-key"
	kc := w.cache(KeyCacheOptions{})
	v := &Verifier{Keys: kc}
	send := func(key Key) error {
		req, _ := http.NewRequest(http.MethodPost, inbox, nil)
		if err := NewSigner(SignerOptions{}).SignPost(req, testBody, kid, key); err != nil {
			t.Fatal(err)
		}
		ver, err := v.Verify(context.Background(), overTheWire(t, req), testBody)
		if err == nil && ver.Owner != "http://a.test/users/alice" {
			t.Errorf("owner %q", ver.Owner)
		}
		return err
	}
	if err := send(k.rsaA); err != nil {
		t.Fatal(err)
	}
	w.actor("a.test", "alice", k.rsaB.Public()) // rotate
	if err := send(k.rsaB); err != nil {
		t.Fatal(err)
	}
	if n := w.hits("/users/alice"); n != 2 {
		t.Errorf("%d fetches, want 2 (first use, one refetch on rotation)", n)
	}
	if err := send(k.rsaB); err != nil { // now cached
		t.Fatal(err)
	}
	if n := w.hits("/users/alice"); n != 2 {
		t.Errorf("%d fetches after a cached verify, want 2", n)
	}
}

// TestVerifyKeyIDNotFound: a keyId whose fetch 404s.
func TestVerifyKeyIDNotFound(t *testing.T) {
	k := loadKeys(t)
	w := newWeb(t)
	req, _ := http.NewRequest(http.MethodPost, inbox, nil)
	if err := NewSigner(SignerOptions{}).SignPost(req, testBody, "http://a.test/users/ghost#main-key", k.rsaA); err != nil {
		t.Fatal(err)
	}
	_, err := (&Verifier{Keys: w.cache(KeyCacheOptions{})}).Verify(context.Background(), overTheWire(t, req), testBody)
	if !errors.Is(err, ErrKeyUnavailable) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v", err)
	}
}

// TestVerifyHTTPServer runs the verifier in a real handler behind a real
// listener, as the inbox will.
func TestVerifyHTTPServer(t *testing.T) {
	k := loadKeys(t)
	v := &Verifier{Keys: &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := v.Verify(r.Context(), r, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/users/bob/inbox?x=%2F", nil)
	if err := NewSigner(SignerOptions{}).SignPost(req, testBody, keyA, k.rsaA); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %s", resp.Status)
	}
}

// TestClockWindowIsMastodons: the verifier's window is Mastodon's
// (SignedRequest#matches_time_window?): a signature made at Date or
// (created) expires at expires, else 5 min later, never past 12 h, and is
// refused once now is more than 1 h past that, or when it was made more
// than 1 h ahead. Each row is a signed time relative to now.
func TestClockWindowIsMastodons(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	v := &Verifier{Now: func() time.Time { return now }}
	for _, tc := range []struct {
		name             string
		date             time.Duration // Date relative to now; 0 = no Date
		created, expires time.Duration // (created)/(expires) relative to now; 0 = absent
		says             string        // "" = accepted; else a piece of the reason
	}{
		// 61-64 min old: Mastodon accepts (5 min expiry + 1 h margin).
		{name: "Date 61 min old", date: -61 * time.Minute},
		{name: "Date 64 min old", date: -64 * time.Minute},
		// Past 65 min: expired more than the margin ago; the reason says how old.
		{name: "Date 66 min old", date: -66 * time.Minute, says: "is 1h6m0s old: it expired at 2026-12-02T10:59:00Z, 1h1m0s ago, more than the 1h0m0s skew margin"},
		// Up to 1 h ahead is accepted; 2 h ahead is refused, and said to be ahead.
		{name: "Date 59 min ahead", date: 59 * time.Minute},
		{name: "Date 2 h ahead", date: 2 * time.Hour, says: "is 2h0m0s ahead of now: at most 1h0m0s ahead is accepted"},
		// (created) is judged the same way.
		{name: "created 64 min old", created: -64 * time.Minute},
		{name: "created 70 min old", created: -70 * time.Minute, says: "created"},
		// An expires stretches the window, up to 12 h after created.
		{name: "created 3 h old, expires in 1 h", created: -3 * time.Hour, expires: time.Hour},
		{name: "created 14 h old, expires in 1 h (capped at 12 h)", created: -14 * time.Hour, expires: time.Hour, says: "expired"},
		// An expires long past is refused even with a fresh created.
		{name: "expired 2 h ago", created: -time.Minute, expires: -2 * time.Hour, says: "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.date != 0 {
				h.Set("Date", now.Add(tc.date).Format(http.TimeFormat))
			}
			var created, expires int64
			if tc.created != 0 {
				created = now.Add(tc.created).Unix()
			}
			if tc.expires != 0 {
				expires = now.Add(tc.expires).Unix()
			}
			err := v.checkTimes(h, created, expires)
			switch {
			case tc.says == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.says != "" && (!errors.Is(err, ErrDateSkew) || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("err = %v, want ErrDateSkew saying %q", err, tc.says)
			}
		})
	}
}
