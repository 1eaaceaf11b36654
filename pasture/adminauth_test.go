package pasture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/inbox"
)

// TestAdminOffLoopback: which --admin addresses need a token.
func TestAdminOffLoopback(t *testing.T) {
	for _, c := range []struct {
		addr string
		off  bool
	}{
		// Loopback IP literals: only this machine reaches them.
		{"127.0.0.1:9180", false},
		{"127.9.8.7:9180", false},
		{"[::1]:9180", false},
		// Wildcards listen on every address of the machine.
		{":9180", true},
		{"0.0.0.0:9180", true},
		{"[::]:9180", true},
		// An address of another interface.
		{"10.0.0.5:9180", true},
		// A name could resolve to anything, localhost too.
		{"localhost:9180", true},
		{"crowd.internal:9180", true},
		// No port: the host alone decides.
		{"127.0.0.1", false},
	} {
		if got := AdminOffLoopback(c.addr); got != c.off {
			t.Errorf("AdminOffLoopback(%q) = %v, want %v", c.addr, got, c.off)
		}
	}
}

// authToken is the admin token of authCrowd.
const authToken = "auth-test-token-0123456789abcdef"

// authCrowd is a pasture with the crowd's inbox whose --admin is off
// loopback (a name), its admin API served on a real loopback listener, and
// a sink: a server standing for the SUT, which counts what reaches it.
type authCrowd struct {
	p        *Pasture
	in       *inbox.Inbox
	admin    *httptest.Server
	sink     *httptest.Server
	sinkHits atomic.Int64
}

func startAuthCrowd(t *testing.T, adminAddr, token string) *authCrowd {
	t.Helper()
	ac := &authCrowd{}
	ac.sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ac.sinkHits.Add(1)
		w.Header().Set("Content-Type", "application/activity+json")
		fmt.Fprintf(w, `{"id":"%[1]s/users/sut","type":"Person","preferredUsername":"sut","inbox":"%[1]s/inbox"}`, ac.sink.URL)
	}))
	t.Cleanup(ac.sink.Close)
	world := testWorld(t)
	in, err := inbox.New(inbox.Config{World: world, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry(),
		Client: &http.Client{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Shutdown(context.Background()) })
	ac.in = in
	ac.p = testPasture(t, Config{World: world, Version: "test", AdminAddr: adminAddr, AdminToken: token,
		Inbox: in, Admin: in.AdminRoutes})
	ac.admin = httptest.NewServer(ac.p.AdminHandler())
	t.Cleanup(ac.admin.Close)
	return ac
}

// state is what a request that was let through could have changed: the
// sink's hits, the activity log, the follow graph, the weather.
func (ac *authCrowd) state() string {
	followers, following := ac.p.cfg.World.Graph.Counts("https://flood1.test/users/alice")
	return fmt.Sprintf("sink %d, log %+v, alice %d/%d, weather %q",
		ac.sinkHits.Load(), ac.in.Log().Totals(), followers, following, ac.p.WeatherInfo().Spec)
}

// routeBody is a body that does something on route: a send, a Follow
// registered, a weather set; other routes get an empty object.
func (ac *authCrowd) routeBody(route string) string {
	switch route {
	case string(adminapi.RouteSend):
		return `{"from":"alice@flood1.test","type":"Follow","to":"` + ac.sink.URL + `/users/sut"}`
	case string(adminapi.RouteFollowing):
		return `{"local":"alice@flood1.test","remote":"` + ac.sink.URL + `/users/sut","follow_id":"https://flood1.test/follows/t"}`
	case string(adminapi.RouteWeatherSet):
		return `{"spec":"down=flood2.test"}`
	}
	return "{}"
}

