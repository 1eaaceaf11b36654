package apclient

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/go-fed/httpsig"

	"github.com/crowdfed/crowd/signing"
)

// verifySigned checks r's signature twice: with the crowd's own Verifier and
// with go-fed/httpsig, a verifier nobody here wrote, so that a signing
// string both sides got wrong the same way cannot pass.
func verifySigned(t *testing.T, r *http.Request) {
	t.Helper()
	key := loadKey(t, "rsa-instance.pem")
	keys := signing.KeyResolverFunc(func(_ context.Context, keyID string, _ bool) (signing.PublicKey, error) {
		if keyID != instanceKeyID {
			return signing.PublicKey{}, signing.ErrKeyUnavailable
		}
		return signing.PublicKey{Key: &key.PublicKey, Owner: "https://crowd.test/actor", ID: keyID}, nil
	})
	if _, err := (&signing.Verifier{Keys: keys}).Verify(context.Background(), r, nil); err != nil {
		t.Errorf("the crowd's Verifier refuses the GET of %s: %v", r.URL, err)
	}
	v, err := httpsig.NewVerifier(r)
	if err != nil {
		t.Fatalf("go-fed/httpsig cannot read the signature: %v", err)
	}
	if v.KeyId() != instanceKeyID {
		t.Errorf("keyId %q, want %q", v.KeyId(), instanceKeyID)
	}
	if err := v.Verify(&key.PublicKey, httpsig.RSA_SHA256); err != nil {
		t.Errorf("go-fed/httpsig refuses the GET of %s: %v", r.URL, err)
	}
}

// TestSignedGet: a GET through a Fetcher arrives signed as DESIGN §4 says
// (rsa-sha256 over "(request-target) host date accept", a User-Agent), and
// both verifiers accept it as it arrived on the wire.
func TestSignedGet(t *testing.T) {
	s := newServer(t, serveDoc("application/activity+json", `{"id":"x"}`))
	f := signedFetcher(t, s.Client(), Options{})
	if _, err := f.Get(context.Background(), s.URL+"/users/alice?page=1", ""); err != nil {
		t.Fatal(err)
	}
	r := s.requests()[0]
	sig := r.Header.Get("Signature")
	for _, want := range []string{`keyId="` + instanceKeyID + `"`, `algorithm="rsa-sha256"`, `headers="(request-target) host date accept"`} {
		if !strings.Contains(sig, want) {
			t.Errorf("Signature %q lacks %s", sig, want)
		}
	}
	if r.Header.Get("Accept") != signing.AcceptActivity || r.Header.Get("User-Agent") != "crowd-test" || r.Header.Get("Date") == "" {
		t.Errorf("headers %v", r.Header)
	}
	verifySigned(t, r)
	// The verifiers can say no: the same signature on another path fails.
	moved := r.Clone(context.Background())
	moved.URL.Path = "/users/bob"
	if v, err := httpsig.NewVerifier(moved); err != nil || v.Verify(&loadKey(t, "rsa-instance.pem").PublicKey, httpsig.RSA_SHA256) == nil {
		t.Error("go-fed/httpsig accepts the signature replayed to another path")
	}
}

// TestTransportSignsEachHopAfresh: a same-host redirect is signed again for
// its own path (a copied signature would cover the old request-target), and
// the caller's request is left unsigned, as http.RoundTripper requires.
func TestTransportSignsEachHopAfresh(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/@alice" {
			http.Redirect(w, r, "/users/alice", http.StatusMovedPermanently)
			return
		}
		serveDoc("application/activity+json", `{}`)(w, r)
	})
	tr := &Transport{Base: s.Client().Transport, Signer: signing.NewSigner(signing.SignerOptions{}),
		As: SignAs(Identity{KeyID: instanceKeyID, Key: loadKey(t, "rsa-instance.pem")})}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/@alice", nil)
	req.Header.Set("Accept", signing.AcceptActivity)
	resp, err := (&http.Client{Transport: tr, CheckRedirect: SameHost}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	seen := s.requests()
	if len(seen) != 2 || seen[1].URL.Path != "/users/alice" {
		t.Fatalf("requests %v", seen)
	}
	for _, r := range seen {
		verifySigned(t, r)
	}
	if req.Header.Get("Signature") != "" || req.Header.Get("Date") != "" {
		t.Errorf("the caller's request was changed: %v", req.Header)
	}
}

// TestTransportSignsOnlyWhatItShould specifies which requests are signed.
func TestTransportSignsOnlyWhatItShould(t *testing.T) {
	s := newServer(t, serveDoc("text/plain", "ok"))
	key := loadKey(t, "rsa-instance.pem")
	for _, tc := range []struct {
		name   string
		method string
		as     func(*http.Request) Identity
		signed bool
	}{
		// A GET with an identity: signed.
		{"GET as an actor", http.MethodGet, SignAs(Identity{KeyID: instanceKeyID, Key: key}), true},
		// HEAD is a GET without a body: signed alike.
		{"HEAD as an actor", http.MethodHead, SignAs(Identity{KeyID: instanceKeyID, Key: key}), true},
		// A POST's signature covers its Digest, which only its sender writes.
		{"POST", http.MethodPost, SignAs(Identity{KeyID: instanceKeyID, Key: key}), false},
		// No identity for this request (a zero Identity): sent unsigned.
		{"zero identity", http.MethodGet, SignAs(Identity{}), false},
		// No chooser at all.
		{"no As", http.MethodGet, nil, false},
	} {
		tr := &Transport{Signer: signing.NewSigner(signing.SignerOptions{}), As: tc.as}
		req, _ := http.NewRequest(tc.method, s.URL+"/"+strings.ReplaceAll(tc.name, " ", "-"), nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		seen := s.requests()
		if got := seen[len(seen)-1].Header.Get("Signature") != ""; got != tc.signed {
			t.Errorf("%s: signed %v, want %v", tc.name, got, tc.signed)
		}
	}
	// A key that cannot sign: the request is not sent.
	before := len(s.requests())
	tr := &Transport{Signer: signing.NewSigner(signing.SignerOptions{}), As: SignAs(Identity{KeyID: `bad"id`, Key: key})}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/x", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, signing.ErrMalformedSignature) {
		t.Errorf("unsignable GET: err = %v, want ErrMalformedSignature", err)
	}
	if n := len(s.requests()) - before; n != 0 {
		t.Errorf("an unsignable GET was sent %d times", n)
	}
}
