package inbox

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The inbox takes its recipient from the request's context, as the router resolved it, and
// reads neither the Host nor the path again: a request whose Host names no origin of the
// crowd is delivered to the recipient it was handed, and one handed none is refused.
func TestRecipientIsHandedDown(t *testing.T) {
	f := newFixture(t, false)
	o, _ := f.world.Origin("flood1.test")
	bob := remoteID("bob")
	for _, c := range []struct {
		name   string
		rc     *Recipient // nil: none handed down
		status int
	}{
		// The router found alice on flood1; the Host says something else entirely.
		{"handed alice", &Recipient{Origin: o, Name: "alice"}, http.StatusAccepted},
		// The shared inbox of the origin handed down.
		{"handed the shared inbox", &Recipient{Origin: o}, http.StatusAccepted},
		// The name is looked up in the origin handed down, not in the path.
		{"handed a stranger", &Recipient{Origin: o, Name: "nobody"}, http.StatusNotFound},
		// No router addressed it: no origin, whatever the Host and path say.
		{"handed nothing", nil, http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := likeJSON(bob)
			req := f.signedPost("elsewhere.test", "/users/alice/inbox", "bob", body, nil)
			req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			if c.rc != nil {
				req = req.WithContext(WithRecipient(req.Context(), *c.rc))
			}
			rec := httptest.NewRecorder()
			f.in.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, c.status)
			}
		})
	}
}

// An in-process delivery passes no router: the inbox URL of a crowd document names the
// recipient the router would have found.
func TestLocalRecipient(t *testing.T) {
	f := newFixture(t, false)
	o, _ := f.world.Origin("flood2.test")
	for _, c := range []struct {
		path string
		want Recipient
	}{
		{"/inbox", Recipient{Origin: o}},                        // the shared inbox
		{"/actor/inbox", Recipient{Origin: o, Instance: true}},  // the instance actor's
		{"/users/bob/inbox", Recipient{Origin: o, Name: "bob"}}, // a person's
	} {
		if got := localRecipient(o, c.path); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.path, got, c.want)
		}
	}
}