// call sends route with creds and returns the status, the challenge and
// the body's start; it stops reading at the headers (a stream never ends).
func (ac *authCrowd) call(t *testing.T, route string, creds func(*http.Request)) (int, string, string) {
	t.Helper()
	method, path, _ := strings.Cut(route, " ")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, ac.admin.URL+path, strings.NewReader(ac.routeBody(route)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	creds(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", route, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 400 {
		return resp.StatusCode, "", "" // a stream's body never ends
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// TestAdminTokenOnEveryRoute: off loopback, every route the router serves
// (enumerated from it, so a new route cannot escape) but the four open ones
// and the login link refuses a request without the token or with a wrong
// one, 401 with a Bearer challenge, and does nothing: no request reaches
// the sink, the log, the follow graph and the weather stay as they were.
// The token and the page's session cookie are let through, and then the
// same requests do reach the sink and change the crowd.
func TestAdminTokenOnEveryRoute(t *testing.T) {
	ac := startAuthCrowd(t, "crowd.internal:9180", authToken)
	open := map[string]bool{string(adminapi.RouteHealth): true, string(adminapi.RouteReady): true,
		string(adminapi.RouteMetrics): true, string(adminapi.RouteCA): true, string(adminapi.RouteLogin): true}
	routes := ac.p.AdminRoutes()
	before := ac.state()
	for _, c := range []struct {
		name    string
		creds   func(*http.Request)
		invalid bool // a token was sent: the challenge says it is invalid
	}{
		// A client that sends nothing: the SUT, another container.
		{"no token", func(*http.Request) {}, false},
		// A token, but not this crowd's.
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+authToken+"x") }, true},
		// The token under another scheme is no token.
		{"basic scheme", func(r *http.Request) { r.SetBasicAuth("crowd", authToken) }, false},
		// A forged session cookie.
		{"wrong cookie", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: ac.p.auth.cookie, Value: authToken}) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, route := range routes {
				status, challenge, body := ac.call(t, route, c.creds)
				if open[route] {
					if status == http.StatusUnauthorized && route != string(adminapi.RouteLogin) {
						t.Errorf("%s, an open route: 401 %s", route, body)
					}
					continue
				}
				if status != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Bearer ") ||
					strings.Contains(challenge, "invalid_token") != c.invalid || !strings.Contains(body, "Authorization: Bearer") {
					t.Errorf("%s: %d, WWW-Authenticate %q, %q; want 401, a Bearer challenge and the reason", route, status, challenge, body)
				}
			}
			if after := ac.state(); after != before {
				t.Errorf("refused requests changed the crowd:\n before %s\n after  %s", before, after)
			}
		})
	}
	for _, c := range []struct {
		name  string
		creds func(*http.Request)
	}{
		// The CLI's way.
		{"token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+authToken) }},
		// The admin page's way, after the login link.
		{"cookie", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: ac.p.auth.cookie, Value: ac.p.auth.session}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, route := range routes {
				if route == string(adminapi.RouteLogin) {
					continue // it takes a code, not a token (TestAdminLoginLink)
				}
				if status, _, body := ac.call(t, route, c.creds); status == http.StatusUnauthorized {
					t.Errorf("%s with the %s: 401 %s", route, c.name, body)
				}
			}
		})
	}
	if ac.sinkHits.Load() == 0 || ac.state() == before {
		t.Errorf("the requests let through did nothing (%s): the refusals above prove nothing", ac.state())
	}
}

// TestAdminLoginLink: the login link's code works once; it sets an
// HttpOnly, SameSite=Strict cookie and sends the browser to the page, whose
// fetches the cookie then authenticates; a used or unknown code is 401.
// The browser guards still hold for a page elsewhere with the cookie.
func TestAdminLoginLink(t *testing.T) {
	ac := startAuthCrowd(t, "0.0.0.0:9180", authToken)
	code := ac.p.auth.loginCode()
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 30 * time.Second}
	}
	first := browser()
	resp, err := first.Get(ac.admin.URL + "/login?once=" + code)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/" || !strings.Contains(string(page), "<html") {
		t.Fatalf("the login link led to %d %s, want the page", resp.StatusCode, resp.Request.URL)
	}
	if sc := resp.Request.Response.Header.Get("Set-Cookie"); !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") ||
		strings.Contains(sc, authToken) {
		t.Errorf("the session cookie %q is not HttpOnly and SameSite=Strict, or holds the token", sc)
	}
	for _, c := range []struct {
		name   string
		client *http.Client
		method string
		url    string
		origin string
		status int
	}{
		// The page's own fetches, with the cookie.
		{"the page reads the world", first, "GET", "/api/world", "", 200},
		{"the page sets the weather", first, "PUT", "/api/weather", ac.admin.URL, 200},
		// Another page in the same browser: the cookie does not pass the Origin guard.
		{"a foreign page writes", first, "PUT", "/api/weather", "http://evil.example", 403},
		// The code was used: another browser gets nothing with it.
		{"the link again", browser(), "GET", "/login?once=" + code, "", 401},
		{"a made-up code", browser(), "GET", "/login?once=0123456789abcdef0123456789abcdef", "", 401},
		{"no code", browser(), "GET", "/login", "", 401},
		// Without the cookie, the page's reads are refused.
		{"another browser reads", browser(), "GET", "/api/world", "", 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, ac.admin.URL+c.url, strings.NewReader(`{"spec":"down=flood2.test"}`))
			req.Header.Set("Content-Type", "application/json")
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			c.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("%d, want %d", resp.StatusCode, c.status)
			}
		})
	}
}

