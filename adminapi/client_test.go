package adminapi_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/crowdtest"
)

// crowd is the admin server as `crowd serve` wires it (crowdtest), listeners
// on 127.0.0.1:0.
type crowd struct{ *crowdtest.Crowd }

// newCrowd runs one; start says whether its listeners are started (an
// unstarted one is not ready, and is reached through its handler).
func newCrowd(t *testing.T, start bool) crowd {
	return crowd{crowdtest.Start(t, crowdtest.Options{Unstarted: !start})}
}

// client is a Client of the started crowd's admin API.
func (c crowd) client(t *testing.T) *adminapi.Client {
	t.Helper()
	cl, err := adminapi.New("http://"+c.Admin, adminapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

const (
	alice = "https://flood1.test/users/alice"
	bob   = "https://flood2.test/users/bob"
)

// TestRoutesAreServed: the admin server serves exactly the Route constants
// adminapi declares, so a route cannot be added on one side only.
func TestRoutesAreServed(t *testing.T) {
	served := newCrowd(t, false).Pasture.AdminRoutes()
	table := declaredRoutes(t)
	slices.Sort(table)
	if !slices.Equal(served, table) {
		t.Errorf("the admin server serves\n%q\nadminapi declares\n%q", served, table)
	}
}

// declaredRoutes is the value of every constant of type Route in
// adminapi's source (this directory, tests aside).
func declaredRoutes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "Route" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a Route that is not a string literal", fset.Position(v.Pos()))
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					routes = append(routes, s)
				}
			}
		}
	}
	if len(routes) == 0 {
		t.Fatal("no Route constant found")
	}
	return routes
}

// TestClientRoundTrips: every method of the Client against the real admin
// server, in order (a send first, so the log, the graph and the totals
// have something to show). Each row checks the answer is the route's
// document, decoded.
func TestClientRoundTrips(t *testing.T) {
	c := newCrowd(t, true).client(t)
	ctx := context.Background()
	rows := []struct {
		name string
		call func() error
	}{
		// Liveness and readiness: nil, not an error.
		{"health", func() error { return c.Health(ctx) }},
		{"ready", func() error { return c.Ready(ctx) }},
		// The Prometheus exposition, as text.
		{"metrics", func() error {
			return want(c.Metrics(ctx))(func(b []byte) bool { return strings.Contains(string(b), "go_goroutines") })
		}},
		// The CA a SUT must trust, PEM.
		{"CA", func() error {
			return want(c.CA(ctx))(func(b []byte) bool { return strings.HasPrefix(string(b), "-----BEGIN CERTIFICATE-----") })
		}},
		// The world: both origins, their actors and key fingerprints.
		{"world", func() error {
			return want(c.World(ctx))(func(w adminapi.WorldInfo) bool {
				return len(w.Origins) == 2 && w.Origins[0].Actors[0].ID == alice && len(w.Origins[0].Actors[0].KeySHA256) == 64
			})
		}},
		// A write: JSON through the admin guard, the Follow signed and
		// delivered in-process, bob's inbox answering 2xx.
		{"send", func() error {
			return want(c.Send(ctx, adminapi.SendRequest{From: "alice@flood1.test", Type: "Follow", To: "acct:bob@flood2.test"}))(
				func(r adminapi.SendResult) bool {
					return r.Status/100 == 2 && strings.Contains(string(r.Activity), `"Follow"`)
				})
		}},
		// Alice's following shows the Follow just sent.
		{"follows of one actor", func() error {
			return want(c.Follows(ctx, "alice@flood1.test"))(func(fi []adminapi.FollowsInfo) bool {
				return len(fi) == 1 && len(fi[0].Following) == 1 && fi[0].Following[0].Remote == bob
			})
		}},
		// Every actor with relations: alice (following) and bob (follower).
		{"follows of all", func() error {
			return want(c.Follows(ctx, ""))(func(fi []adminapi.FollowsInfo) bool { return len(fi) == 2 })
		}},
		// A Follow another process sent is registered as pending.
		{"register following", func() error {
			return want(c.RegisterFollowing(ctx, adminapi.FollowingRequest{Local: "bob@flood2.test",
				Remote: "https://sut.example/users/x", FollowID: "https://sut.example/follows/1"}))(func(r adminapi.Relation) bool {
				return r.State == adminapi.StatePending && r.Local == bob
			})
		}},
		// A lookup of a crowd actor finds its document and no problem.
		{"lookup", func() error {
			return want(c.Lookup(ctx, adminapi.LookupQuery{Resource: "acct:bob@flood2.test"}))(func(r adminapi.LookupResult) bool {
				return r.URL == bob && r.Status == http.StatusOK && len(r.Problems) == 0 && r.WebFinger != nil
			})
		}},
		// The log, filtered: the Follow out and in.
		{"activities", func() error {
			return want(c.Activities(ctx, adminapi.ActivitiesQuery{Filter: adminapi.Filter{Type: "Follow"}}))(func(es []adminapi.Entry) bool {
				return len(es) == 2 && es[0].Type == "Follow" && es[0].Seq < es[1].Seq
			})
		}},
		// A limit keeps the newest.
		{"activities limited", func() error {
			return want(c.Activities(ctx, adminapi.ActivitiesQuery{Limit: 1}))(func(es []adminapi.Entry) bool { return len(es) == 1 })
		}},
		// Every entry the server keeps.
		{"activities all", func() error {
			return want(c.Activities(ctx, adminapi.ActivitiesQuery{Limit: adminapi.AllEntries}))(func(es []adminapi.Entry) bool { return len(es) >= 2 })
		}},
		// The totals count what the log holds, up to its last seq.
		{"totals", func() error {
			return want(c.Totals(ctx))(func(r adminapi.TotalsReply) bool { return r.Entries >= 2 && r.Seq >= 2 })
		}},
		// The queue, a JSON array (empty or not: the Accept may be in it).
		{"deliveries", func() error {
			_, err := c.Deliveries(ctx)
			return err
		}},
		// The live stream's backlog brings the Follows already logged.
		{"stream", func() error {
			// Bounded: should the backlog be empty, the stream would wait for
			// a Follow that never comes.
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			s, err := c.Stream(sctx, adminapi.StreamQuery{Filter: adminapi.Filter{Type: "Follow"}, Backlog: 5})
			if err != nil {
				return err
			}
			defer s.Close()
			var got adminapi.Entry
			stop := errors.New("first event read")
			if err := s.Read(func(ev adminapi.Event) error { got = ev.Entry; return stop }); err != stop {
				return fmt.Errorf("read: %v", err)
			}
			if got.Type != "Follow" {
				return fmt.Errorf("first event %+v", got)
			}
			return nil
		}},
	}
	for _, r := range rows {
		if err := r.call(); err != nil {
			t.Errorf("%s: %v", r.name, err)
		}
	}
}

