package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/originaddr"
	"github.com/crowdfed/crowd/internal/testkeys"
)

// addrSUT is a test SUT written here, a real HTTPS server at addrSUTIP:443 in a namespace of its
// own, linked to the crowd's (the crowd's DNS names it sut.test): one persona, load0, whose inboxes log the remote address and
// the signing origin of every request, and answer 429 past a per-address limit, as
// GoToSocial's rate limit does (N requests per window per client address). It verifies no
// signature (other tests do that with real peers): it is here to see where requests come from.
type addrSUT struct {
	key    *testKey
	limit  int           // requests per window per remote address; 0: no limit
	window time.Duration // the limit's window

	mu       sync.Mutex
	windows  map[string]*addrWindow // remote address → its current window
	requests []sutRequest
}

type testKey struct {
	id, pem string
	signer  any
}

type addrWindow struct {
	start time.Time
	n     int
}

// sutRequest is one request the SUT received.
type sutRequest struct {
	Remote string // the client's address, no port
	Signer string // the host of the keyId it was signed with ("" unsigned)
	Method string
	Path   string
	Type   string // the activity's type, for POSTs
	Status int
}

const sutBase = "https://sut.test"

// startAddrSUT serves the SUT in ns at ip:443 with the certificate `crowd ca issue sut.test`
// wrote to certs.
func startAddrSUT(t *testing.T, ns *Netns, ip, certs string) *addrSUT {
	t.Helper()
	root := ModuleRoot(t)
	k := testkeys.RSA(t, filepath.Join(root, "apclient", "testdata", "rsa-alice.pem"))
	s := &addrSUT{windows: map[string]*addrWindow{},
		key: &testKey{id: sutBase + "/users/load0#main-key", pem: testkeys.PublicPEM(t, &k.PublicKey), signer: k}}
	cert, err := tls.LoadX509KeyPair(filepath.Join(certs, "sut.test.crt"), filepath.Join(certs, "sut.test.key"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ns.Listen("tcp", net.JoinHostPort(ip, "443"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *addrSUT) handler() http.Handler {
	mux := http.NewServeMux()
	actor := sutBase + "/users/load0"
	mux.HandleFunc("GET /.well-known/webfinger", func(w http.ResponseWriter, r *http.Request) {
		s.log(r, "", http.StatusOK)
		w.Header().Set("Content-Type", "application/jrd+json")
		json.NewEncoder(w).Encode(map[string]any{"subject": "acct:load0@sut.test", "links": []map[string]string{
			{"rel": "self", "type": "application/activity+json", "href": actor}}})
	})
	mux.HandleFunc("GET /users/load0", func(w http.ResponseWriter, r *http.Request) {
		s.log(r, "", http.StatusOK)
		w.Header().Set("Content-Type", "application/activity+json")
		json.NewEncoder(w).Encode(map[string]any{
			"@context": []string{"https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"},
			"id":       actor, "type": "Person", "preferredUsername": "load0",
			"inbox": actor + "/inbox", "outbox": actor + "/outbox", "followers": actor + "/followers",
			"following": actor + "/following", "endpoints": map[string]string{"sharedInbox": sutBase + "/inbox"},
			"publicKey": map[string]string{"id": s.key.id, "owner": actor, "publicKeyPem": s.key.pem},
		})
	})
	mux.HandleFunc("GET /users/load0/outbox", func(w http.ResponseWriter, r *http.Request) {
		s.log(r, "", http.StatusOK)
		w.Header().Set("Content-Type", "application/activity+json")
		json.NewEncoder(w).Encode(map[string]any{"@context": "https://www.w3.org/ns/activitystreams",
			"id": actor + "/outbox", "type": "OrderedCollection", "totalItems": 0, "orderedItems": []string{}})
	})
	inbox := func(w http.ResponseWriter, r *http.Request) {
		var act struct {
			Type string `json:"type"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		json.Unmarshal(body, &act)
		status := http.StatusAccepted
		if !s.allow(remoteIP(r)) {
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", fmt.Sprint(int(s.window.Seconds())))
		}
		s.log(r, act.Type, status)
		w.WriteHeader(status)
	}
	mux.HandleFunc("POST /inbox", inbox)
	mux.HandleFunc("POST /users/load0/inbox", inbox)
	return mux
}

func remoteIP(r *http.Request) string {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	return host
}

// allow counts a request of remote in its fixed window and says whether it is within the limit.
func (s *addrSUT) allow(remote string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit == 0 {
		return true
	}
	now := time.Now()
	w := s.windows[remote]
	if w == nil || now.Sub(w.start) >= s.window {
		w = &addrWindow{start: now}
		s.windows[remote] = w
	}
	w.n++
	return w.n <= s.limit
}

func (s *addrSUT) log(r *http.Request, typ string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, sutRequest{Remote: remoteIP(r), Signer: originaddr.SignerHost(r.Header),
		Method: r.Method, Path: r.URL.Path, Type: typ, Status: status})
}

// reset forgets what was received and sets the per-address limit for what comes next.
func (s *addrSUT) reset(limit int, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit, s.window = limit, window
	s.windows = map[string]*addrWindow{}
	s.requests = nil
}

// received returns the requests so far that match keep.
func (s *addrSUT) received(keep func(sutRequest) bool) []sutRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sutRequest
	for _, r := range s.requests {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func isPost(r sutRequest) bool { return r.Method == http.MethodPost }
