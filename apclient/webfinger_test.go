package apclient

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestParseAcct: the three spellings of an account, and what is not one.
func TestParseAcct(t *testing.T) {
	for _, c := range []struct {
		in, user, host string
		ok             bool
	}{
		{"alice@sut.test", "alice", "sut.test", true},             // bare handle
		{"acct:alice@sut.test", "alice", "sut.test", true},        // acct: URI
		{"@alice@SUT.test", "alice", "sut.test", true},            // Mastodon-style, host lower-cased
		{"  bob@sut.test ", "bob", "sut.test", true},              // surrounding space
		{"alice", "", "", false},                                  // no host
		{"@sut.test", "", "", false},                              // no name
		{"alice@a@b", "", "", false},                              // two hosts
		{"alice@sut.test/x", "", "", false},                       // a path is no host
		{"al ice@sut.test", "", "", false},                        // a space in the name
		{"https://sut.test/users/alice", "", "", false},           // a URL
		{"alice@127.0.0.1:8443", "alice", "127.0.0.1:8443", true}, // a port is the host's (a lookup or a send reaches it; a flood does not: traffic.ParsePersona)
		{"alice@[::1]", "alice", "[::1]", true},                   // a bracketed IPv6 literal, no port
	} {
		user, host, err := ParseAcct(c.in)
		if c.ok != (err == nil) || user != c.user || host != c.host {
			t.Errorf("ParseAcct(%q) = %q, %q, %v; want %q, %q, ok %v", c.in, user, host, err, c.user, c.host, c.ok)
		}
		if err != nil && !errors.Is(err, ErrBadAcct) {
			t.Errorf("ParseAcct(%q): %v does not wrap ErrBadAcct", c.in, err)
		}
	}
}

func FuzzParseAcct(f *testing.F) {
	f.Add("acct:alice@flood1.test")
	f.Add("@a@b@c")
	f.Fuzz(func(t *testing.T, s string) {
		u, h, err := ParseAcct(s)
		if err == nil && (u == "" || h == "") {
			t.Fatalf("ParseAcct(%q) = %q, %q without error", s, u, h)
		}
	})
}

// TestLookup: a JRD with an ActivityPub self link is the answer; a 404,
// a JRD without that link, a body that is no JRD and a malformed acct are
// errors that say so.
func TestLookup(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("resource") {
		case "acct:alice@sut.test":
			serveDoc("application/jrd+json", `{"subject":"acct:alice@sut.test","links":[
				{"rel":"http://webfinger.net/rel/profile-page","type":"text/html","href":"https://sut.test/@alice"},
				{"rel":"self","type":"application/activity+json","href":"https://sut.test/users/alice"}]}`)(w, r)
		case "acct:bob@sut.test": // the ld+json spelling of the self link
			serveDoc("application/jrd+json", `{"subject":"acct:bob@sut.test","links":[
				{"rel":"self","type":"application/ld+json; profile=\"https://www.w3.org/ns/activitystreams\"","href":"https://sut.test/u/bob"}]}`)(w, r)
		case "acct:carol@sut.test": // only a profile page
			serveDoc("application/jrd+json", `{"subject":"acct:carol@sut.test","links":[
				{"rel":"self","type":"text/html","href":"https://sut.test/@carol"}]}`)(w, r)
		case "acct:dave@sut.test":
			serveDoc("application/json", `[1,2]`)(w, r)
		default:
			http.NotFound(w, r)
		}
	})
	f := signedFetcher(t, dialAll(s), Options{})
	for _, c := range []struct {
		acct, self string
		err        error  // wrapped, when not nil
		says       string // in the error, when not ""
	}{
		{"@alice@sut.test", "https://sut.test/users/alice", nil, ""}, // activity+json self link
		{"bob@sut.test", "https://sut.test/u/bob", nil, ""},          // ld+json self link
		{"carol@sut.test", "", nil, "no ActivityPub self link"},      // none fit
		{"dave@sut.test", "", nil, "not a JRD"},                      // JSON, but no JRD
		{"eve@sut.test", "", ErrNoAccount, "no such account"},        // 404
		{"eve", "", ErrBadAcct, "name@host"},                         // never asked
	} {
		jrd, err := f.Lookup(context.Background(), c.acct)
		if c.self != "" {
			if err != nil || jrd.Self() != c.self {
				t.Errorf("Lookup(%q) = %q, %v; want %s", c.acct, jrd.Self(), err, c.self)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.says) || c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("Lookup(%q) err = %v; want %q wrapping %v", c.acct, err, c.says, c.err)
		}
	}
	if n := len(s.requests()); n != 5 {
		t.Errorf("%d requests, want 5: a malformed acct is never asked", n)
	}
}
