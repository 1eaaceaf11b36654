package audience

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// t0 is the tests' epoch.
func t0() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

// at is t0 + ms milliseconds.
func at(ms int) time.Time { return t0().Add(time.Duration(ms) * time.Millisecond) }

const (
	alice = "https://flood1.test/users/alice"
	bob   = "https://flood2.test/users/bob"
	carol = "https://flood3.test/users/carol"
)

// TestVisibility plays sends, answers and probes in the orders they can
// happen and checks what is owed, seen and never seen, and the drain.
func TestVisibility(t *testing.T) {
	// load0 follows alice and bob; load1 follows bob; nobody follows carol.
	follows := map[string][]string{"load0": {alice, bob}, "load1": {bob}}
	type step struct {
		op     string // "sent", "answered", "seen"
		who    string // sender (sent) or persona (seen)
		uri    string
		ms     int // time
		status int // answered
	}
	for _, tc := range []struct {
		name                 string
		steps                []step
		floodEnd, drainEnd   int
		owed                 int // Sent's return for the first step
		sent, accepted, seen int64
		never, refused       int64
		p50ms                int64
		drain                float64
		complete             bool
		outstanding          int
	}{
		// The plain case: sent, accepted, seen 120 ms later, before the end.
		{"seen", []step{{"sent", alice, "n1", 0, 0}, {"answered", "", "n1", 5, 202}, {"seen", "load0", "n1", 120, 0}},
			1000, 1000, 1, 1, 1, 1, 0, 0, 120, 0, true, 0},
		// A note from a sender two personas follow is owed to both homes.
		{"two homes", []step{{"sent", bob, "n1", 0, 0}, {"answered", "", "n1", 5, 202},
			{"seen", "load0", "n1", 100, 0}, {"seen", "load1", "n1", 300, 0}},
			1000, 1000, 2, 2, 2, 2, 0, 0, 100, 0, true, 0},
		// Nobody follows carol: her note is owed to no home.
		{"unfollowed sender", []step{{"sent", carol, "n1", 0, 0}, {"answered", "", "n1", 5, 202}, {"seen", "load0", "n1", 50, 0}},
			1000, 1000, 0, 0, 0, 0, 0, 0, 0, 0, true, 0},
		// The probe saw it before the answer came back (a SUT that processes
		// inline): still seen, nothing outstanding.
		{"seen before the answer", []step{{"sent", alice, "n1", 0, 0}, {"seen", "load0", "n1", 40, 0}, {"answered", "", "n1", 60, 202}},
			1000, 1000, 1, 1, 1, 1, 0, 0, 40, 0, true, 0},
		// Refused with 429: not owed, not counted as never seen.
		{"refused", []step{{"sent", alice, "n1", 0, 0}, {"answered", "", "n1", 5, 429}},
			1000, 1000, 1, 1, 0, 0, 0, 1, 0, 0, true, 0},
		// Accepted but never shown: never seen, the drain incomplete (the
		// time waited).
		{"never seen", []step{{"sent", alice, "n1", 0, 0}, {"answered", "", "n1", 5, 202}},
			1000, 61000, 1, 1, 1, 0, 1, 0, 0, 60, false, 1},
		// Shown after the flood ended: the drain is from the end to then.
		{"drain", []step{{"sent", alice, "n1", 900, 0}, {"answered", "", "n1", 905, 202}, {"seen", "load0", "n1", 3500, 0}},
			1000, 3600, 1, 1, 1, 1, 0, 0, 2600, 2.5, true, 0},
		// No answer at all (a timeout): refused; its late appearance still
		// measured, and it does not make the drain.
		{"no answer", []step{{"sent", alice, "n1", 0, 0}, {"answered", "", "n1", 10000, 0}, {"seen", "load0", "n1", 5000, 0}},
			1000, 1000, 1, 1, 0, 1, 0, 1, 5000, 0, true, 0},
		// The same note sent twice: owed once, from its first send.
		{"resent", []step{{"sent", alice, "n1", 0, 0}, {"sent", alice, "n1", 50, 0}, {"answered", "", "n1", 60, 202}, {"seen", "load0", "n1", 100, 0}},
			1000, 1000, 1, 1, 1, 1, 0, 0, 100, 0, true, 0},
		// --signature both: refused 401 under the first signature, taken
		// 202 under the fallback, as the flood's tally counts it: owed, seen.
		{"refused, then taken", []step{{"sent", alice, "n1", 0, 0}, {"answered", "", "n1", 5, 401}, {"sent", alice, "n1", 6, 0},
			{"answered", "", "n1", 10, 202}, {"seen", "load0", "n1", 100, 0}},
			1000, 1000, 1, 1, 1, 1, 0, 0, 100, 0, true, 0},
		// Taken, then refused when sent again: it stays taken, and owed.
		{"taken, then refused", []step{{"sent", alice, "n1", 0, 0}, {"answered", "", "n1", 5, 202}, {"answered", "", "n1", 50, 409}},
			1000, 61000, 1, 1, 1, 0, 1, 0, 0, 60, false, 1},
		// Another persona's home showing the note is not the owed one.
		{"wrong home", []step{{"sent", alice, "n1", 0, 0}, {"answered", "", "n1", 5, 202}, {"seen", "load1", "n1", 50, 0}},
			1000, 2000, 1, 1, 1, 0, 1, 0, 0, 1, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVisibility(follows)
			for i, s := range tc.steps {
				switch s.op {
				case "sent":
					if n := v.Sent(s.who, s.uri, at(s.ms)); i == 0 && n != tc.owed {
						t.Errorf("Sent owes %d homes, want %d", n, tc.owed)
					}
				case "answered":
					v.Answered(s.uri, s.status)
				case "seen":
					v.Seen(s.who, s.uri, at(s.ms-3), at(s.ms))
				}
			}
			if got := v.Outstanding(); got != tc.outstanding {
				t.Errorf("Outstanding = %d, want %d", got, tc.outstanding)
			}
			st, d := v.Summary(at(tc.floodEnd), at(tc.drainEnd), time.Minute)
			if st.Sent != tc.sent || st.Accepted != tc.accepted || st.Seen != tc.seen || st.NeverSeen != tc.never || st.Refused != tc.refused {
				t.Errorf("Summary = %+v, want sent %d accepted %d seen %d never %d refused %d", st, tc.sent, tc.accepted, tc.seen, tc.never, tc.refused)
			}
			if p50 := st.Latency.P50 / 1000; p50 < tc.p50ms-tc.p50ms/100 || p50 > tc.p50ms+tc.p50ms/100 {
				t.Errorf("p50 = %d ms, want %d", p50, tc.p50ms)
			}
			if d.Complete != tc.complete || d.Seconds < tc.drain-0.001 || d.Seconds > tc.drain+0.001 || d.Timeout != 60 {
				t.Errorf("drain = %+v, want %.3f s complete %v", d, tc.drain, tc.complete)
			}
		})
	}
}

