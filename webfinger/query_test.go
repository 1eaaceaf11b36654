package webfinger

import (
	"net/url"
	"testing"
)

// TestQueryValue: queryValue answers what url.ParseQuery(raw).Get does.
func TestQueryValue(t *testing.T) {
	for _, raw := range []string{
		"resource=acct:alice@flood1.test",        // the usual query
		"resource=acct%3Aalice%40flood1.test",    // escaped, as most clients send it
		"rel=self&resource=acct:bob@flood2.test", // another parameter first
		"resource=a&resource=b",                  // the first value wins
		"resource",                               // a key without a value
		"",                                       // no query
		"resource=%zz&resource=acct:x@y",         // a value that does not unescape is dropped
		"res%6Furce=acct:x@y",                    // an escaped key
		"resource;x=1&resource=acct:x@y",         // a semicolon key is dropped
		"resource=acct:a+b@flood1.test",          // + is a space
		"a=1&&resource=acct:alice@flood1.test&b", // empty pairs
	} {
		want := ""
		if v, _ := url.ParseQuery(raw); v != nil {
			want = v.Get("resource")
		}
		if got := queryValue(raw, "resource"); got != want {
			t.Errorf("queryValue(%q) = %q, url.ParseQuery says %q", raw, got, want)
		}
	}
}

// FuzzQueryValue: for any raw query, queryValue agrees with url.ParseQuery.
func FuzzQueryValue(f *testing.F) {
	f.Add("resource=acct%3Aalice%40flood1.test&rel=self")
	f.Add("resource;=1&resource=%zz&resource=ok")
	f.Fuzz(func(t *testing.T, raw string) {
		want := ""
		if v, _ := url.ParseQuery(raw); v != nil {
			want = v.Get("resource")
		}
		if got := queryValue(raw, "resource"); got != want {
			t.Errorf("queryValue(%q) = %q, url.ParseQuery says %q", raw, got, want)
		}
	})
}
