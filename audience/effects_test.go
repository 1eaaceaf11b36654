package audience

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// effectsSUT serves what the effect look-up reads, shaped as Mastodon's
// entities: load0's notifications (in two pages, linked as Mastodon links
// them), its followers, its one post and who favourited it (two pages);
// boosts answer 500. Only token "tok0" is load0's.
func effectsSUT(t *testing.T) *Client {
	t.Helper()
	acct := func(a string) map[string]any { return map[string]any{"id": "9", "username": a, "acct": a} }
	var srv *httptest.Server
	page := func(w http.ResponseWriter, r *http.Request, first, second any) {
		if r.URL.Query().Get("max_id") == "" {
			w.Header().Set("Link", `<`+srv.URL+r.URL.Path+`?max_id=5>; rel="next", <`+srv.URL+r.URL.Path+`?min_id=9>; rel="prev"`)
			_ = json.NewEncoder(w).Encode(first)
			return
		}
		_ = json.NewEncoder(w).Encode(second)
	}
	post := "https://sut.test/users/load0/statuses/1"
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok0" {
			http.Error(w, `{"error":"The access token is invalid"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/api/v1/accounts/verify_credentials":
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "1", "username": "load0", "acct": "load0"})
		case "/api/v1/notifications":
			page(w, r, []any{map[string]any{"id": "8", "type": "mention", "account": acct("bob@flood1.test"),
				"status": map[string]any{"id": "70", "uri": "https://flood1.test/users/bob/notes/x", "content": "<p>hi</p><p>crowdforgeryab</p>"}}},
				[]any{map[string]any{"id": "4", "type": "follow", "account": acct("carol@flood2.test")}})
		case "/api/v1/accounts/1/followers":
			_ = json.NewEncoder(w).Encode([]any{acct("carol@flood2.test")})
		case "/api/v1/accounts/1/statuses":
			_ = json.NewEncoder(w).Encode([]any{map[string]any{"id": "50", "uri": post, "content": "<p>post</p>"}})
		case "/api/v1/statuses/50/favourited_by":
			page(w, r, []any{acct("dave@flood1.test")}, []any{acct("leaver_0_z@flood1.test")})
		default:
			http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, srv.Client(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEffectLookup: each forgery is judged by where it would land: seen
// (and where) when it shows there, none when every place was read whole
// without it, no verdict when a place could not be read or the persona
// has no token.
func TestEffectLookup(t *testing.T) {
	l := EffectLookup{Client: effectsSUT(t), Tokens: map[string]string{"load0": "tok0"}}
	const post = "https://sut.test/users/load0/statuses/1"
	for _, tc := range []struct {
		name  string
		probe ForgeryProbe
		want  string // the effect; "-" for no verdict
		where string // part of where it was seen
	}{
		// A forged note kept: its marker in a mention's content.
		{"note kept", ForgeryProbe{Type: "Create", Persona: "load0@sut.test", Marker: "crowdforgeryab"}, record.EffectSeen, "the notifications of load0@sut.test"},
		// A forged note dropped (or fetched authentic from its origin): no marker anywhere.
		{"note dropped", ForgeryProbe{Type: "Reply", Persona: "load0@sut.test", Marker: "crowdforgerycd"}, record.EffectNone, ""},
		// A forged Like kept: its actor among the post's favourites, on the second page.
		{"like kept", ForgeryProbe{Type: "Like", Persona: "load0@sut.test", Object: post, Actor: "https://flood1.test/users/leaver_0_z"}, record.EffectSeen, "the favourites of " + post},
		// A forged Like dropped: not among them.
		{"like dropped", ForgeryProbe{Type: "Like", Persona: "load0@sut.test", Object: post, Actor: "https://flood1.test/users/leaver_0_y"}, record.EffectNone, ""},
		// A forged Follow kept shows among the followers.
		{"follow kept", ForgeryProbe{Type: "Follow", Persona: "load0@sut.test", Actor: "https://flood2.test/users/carol"}, record.EffectSeen, "the followers of load0@sut.test"},
		// A forged Follow dropped.
		{"follow dropped", ForgeryProbe{Type: "Follow", Persona: "load0@sut.test", Actor: "https://flood2.test/users/leaver_1_q"}, record.EffectNone, ""},
		// The boosts could not be read: no verdict.
		{"boosts unread", ForgeryProbe{Type: "Announce", Persona: "load0@sut.test", Object: post, Actor: "https://flood1.test/users/leaver_0_w"}, "-", ""},
		// A persona without a token: no verdict.
		{"no token", ForgeryProbe{Type: "Create", Persona: "load1@sut.test", Marker: "crowdforgeryef"}, "-", ""},
		// A type with no place to look: no verdict.
		{"delete", ForgeryProbe{Type: "Delete", Persona: "load0@sut.test"}, "-", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.probe.Activity = "https://flood1.test/act/" + tc.name
			vs, unread := l.Look(context.Background(), []ForgeryProbe{tc.probe})
			if tc.want == "-" {
				if len(vs) != 0 || len(unread) == 0 && tc.probe.Type != "Delete" {
					t.Fatalf("verdicts %+v, unread %v: want no verdict and the place named", vs, unread)
				}
				return
			}
			if len(vs) != 1 || vs[0].Effect != tc.want || vs[0].Activity != tc.probe.Activity || !strings.Contains(vs[0].Where, tc.where) {
				t.Fatalf("verdicts %+v (unread %v), want %s at %q", vs, unread, tc.want, tc.where)
			}
		})
	}
}

// TestNextLink reads Link headers as Mastodon writes them.
func TestNextLink(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{`<https://m.test/api/v1/notifications?max_id=5>; rel="next", <https://m.test/api/v1/notifications?min_id=9>; rel="prev"`}, "https://m.test/api/v1/notifications?max_id=5"}, // Mastodon's
		{[]string{`<https://m.test/a?min_id=9>; rel="prev"`}, ""},                        // the last page: no next
		{[]string{`<https://m.test/a?max_id=1>; rel=next`}, "https://m.test/a?max_id=1"}, // unquoted rel
		{[]string{`<a?max_id=1>; rel="next"`}, ""},                                       // a relative target is not followed
		{nil, ""}, // no header
	} {
		got := nextLink(tc.in)
		if (got == nil) != (tc.want == "") || got != nil && got.String() != tc.want {
			t.Errorf("nextLink(%q) = %v, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzNextLink: any Link header reads without a panic, and a next page is
// always an absolute URL.
func FuzzNextLink(f *testing.F) {
	f.Add(`<https://m.test/api/v1/notifications?max_id=5>; rel="next", <https://m.test/x>; rel="prev"`)
	f.Add(`<>; rel="next"`)
	f.Fuzz(func(t *testing.T, s string) {
		if u := nextLink([]string{s}); u != nil && !u.IsAbs() {
			t.Fatalf("next %v is not absolute", u)
		}
	})
}