// TestVisibilityNotes: the notes log holds each owed note with its send,
// answer, probe and latency, in send order.
func TestVisibilityNotes(t *testing.T) {
	v := NewVisibility(map[string][]string{"load0": {alice, bob}})
	v.Sent(bob, "n2", at(10))
	v.Sent(alice, "n1", at(0))
	v.Answered("n1", 202)
	v.Answered("n2", 503)
	v.Seen("load0", "n1", at(200), at(250))
	notes := v.Notes()
	if len(notes) != 2 || notes[0].URI != "n1" || notes[1].URI != "n2" {
		t.Fatalf("Notes = %+v", notes)
	}
	n := notes[0]
	if n.Persona != "load0" || n.Sender != alice || n.Status != 202 || n.Seen == nil || !n.Seen.Equal(at(250)) ||
		!n.Asked.Equal(at(200)) || *n.Visible != 250 {
		t.Errorf("n1 = %+v", n)
	}
	if notes[1].Seen != nil || notes[1].Status != 503 {
		t.Errorf("n2 = %+v", notes[1])
	}
}

// roundTripper answers every request with status, after reading its body.
type roundTripper struct {
	status int
	bodies []string
}

func (r *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	r.bodies = append(r.bodies, string(b))
	return &http.Response{StatusCode: r.status, Body: http.NoBody, Request: req}, nil
}

// TestObserve: the transport wrapper records the Creates whose sender a
// persona follows, passes every body on unchanged, and records the answer.
func TestObserve(t *testing.T) {
	v := NewVisibility(map[string][]string{"load0": {"https://flood1.test/users/alice"}})
	rt := &roundTripper{status: 202}
	tr := v.Observe(rt)
	bodies := []string{
		// The crowd's Create (actors/testdata/golden/create.json's shape).
		`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://flood1.test/users/alice/notes/x/activity","type":"Create",` +
			`"actor":"https://flood1.test/users/alice","object":{"id":"https://flood1.test/users/alice/notes/x","type":"Note",` +
			`"tag":[{"type":"Mention","href":"https://sut.test/users/load0","name":"@load0@sut.test"}]}}`,
		// A Like: passed on, not parsed as a Create.
		`{"type":"Like","actor":"https://flood1.test/users/alice","object":"https://sut.test/users/load0/posts/1"}`,
		// A Create from someone nobody follows.
		`{"type":"Create","actor":"https://flood9.test/users/zed","object":{"id":"https://flood9.test/users/zed/notes/y"}}`,
	}
	for _, b := range bodies {
		req, _ := http.NewRequest(http.MethodPost, "https://sut.test/inbox", io.NopCloser(strings.NewReader(b)))
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 202 {
			t.Fatalf("RoundTrip = %v, %v", resp, err)
		}
	}
	for i, b := range bodies {
		if rt.bodies[i] != b {
			t.Errorf("body %d changed on the way:\n%s\n%s", i, rt.bodies[i], b)
		}
	}
	st, _ := v.Summary(time.Now(), time.Now(), time.Minute)
	if st.Sent != 1 || st.Accepted != 1 || v.Outstanding() != 1 {
		t.Errorf("after the sends: %+v, outstanding %d", st, v.Outstanding())
	}
}

// FuzzParseCreate: any body parses to a Create with a note and an actor,
// or is refused; never a panic.
func FuzzParseCreate(f *testing.F) {
	f.Add([]byte(`{"type":"Create","actor":"https://a/u","object":{"id":"https://a/n","tag":[{"type":"Mention","href":"https://s/p"}]}}`))
	f.Add([]byte(`{"type":"Create","actor":{"id":"https://a/u"},"object":"https://a/n"}`))
	f.Add([]byte(`{"type":["Create"],"actor":5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ci, ok := ParseCreate(b)
		if ok && (ci.Actor == "" || ci.Note == "") {
			t.Fatalf("ok without actor or note: %+v", ci)
		}
		for _, m := range ci.Mentions {
			if m == "" {
				t.Fatal("empty mention")
			}
		}
	})
}
