package pasture

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/pasture/fetchback"
	"github.com/crowdfed/crowd/pasture/weather"
)

// A request's Host is looked up once, by the router, and what it found reaches every handler
// (the metrics, the 404 of an unknown host, the documents, the inbox with the path's
// recipient): the count of look-ups per request is one whatever the route.
func TestHostResolvedOncePerRequest(t *testing.T) {
	world := testWorld(t)
	in, err := inbox.New(inbox.Config{World: world, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Shutdown(context.Background()) })
	var lookups atomic.Int64
	lookup := func(host string) (*actors.Origin, bool) {
		lookups.Add(1)
		return world.Origin(host)
	}
	h, err := originRouter(world, lookup, "test", in, newHTTPMetrics(prometheus.NewRegistry(), world.Origins), fetchback.New(nil), &weather.HTTP{})
	if err != nil {
		t.Fatal(err)
	}
	like := `{"id":"https://sut.test/likes/1","type":"Like","actor":"https://sut.test/users/a","object":"https://flood1.test/users/alice"}`
	for _, c := range []struct {
		name, method, host, path string
		status                   int
		body                     string // substring
	}{
		// A document: the handler reads the origin the router found.
		{"actor document", http.MethodGet, "flood2.test", "/users/alice", 200, `"id": "https://flood2.test/users/alice"`},
		// Discovery: the JRD's origin is the one the router found.
		{"webfinger", http.MethodGet, "flood2.test", "/.well-known/webfinger?resource=acct:alice@flood2.test", 200, `"subject": "acct:alice@flood2.test"`},
		// Unknown hosts are refused by the router's one look-up.
		{"unknown host", http.MethodGet, "flood9.test", "/users/alice", 404, `no origin "flood9.test"`},
		// The inboxes get the recipient (an unsigned Like is refused only after it is found).
		{"personal inbox", http.MethodPost, "flood1.test", "/users/alice/inbox", 401, "no Signature header"},
		{"shared inbox", http.MethodPost, "flood2.test", "/inbox", 401, "no Signature header"},
		{"instance inbox", http.MethodPost, "flood1.test", "/actor/inbox", 401, "no Signature header"},
		// The path's name, as chi routed it, is the one the inbox looks for.
		{"no such actor", http.MethodPost, "flood1.test", "/users/nobody/inbox", 404, `no actor "nobody" on flood1.test`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "http://"+c.host+c.path, strings.NewReader(like))
			r.Header.Set("Content-Type", "application/activity+json")
			rec := httptest.NewRecorder()
			before := lookups.Load()
			h.ServeHTTP(rec, r)
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.body) {
				t.Fatalf("%d %q, want %d with %q", rec.Code, rec.Body, c.status, c.body)
			}
			if n := lookups.Load() - before; n != 1 {
				t.Fatalf("the Host was looked up %d times", n)
			}
		})
	}
}
