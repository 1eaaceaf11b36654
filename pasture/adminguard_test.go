package pasture

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

// guardToken is the admin token of guardedPasture, whose --admin is a name
// (off loopback): the browser guards hold with the token too.
const guardToken = "guard-test-token-0123456789"

// guardedPasture is a pasture whose admin API has, besides its own routes,
// adminapi.RouteSend, counting the requests that reach it.
func guardedPasture(t *testing.T, extraHosts ...string) (*Pasture, *atomic.Int64) {
	t.Helper()
	var sends atomic.Int64
	p := testPasture(t, Config{Version: "test", AdminAddr: "crowd.internal:9180", AdminHosts: extraHosts, AdminToken: guardToken,
		Admin: func(handle func(string, http.Handler)) {
			handle(string(adminapi.RouteSend), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sends.Add(1)
				w.Write([]byte("{}"))
			}))
		}})
	return p, &sends
}

// TestAdminRefusesForeignHostsOnEveryRoute: a name that is not the
// admin's own (DNS rebinding) gets 421 on every route the router serves,
// enumerated from the router itself so that a new route cannot escape,
// and on paths it does not serve.
func TestAdminRefusesForeignHostsOnEveryRoute(t *testing.T) {
	p, sends := guardedPasture(t)
	routes := p.AdminRoutes()
	if len(routes) < 7 {
		t.Fatalf("only %d admin routes: %v", len(routes), routes)
	}
	for _, route := range append(routes, "GET /no-such-path", "DELETE "+adminapi.RouteSend.Path()) {
		method, path, _ := strings.Cut(route, " ")
		req := httptest.NewRequest(method, "http://evil.example:9180"+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		p.AdminHandler().ServeHTTP(rec, req)
		if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(rec.Body.String(), `\"evil.example:9180\" is not a name of this admin API`) {
			t.Errorf("%s with Host evil.example: %d %q, want 421 naming the host", route, rec.Code, rec.Body)
		}
	}
	if n := sends.Load(); n != 0 {
		t.Errorf("%d requests reached /api/send", n)
	}
}

// TestAdminGuard: which requests the admin API serves, by Host, Origin,
// Sec-Fetch-Site and Content-Type.
func TestAdminGuard(t *testing.T) {
	host, _ := os.Hostname()
	p, sends := guardedPasture(t, "crowd")
	for _, c := range []struct {
		name   string
		method string
		host   string
		header map[string]string
		status int
	}{
		// The CLI clients: own host, JSON, no Origin.
		{"loopback IPv4", "POST", "127.0.0.1:9180", map[string]string{"Content-Type": "application/json"}, 200},
		{"loopback IPv6", "POST", "[::1]:9180", map[string]string{"Content-Type": "application/json"}, 200},
		{"localhost with charset", "POST", "localhost:9180", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200},
		// A port forward changes the port, not the name.
		{"forwarded port", "POST", "localhost:19999", map[string]string{"Content-Type": "application/json"}, 200},
		// Any IP literal: the pod IP of a kubelet probe; rebinding needs a name.
		{"pod IP", "GET", "10.1.2.3:9180", nil, 200},
		// The --admin host, the machine's name and --admin-host names.
		{"the --admin host", "GET", "crowd.internal:9180", nil, 200},
		{"the machine's name", "GET", host + ":9180", nil, 200},
		{"an --admin-host name", "GET", "CROWD:9180", nil, 200},
		// DNS rebinding: the attacker's name resolving to the admin.
		{"a foreign name", "GET", "evil.example:9180", nil, 421},
		{"a foreign name, POST", "POST", "evil.example:9180", map[string]string{"Content-Type": "application/json"}, 421},
		// The admin page's own origin may post.
		{"same origin", "POST", "127.0.0.1:9180", map[string]string{"Origin": "http://127.0.0.1:9180", "Content-Type": "application/json"}, 200},
		// A page elsewhere may not, JSON or not.
		{"foreign Origin, simple POST", "POST", "127.0.0.1:9180", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403},
		{"foreign Origin, JSON", "POST", "127.0.0.1:9180", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, 403},
		{"another port of the same host", "POST", "127.0.0.1:9180", map[string]string{"Origin": "http://127.0.0.1:8080", "Content-Type": "application/json"}, 403},
		{"opaque origin", "POST", "127.0.0.1:9180", map[string]string{"Origin": "null", "Content-Type": "application/json"}, 403},
		// A browser request without Origin still says where it comes from.
		{"cross-site without Origin", "POST", "127.0.0.1:9180", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, 403},
		{"same-site without Origin", "POST", "127.0.0.1:9180", map[string]string{"Sec-Fetch-Site": "same-site", "Content-Type": "application/json"}, 403},
		{"same-origin without Origin", "POST", "127.0.0.1:9180", map[string]string{"Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}, 200},
		// Only JSON bodies change state.
		{"text/plain", "POST", "127.0.0.1:9180", map[string]string{"Content-Type": "text/plain"}, 403},
		{"form", "POST", "127.0.0.1:9180", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 403},
		{"no Content-Type", "POST", "127.0.0.1:9180", nil, 403},
		// Reading is not guarded by Origin: a cross-origin page cannot read the answer.
		{"cross-origin GET", "GET", "127.0.0.1:9180", map[string]string{"Origin": "http://evil.example"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := adminapi.RouteSend.Path()
			if c.method == "GET" {
				path = adminapi.RouteHealth.Path()
			}
			before := sends.Load()
			req := httptest.NewRequest(c.method, path, strings.NewReader(`{"from":"alice@flood1.test"}`))
			req.Host = c.host
			req.Header.Set("Authorization", "Bearer "+guardToken)
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			p.AdminHandler().ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("status %d %q, want %d", rec.Code, rec.Body, c.status)
			}
			var refusal struct{ Error string }
			if c.status != 200 && (json.Unmarshal(rec.Body.Bytes(), &refusal) != nil || refusal.Error == "") {
				t.Errorf("the refusal %q is not the admin API's JSON error", rec.Body)
			}
			if reached := sends.Load() - before; c.method == "POST" && (reached == 1) != (c.status == 200) {
				t.Errorf("%d requests reached /api/send, answered %d", reached, rec.Code)
			}
		})
	}
}

// TestAdminGuardLookupSends: a lookup is a GET that makes the crowd sign
// and fetch, to whatever host it names, so a web page elsewhere may not
// drive it (an <img> would do); the CLI, the admin page and a URL typed
// into the browser may. Other GETs only read.
func TestAdminGuardLookupSends(t *testing.T) {
	p, _ := guardedPasture(t, "crowd")
	for _, c := range []struct {
		name    string
		path    string
		header  map[string]string
		refused bool
	}{
		// A page elsewhere, by its Origin or its browser's Sec-Fetch-Site.
		{"foreign Origin", adminapi.RouteLookup.Path(), map[string]string{"Origin": "https://evil.example"}, true},
		{"cross-site", adminapi.RouteLookup.Path(), map[string]string{"Sec-Fetch-Site": "cross-site"}, true},
		{"same-site", adminapi.RouteLookup.Path(), map[string]string{"Sec-Fetch-Site": "same-site"}, true},
		// The CLI: no Origin, no Sec-Fetch-Site.
		{"the CLI", adminapi.RouteLookup.Path(), nil, false},
		// The admin page's own fetch, and a URL typed into the browser.
		{"same-origin", adminapi.RouteLookup.Path(), map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
		{"typed", adminapi.RouteLookup.Path(), map[string]string{"Sec-Fetch-Site": "none"}, false},
		// A GET that only reads: a page cannot read the answer anyway.
		{"a read, cross-site", adminapi.RouteWorld.Path(), map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// No resource: a lookup let through answers 400, before any fetch.
			req := httptest.NewRequest("GET", c.path, nil)
			req.Host = "127.0.0.1:9180"
			req.Header.Set("Authorization", "Bearer "+guardToken)
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			p.AdminHandler().ServeHTTP(rec, req)
			if refused := rec.Code == http.StatusForbidden; refused != c.refused {
				t.Errorf("status %d %q, want refused %v", rec.Code, rec.Body, c.refused)
			}
		})
	}
}

// A path the admin API does not serve is its JSON error, naming the routes it does serve.
func TestAdminNotFoundNamesItsRoutes(t *testing.T) {
	p, _ := guardedPasture(t)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9180/api/no-such-route", nil)
	req.Header.Set("Authorization", "Bearer "+guardToken)
	p.AdminHandler().ServeHTTP(rec, req)
	var refusal struct{ Error string }
	if rec.Code != http.StatusNotFound || json.Unmarshal(rec.Body.Bytes(), &refusal) != nil {
		t.Fatalf("%d %q, want 404 in the API's error shape", rec.Code, rec.Body)
	}
	if !strings.Contains(refusal.Error, "GET /api/no-such-route") || !strings.Contains(refusal.Error, string(adminapi.RouteWorld)) {
		t.Fatalf("the 404 %q names neither the request nor the routes", refusal.Error)
	}
}

// TestAdminErrorsAreJSON: the admin API's refusals are its error shape,
// {"error": reason}, whatever refuses: a method a path is not served by
// (naming the ones it is, in Allow too), and a query the route cannot
// read.
func TestAdminErrorsAreJSON(t *testing.T) {
	p, _ := guardedPasture(t)
	for _, c := range []struct {
		name, method, path string
		status             int
		say                string // in the error
		allow              string // the Allow header
	}{
		// A route served by GET, asked by DELETE.
		{"a method not served", http.MethodDelete, adminapi.RouteWorld.Path(), http.StatusMethodNotAllowed, "serves /api/world by GET, not DELETE", "GET"},
		// One served by three methods, asked by another.
		{"a method of none of three", http.MethodPatch, adminapi.RouteWeather.Path(), http.StatusMethodNotAllowed, "by DELETE, GET, PUT, not PATCH", "DELETE, GET, PUT"},
		// The world's paging, an offset below 0.
		{"a bad page", http.MethodGet, adminapi.RouteWorld.Path() + "?offset=-1", http.StatusBadRequest, "offset", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(c.method, "http://127.0.0.1:9180"+c.path, nil)
			req.Header.Set("Authorization", "Bearer "+guardToken)
			req.Header.Set("Content-Type", "application/json") // past the guard, which wants writes as JSON
			p.AdminHandler().ServeHTTP(rec, req)
			var refusal struct{ Error string }
			if rec.Code != c.status || json.Unmarshal(rec.Body.Bytes(), &refusal) != nil || !strings.Contains(refusal.Error, c.say) {
				t.Fatalf("%d %q, want %d in the API's error shape saying %q", rec.Code, rec.Body, c.status, c.say)
			}
			if got := rec.Header().Get("Allow"); got != c.allow {
				t.Errorf("Allow %q, want %q", got, c.allow)
			}
		})
	}
}