// want checks a method's answer: its error, then ok on its value.
func want[T any](v T, err error) func(ok func(T) bool) error {
	return func(ok func(T) bool) error {
		if err != nil {
			return err
		}
		if !ok(v) {
			return fmt.Errorf("unexpected answer %+v", v)
		}
		return nil
	}
}

// TestClientErrors: every way a call fails comes back typed: the API's
// refusals as *Error with the status and the server's reason, no server as
// *UnreachableError, something else answering as *Error without a reason,
// a 2xx that is not the document as ErrBadAnswer.
func TestClientErrors(t *testing.T) {
	cr := newCrowd(t, true)
	c := cr.client(t)
	ctx := context.Background()

	// A client that dials the crowd but names it as a web page's
	// rebinding would: the guard's 421.
	rebound, err := adminapi.New("http://evil.example:9180", adminapi.Options{HTTP: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, cr.Admin)
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	// An admin server whose listeners are not up: readiness is 503, text.
	unstarted := httptest.NewServer(newCrowd(t, false).Pasture.AdminHandler())
	t.Cleanup(unstarted.Close)
	notReady := clientOf(t, unstarted.URL)
	// Another program: 404 as text, and a 200 that is not JSON.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == adminapi.RouteWorld.Path() {
			io.WriteString(w, "<html>hello</html>")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(other.Close)
	stranger := clientOf(t, other.URL)
	// Nothing listens here.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := clientOf(t, "http://"+l.Addr().String())
	l.Close()

	for _, tt := range []struct {
		name   string
		call   func() error
		status int    // of the *Error; 0: not an *Error
		reason string // in the *Error's Reason ("" for none), or in the message
		is     error  // the error wraps this, when set
	}{
		// An unknown sender: the API's 404 and its reason.
		{"unknown sender", func() error {
			_, err := c.Send(ctx, adminapi.SendRequest{From: "zed@flood1.test", Type: "Follow", To: bob})
			return err
		}, http.StatusNotFound, "no such crowd actor", nil},
		// A resource that is neither acct nor URL: 400.
		{"bad lookup", func() error { _, err := c.Lookup(ctx, adminapi.LookupQuery{Resource: "nonsense"}); return err }, http.StatusBadRequest, "nonsense", nil},
		// Follows of an unknown actor: 404.
		{"unknown actor's follows", func() error { _, err := c.Follows(ctx, "nobody@flood1.test"); return err },
			http.StatusNotFound, "nobody", nil},
		// A registration without a Follow id: 400.
		{"registration without follow id", func() error {
			_, err := c.RegisterFollowing(ctx, adminapi.FollowingRequest{Local: "alice@flood1.test", Remote: bob})
			return err
		}, http.StatusBadRequest, "follow_id", nil},
		// A foreign Host: the guard's 421, in the API's JSON.
		{"foreign host", func() error { _, err := rebound.World(ctx); return err },
			http.StatusMisdirectedRequest, "is not a name of this admin API", nil},
		// Not ready: 503, its text reason in the message.
		{"not ready", func() error { return notReady.Ready(ctx) }, http.StatusServiceUnavailable, "", nil},
		// Another program's 404: not the admin API.
		{"not the admin API", func() error { _, err := stranger.Totals(ctx); return err },
			http.StatusNotFound, "", nil},
		// A 200 that is not the document.
		{"bad answer", func() error { _, err := stranger.World(ctx); return err }, 0, "", adminapi.ErrBadAnswer},
		// Nothing answers.
		{"unreachable", func() error { return down.Health(ctx) }, 0, "no crowd serve answers at", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatal("no error")
			}
			var ae *adminapi.Error
			isAPI := errors.As(err, &ae)
			switch {
			case tt.status != 0 && (!isAPI || ae.Status != tt.status):
				t.Fatalf("error %v (%T), want an *Error with status %d", err, err, tt.status)
			case tt.status != 0 && !strings.Contains(ae.Reason, tt.reason):
				t.Errorf("reason %q, want it to contain %q", ae.Reason, tt.reason)
			case tt.status != 0 && tt.reason == "" && ae.Reason != "":
				t.Errorf("reason %q from an answer that is not the API's JSON error", ae.Reason)
			case tt.status == 0 && isAPI:
				t.Errorf("error %v is an *Error", err)
			case !strings.Contains(err.Error(), tt.reason):
				t.Errorf("message %q, want it to contain %q", err, tt.reason)
			case tt.is != nil && !errors.Is(err, tt.is):
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
		})
	}
	// Unreachable is typed too.
	var ue *adminapi.UnreachableError
	if err := down.Health(ctx); !errors.As(err, &ue) {
		t.Errorf("unreachable: %v (%T), want *UnreachableError", err, err)
	}
}

