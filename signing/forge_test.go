package signing

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSignForgedRefused checks that every forged kind is refused by the
// crowd's own verifier, for the reason it forges, while the same request
// signed honestly verifies: a forgery that a correct verifier accepted
// would test nothing.
func TestSignForgedRefused(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := NewSigner(SignerOptions{Now: func() time.Time { return now }})
	const keyB, ownB = "https://flood3.test/users/bob#main-key", "https://flood3.test/users/bob"
	keys := &fakeResolver{keys: map[string]PublicKey{
		keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA},
		keyB: {Key: k.rsaB.Public(), Owner: ownB, ID: keyB},
	}}
	v := &Verifier{Keys: keys, Now: func() time.Time { return now }}
	tests := []struct {
		kind Tamper
		want error // the sentinel the verifier refuses it with; nil: verifies, and the caller must refuse
	}{
		{TamperBody, ErrDigestMismatch},               // the Digest is the signed body's
		{TamperDigestUnsigned, ErrMalformedSignature}, // a POST must sign its Digest
		{TamperWrongKey, nil},                         // verifies: the owner check is the inbox's (below)
		{TamperDate, ErrDateSkew},                     // a day old
		{TamperCreated, ErrDateSkew},                  // (created) a day old beside a fresh Date
		{TamperTarget, ErrBadSignature},               // signed for another inbox
		{TamperReplay, nil},                           // an honest request: the forgery is sending it twice
		{TamperUnknownKey, ErrKeyUnavailable},         // the resolver knows no such key
	}
	for _, tc := range tests {
		t.Run(string(tc.kind), func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, inbox, nil)
			body, err := s.SignForged(req, testBody, keyA, k.rsaA, Forgery{Kind: tc.kind, WrongKeyID: keyB, WrongKey: k.rsaB})
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != inbox {
				t.Fatalf("the forged request goes to %s, want %s", req.URL, inbox)
			}
			if changed := !bytes.Equal(body, testBody); changed != (tc.kind == TamperBody) {
				t.Fatalf("body changed = %v for %s", changed, tc.kind)
			}
			wire := overTheWire(t, req)
			got, err := v.Verify(context.Background(), wire, body)
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			case tc.want == nil && err != nil:
				t.Fatalf("Verify = %v, want a verified signature", err)
			case tc.kind == TamperWrongKey && got.Owner == ownA:
				t.Fatalf("a wrong-key forgery is owned by the actor %s", got.Owner)
			}
		})
	}
}

// TestSignForgedDetails pins what each kind puts on the wire.
func TestSignForgedDetails(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := NewSigner(SignerOptions{Now: func() time.Time { return now }})
	sign := func(kind Tamper, target string) (*http.Request, Params) {
		req, _ := http.NewRequest(http.MethodPost, target, nil)
		if _, err := s.SignForged(req, testBody, keyA, k.rsaA, Forgery{Kind: kind, WrongKeyID: keyA, WrongKey: k.rsaA}); err != nil {
			t.Fatal(err)
		}
		p, err := ParseSignatureHeader(req.Header.Get("Signature"))
		if err != nil {
			t.Fatal(err)
		}
		return req, p
	}
	if _, p := sign(TamperCreated, inbox); p.Algorithm != HS2019 || p.Created != now.Add(-ForgedAge).Unix() {
		t.Errorf("created: algorithm %s, created %d", p.Algorithm, p.Created) // (created) goes with hs2019 only
	}
	if req, _ := sign(TamperCreated, inbox); req.Header.Get("Date") != now.Format(http.TimeFormat) {
		t.Errorf("created: Date %s, want a fresh one", req.Header.Get("Date"))
	}
	if req, _ := sign(TamperDate, inbox); req.Header.Get("Date") != now.Add(-ForgedAge).Format(http.TimeFormat) {
		t.Errorf("date: Date %s", req.Header.Get("Date"))
	}
	if _, p := sign(TamperUnknownKey, inbox); p.KeyID != "https://flood3.test/users/alice/forged-keys/unknown#main-key" {
		t.Errorf("unknown-key: keyId %s", p.KeyID)
	}
	if _, p := sign(TamperDigestUnsigned, inbox); strings.Contains(strings.Join(p.Headers, " "), "digest") {
		t.Errorf("digest-unsigned signs %v", p.Headers)
	}
	for _, tc := range []struct{ path, signed string }{
		{"/users/bob/inbox", "/inbox"},                    // a personal inbox: signed for the shared one
		{"/inbox", "/users/forged-target/inbox"},          // the shared inbox: signed for a personal one
		{"/users/x/outbox", "/users/forged-target/inbox"}, // anything else: a personal inbox
	} {
		if got := otherInbox(tc.path); got != tc.signed {
			t.Errorf("otherInbox(%s) = %s, want %s", tc.path, got, tc.signed)
		}
	}
}

// TestAlterBody checks that the altered body is the same activity (id
// kept) with other content, and that a body that is no JSON object still
// changes.
func TestAlterBody(t *testing.T) {
	create := []byte(`{"id":"https://a.test/c/1","type":"Create","object":{"id":"https://a.test/n/1","content":"<p>hi</p>"}}`)
	tests := []struct {
		name, body, want string
	}{
		{"note content", string(create), `"content":"<p>altered after signing</p>"`}, // the object's content rewritten
		{"no content", string(testBody), `"summary":"<p>altered after signing</p>"`}, // a Follow: a summary added
		{"not JSON", "hello", "hello "},                                              // bytes appended
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AlterBody([]byte(tc.body))
			if bytes.Equal(got, []byte(tc.body)) || !strings.Contains(string(got), tc.want) {
				t.Fatalf("AlterBody = %s, want it to contain %s", got, tc.want)
			}
		})
	}
	if got := AlterBody(create); !strings.Contains(string(got), `"id":"https://a.test/c/1"`) {
		t.Fatalf("the altered activity lost its id: %s", got)
	}
}

// TestParseTampers covers the list syntax.
func TestParseTampers(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  bool
	}{
		{"", "", false},                    // none
		{"body", "body", false},            // one
		{"DATE, body", "body,date", false}, // any case, listed in Tampers' order
		{"all", strings.ReplaceAll(TamperNames(), ", ", ","), false}, // every kind
		{"body,nope", "", true}, // an unknown kind
	}
	for _, tc := range tests {
		got, err := ParseTampers(tc.in)
		if (err != nil) != tc.err {
			t.Fatalf("ParseTampers(%q) error %v", tc.in, err)
		}
		var names []string
		for _, k := range got {
			names = append(names, string(k))
		}
		if err == nil && strings.Join(names, ",") != tc.want {
			t.Errorf("ParseTampers(%q) = %v, want %s", tc.in, names, tc.want)
		}
	}
}

// FuzzParseTampers: any list parses to known kinds, each once, in
// Tampers' order, or fails wrapping ErrTamper.
func FuzzParseTampers(f *testing.F) {
	f.Add("all")
	f.Add("body, DATE,,replay")
	f.Add("body,nope")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseTampers(in)
		if err != nil {
			if !errors.Is(err, ErrTamper) {
				t.Fatalf("%q: %v does not wrap ErrTamper", in, err)
			}
			return
		}
		last := -1
		for _, k := range got {
			i := slices.Index(Tampers(), k)
			if i <= last {
				t.Fatalf("%q: %v is not unique kinds in order", in, got)
			}
			last = i
		}
	})
}
