package apclient

import (
	"context"
	"crypto/rsa"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/crowdfed/crowd/internal/testkeys"
	"github.com/crowdfed/crowd/signing"
)

// The crowd's instance actor, whose key signs the test GETs.
const instanceKeyID = "https://crowd.test/actor#main-key"

func loadKey(t testing.TB, name string) *rsa.PrivateKey {
	return testkeys.RSA(t, filepath.Join("testdata", name))
}

func pubPEM(t testing.TB, k *rsa.PrivateKey) string { return testkeys.PublicPEM(t, &k.PublicKey) }

// server is a real HTTP server that records every request it receives,
// as it arrived, before its handler answers.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newServer(t testing.TB, h http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Clone(context.Background()))
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests is what the server has received so far.
func (s *server) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

// dialAll is a client that reaches every host name at s, as the crowd's
// DNS makes every fake host reach its server. An https URL is spoken in
// plain HTTP on that connection, as if TLS were done.
func dialAll(s *server) *http.Client {
	addr := s.Listener.Addr().String()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: &http.Transport{DialContext: dial, DialTLSContext: dial}}
}

// signedFetcher is a Fetcher signing as the instance actor through c.
func signedFetcher(t testing.TB, c *http.Client, o Options) *Fetcher {
	o.Client = c
	o.Signer = signing.NewSigner(signing.SignerOptions{UserAgent: "crowd-test"})
	o.As = SignAs(Identity{KeyID: instanceKeyID, Key: loadKey(t, "rsa-instance.pem")})
	return New(o)
}

// serveDoc answers with body under the Content-Type ct.
func serveDoc(ct, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		fmt.Fprint(w, body)
	}
}