func clientOf(t *testing.T, base string) *adminapi.Client {
	t.Helper()
	c, err := adminapi.New(base, adminapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNew: the base is an http(s) URL of the API's root; the error says
// what is wrong.
func TestNew(t *testing.T) {
	for _, tt := range []struct {
		base string
		want string // Base(), or "" for an error
	}{
		{"http://127.0.0.1:9180", "http://127.0.0.1:9180"}, // the usual form
		{"http://crowd:9180/", "http://crowd:9180"},        // a trailing slash is the root
		{"https://[::1]:9180", "https://[::1]:9180"},       // IPv6, TLS
		{"127.0.0.1:9180", ""},                             // no scheme
		{"ftp://127.0.0.1:21", ""},                         // not http
		{"http://127.0.0.1:9180/api", ""},                  // a path
		{"http://127.0.0.1:9180/?x=1", ""},                 // a query
		{"http:///x", ""},                                  // no host
		{"http://user:pw@127.0.0.1:9180", ""},              // credentials the API never takes
	} {
		c, err := adminapi.New(tt.base, adminapi.Options{})
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("New(%q) = %s, want an error", tt.base, c.Base())
		case tt.want != "" && (err != nil || c.Base() != tt.want):
			t.Errorf("New(%q) = %v, %v; want %s", tt.base, c, err, tt.want)
		}
	}
}

// TestQueries: the queries encode as the server parses them, and the
// server's parse refuses what is not a count.
func TestQueries(t *testing.T) {
	f := adminapi.Filter{Actor: "alice@flood1.test", Type: "Follow,Like", Direction: adminapi.DirIn}
	for _, q := range []adminapi.ActivitiesQuery{
		{Filter: f, Limit: 7},        // a limit
		{Filter: f},                  // the default limit
		{Limit: adminapi.AllEntries}, // everything kept
	} {
		got, err := adminapi.ParseActivitiesQuery(q.Values())
		if q.Limit == 0 {
			q.Limit = adminapi.DefaultLimit
		}
		if err != nil || got != q {
			t.Errorf("activities %+v → %q → %+v, %v", q, q.Values().Encode(), got, err)
		}
	}
	s := adminapi.StreamQuery{Filter: f, Backlog: 3}
	if got, err := adminapi.ParseStreamQuery(s.Values()); err != nil || got != s {
		t.Errorf("stream %+v → %+v, %v", s, got, err)
	}
	for _, l := range []adminapi.LookupQuery{
		{Resource: "acct:bob@sut.test"},                                   // by acct, public hosts refused
		{Resource: "https://sut.test/users/bob", AllowPublicTarget: true}, // by URL, public hosts allowed
	} {
		if got, err := adminapi.ParseLookupQuery(l.Values()); err != nil || got != l {
			t.Errorf("lookup %+v → %q → %+v, %v", l, l.Values().Encode(), got, err)
		}
	}
	if _, err := adminapi.ParseLookupQuery(url.Values{adminapi.ParamAllowPublicTarget: {"maybe"}}); err == nil || !strings.Contains(err.Error(), "allow_public_target") {
		t.Errorf("allow_public_target=maybe: %v, want an error naming it", err)
	}
	for _, bad := range []string{"limit=x", "limit=-1", "limit=1e3"} {
		v, _ := url.ParseQuery(bad)
		if _, err := adminapi.ParseActivitiesQuery(v); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Errorf("%s: %v, want an error naming limit", bad, err)
		}
	}
	if _, err := adminapi.ParseStreamQuery(url.Values{adminapi.ParamBacklog: {"many"}}); err == nil {
		t.Error("backlog=many accepted")
	}
	// A direction that is neither in nor out would match nothing: refused
	// by both routes, naming the parameter.
	for _, bad := range []string{"sideways", "IN", " out"} {
		v := url.Values{adminapi.ParamDirection: {bad}}
		if _, err := adminapi.ParseActivitiesQuery(v); err == nil || !strings.Contains(err.Error(), "direction=") {
			t.Errorf("activities direction=%q: %v, want an error naming direction", bad, err)
		}
		if _, err := adminapi.ParseStreamQuery(v); err == nil || !strings.Contains(err.Error(), "direction=") {
			t.Errorf("stream direction=%q: %v, want an error naming direction", bad, err)
		}
	}
}

// FuzzQueries: whatever query the server parses, encoding it again parses
// to the same value.
func FuzzQueries(f *testing.F) {
	f.Add("limit=3&actor=a@b&type=Follow&direction=in&backlog=2")
	f.Add("limit=0")
	f.Add("backlog=&type=%00")
	f.Add("resource=acct:a@b&allow_public_target=1")
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		if q, err := adminapi.ParseActivitiesQuery(v); err == nil {
			if again, err := adminapi.ParseActivitiesQuery(q.Values()); err != nil || again != q {
				t.Errorf("activities %q → %+v → %+v, %v", raw, q, again, err)
			}
		}
		if q, err := adminapi.ParseStreamQuery(v); err == nil {
			if again, err := adminapi.ParseStreamQuery(q.Values()); err != nil || again != q {
				t.Errorf("stream %q → %+v → %+v, %v", raw, q, again, err)
			}
		}
		if q, err := adminapi.ParseLookupQuery(v); err == nil {
			if again, err := adminapi.ParseLookupQuery(q.Values()); err != nil || again != q {
				t.Errorf("lookup %q → %+v → %+v, %v", raw, q, again, err)
			}
		}
	})
}
