//go:build !race

// The race detector slows RSA signing of the 10 000 key fetches tenfold;
// .ci/run runs this file without it.

package inbox

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/signing"
)

// TestBoundedUnderTenThousandActors floods the inbox with activities from
// 10 000 distinct remote actors (one server, one shared Ed25519 key, so
// signing stays cheap) whose inboxes are down: the key cache, the Accept
// queue and the in-memory activity log must stay at their bounds, and
// the heap must plateau once they are full. The follow graph itself grows,
// as it must: it is the state, not a cache.
func TestBoundedUnderTenThousandActors(t *testing.T) {
	const (
		actorsN    = 10000
		keyBound   = 200
		queueBound = 300
		ringBound  = 500
	)
	if os.Getenv("BOUNDED_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(pub)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{name}", func(w http.ResponseWriter, r *http.Request) {
		id := "https://" + remoteHost + "/users/" + r.PathValue("name")
		w.Header().Set("Content-Type", "application/activity+json")
		json.NewEncoder(w).Encode(map[string]any{
			"@context": []string{"https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"},
			"id":       id, "type": "Person", "inbox": id + "/inbox", "preferredUsername": r.PathValue("name"),
			"publicKey": map[string]string{"id": id + "#main-key", "owner": id, "publicKeyPem": pemKey},
		})
	})
	mux.HandleFunc("POST /users/{name}/inbox", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	})
	remote := httptest.NewTLSServer(mux)
	defer remote.Close()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, remote.Listener.Addr().String())
		},
		MaxIdleConnsPerHost: 8,
	}}

	state := t.TempDir()
	world := openWorld(t, state)
	defer world.Close()
	in, err := New(Config{World: world, Client: client, StateDir: state, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry(),
		KeyCacheSize: keyBound, Log: LogOptions{Ring: ringBound},
		Delivery: DeliveryConfig{Workers: 2, MaxPending: queueBound, MaxAttempts: 50, BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second, Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer in.Shutdown(context.Background())

	signer := signing.NewSigner(signing.SignerOptions{Algorithm: signing.Ed25519})
	h := addressed(world, in)
	statuses := map[int]int{}
	heapAt := map[int]uint64{}
	for i := range actorsN {
		actor := fmt.Sprintf("https://%s/users/u%d", remoteHost, i)
		var body []byte
		if i%2 == 0 {
			body = followJSON(actor+"/follows/1", actor, "https://flood1.test/users/alice")
		} else {
			body = fmt.Appendf(nil, `{"id":%q,"type":"Like","actor":%q,"object":"https://flood1.test/users/alice/notes/x"}`, actor+"/likes/1", actor)
		}
		req := httptest.NewRequest(http.MethodPost, "https://flood1.test/inbox", nil)
		req.Host = "flood1.test"
		if err := signer.SignPost(req, body, actor+"#main-key", priv); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		statuses[rec.Code]++
		if n := i + 1; n%2500 == 0 {
			if got := in.Keys().Len(); got > keyBound {
				t.Fatalf("after %d actors the key cache holds %d keys, bound %d", n, got, keyBound)
			}
			if got := len(in.Pending()); got > queueBound {
				t.Fatalf("after %d actors the queue holds %d deliveries, bound %d", n, got, queueBound)
			}
			if got := len(in.Log().Latest(0, Filter{})); got > ringBound {
				t.Fatalf("after %d actors the log ring holds %d entries, bound %d", n, got, ringBound)
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heapAt[n] = ms.HeapAlloc
		}
	}
	if p := os.Getenv("BOUNDED_HEAP_PROFILE"); p != "" {
		f, _ := os.Create(p)
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	t.Logf("answers %v; heap at 2500/5000/7500/10000 actors: %v", statuses, heapAt)
	// Every Like is taken; Follows are taken until the Accept queue is
	// full, then refused with 503 and Retry-After rather than queued.
	if statuses[http.StatusAccepted] < actorsN/2 || statuses[http.StatusServiceUnavailable] == 0 {
		t.Errorf("want every Like 202 and the overflowing Follows 503: %v", statuses)
	}
	// Past the first quarter the caches are full: what grows after that is
	// the follow graph's few hundred followers (bounded by the queue, since
	// a refused Follow is not recorded) and noise, not the flood.
	if grow := float64(heapAt[actorsN]) / float64(heapAt[actorsN/4]); grow > 1.5 {
		t.Errorf("heap grew %.2fx from 2 500 to 10 000 actors: %v", grow, heapAt)
	}
}