// TestAdminOnLoopbackUnchanged: on loopback no token is needed, one sent
// is accepted whatever it is, the login link only leads to the page, and
// no token file is made.
func TestAdminOnLoopbackUnchanged(t *testing.T) {
	ac := startAuthCrowd(t, "127.0.0.1:9180", "")
	for _, c := range []struct {
		name  string
		creds func(*http.Request)
	}{
		// The CLI as it always was.
		{"no token", func(*http.Request) {}},
		// A CLI that found a token somewhere (CROWD_ADMIN_TOKEN set for another crowd).
		{"some token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer whatever") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, route := range []string{string(adminapi.RouteWorld), string(adminapi.RouteWeatherSet), string(adminapi.RouteFollows)} {
				if status, _, body := ac.call(t, route, c.creds); status != 200 {
					t.Errorf("%s: %d %s, want 200", route, status, body)
				}
			}
		})
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(ac.admin.URL + "/login?once=x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("the login link on loopback: %d to %q, cookie %q; want 303 to / and no cookie", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Set-Cookie"))
	}
	if _, err := os.Stat(filepath.Join(ac.p.cfg.World.Config.StateDir, AdminTokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a token file on loopback: %v", err)
	}
	if ac.p.AdminToken() != "" {
		t.Errorf("AdminToken %q on loopback", ac.p.AdminToken())
	}
}

// TestAdminTokenFile: off loopback with no token given, the first start
// makes one into the state directory (0600, 32 random bytes as hex) and
// later starts reuse it; a given token is used and makes no file; a token
// too short or unfit for a header is refused.
func TestAdminTokenFile(t *testing.T) {
	world := testWorld(t)
	file := filepath.Join(world.Config.StateDir, AdminTokenFile)
	first := testPasture(t, Config{World: world, AdminAddr: ":9180"})
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || len(first.AdminToken()) != 64 {
		t.Errorf("the token file is mode %v, the token %d characters; want 0600 and 64", st.Mode().Perm(), len(first.AdminToken()))
	}
	if read, err := ReadAdminToken(world.Config.StateDir); err != nil || read != first.AdminToken() {
		t.Errorf("ReadAdminToken = %q, %v; want the token served", read, err)
	}
	if again := testPasture(t, Config{World: world, AdminAddr: ":9180"}); again.AdminToken() != first.AdminToken() {
		t.Error("a second start made another token")
	}
	other := testWorld(t)
	if p := testPasture(t, Config{World: other, AdminAddr: ":9180", AdminToken: authToken}); p.AdminToken() != authToken {
		t.Errorf("AdminToken %q, want the one given", p.AdminToken())
	}
	if _, err := os.Stat(filepath.Join(other.Config.StateDir, AdminTokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a given token made a token file too: %v", err)
	}
	for _, bad := range []string{"short", "with a space in it, long enough", "tab\tin-it-0123456789"} {
		if _, err := New(Config{World: other, AdminAddr: ":9180", AdminToken: bad}); !errors.Is(err, ErrAdminToken) {
			t.Errorf("token %q: %v, want ErrAdminToken", bad, err)
		}
	}
}

// The 401's body is the API's JSON error.
func TestAdminRefusalIsJSON(t *testing.T) {
	ac := startAuthCrowd(t, "crowd.internal:9180", authToken)
	_, _, body := ac.call(t, string(adminapi.RouteWorld), func(*http.Request) {})
	var refusal struct{ Error string }
	if json.Unmarshal([]byte(body), &refusal) != nil || refusal.Error == "" {
		t.Errorf("the refusal %q is not the API's JSON error", body)
	}
}

// TestAdminSessionCookiePerToken: a browser keeps cookies by host, not
// port, so two crowds on one machine name their session cookies apart
// (one name per token) and a login to one keeps the other's.
func TestAdminSessionCookiePerToken(t *testing.T) {
	a, b := newAdminAuth(authToken), newAdminAuth(authToken+"-other")
	if a.cookie == b.cookie || !strings.HasPrefix(a.cookie, sessionCookie) || a.session == b.session {
		t.Errorf("cookies %s=%s and %s=%s: want two names and two values", a.cookie, a.session, b.cookie, b.session)
	}
	if again := newAdminAuth(authToken); again.cookie != a.cookie || again.session != a.session {
		t.Error("the same token named its cookie otherwise: a restart would log the page out")
	}
}
