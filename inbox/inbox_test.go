package inbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
	"unsafe"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/signing"
)

// likeJSON is a Like by a remote actor.
func likeJSON(actor string) []byte {
	return fmt.Appendf(nil, `{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Like","actor":%q,"object":"https://flood1.test/users/alice/notes/x"}`,
		actor+"/likes/1", actor)
}

// TestBadInput sends what a broken or hostile peer sends. Each request
// gets its 4xx with a reason in the body, shows in the activity log as
// rejected with that status, and crashes nothing (the last row, a good
// request, still gets 202).
func TestBadInput(t *testing.T) {
	f := newFixture(t, true)
	bob := remoteID("bob")
	like := likeJSON(bob)
	twoHoursAgo := signing.NewSigner(signing.SignerOptions{Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }})

	tests := []struct {
		name   string
		send   func(t *testing.T) (int, string) // sends the request, returns status and body
		status int
		reason string // substring of the answer's body (and the log's reason)
	}{
		{"no signature", func(t *testing.T) (int, string) {
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/users/alice/inbox", bytes.NewReader(like))
			req.Host = "flood1.test"
			req.Header.Set("Content-Type", "application/activity+json")
			return f.do(req)
		}, http.StatusUnauthorized, "no Signature header"},
		// Signed with carol's key but claiming bob's keyId.
		{"wrong key", func(t *testing.T) (int, string) {
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/users/alice/inbox", nil)
			req.Host = "flood1.test"
			if err := f.remote.signer.SignPost(req, like, remoteKeyID("bob"), f.remote.keys["carol"]); err != nil {
				t.Fatal(err)
			}
			return f.do(req)
		}, http.StatusUnauthorized, "bad signature"},
		// Signed over one body, another body sent: the Digest gives it away.
		{"tampered body", func(t *testing.T) (int, string) {
			req := f.signedPost("flood1.test", "/users/alice/inbox", "bob", like, nil)
			tampered := bytes.Replace(like, []byte("Like"), []byte("Lik3"), 1)
			req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(tampered)), int64(len(tampered))
			req.GetBody = nil
			return f.do(req)
		}, http.StatusUnauthorized, "digest mismatch"},
		// Mastodon refuses a Date more than an hour away.
		{"date two hours old", func(t *testing.T) (int, string) {
			return f.do(f.signedPost("flood1.test", "/users/alice/inbox", "bob", like, twoHoursAgo))
		}, http.StatusUnauthorized, "outside the accepted window"},
		// A valid signature by carol on an activity whose actor is bob.
		{"keyId of another actor", func(t *testing.T) (int, string) {
			return f.do(f.signedPost("flood1.test", "/users/alice/inbox", "carol", like, nil))
		}, http.StatusUnauthorized, "belongs to " + remoteID("carol")},
		// The key document does not exist.
		{"keyId that 404s", func(t *testing.T) (int, string) {
			ghost := remoteID("ghost")
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/users/alice/inbox", nil)
			req.Host = "flood1.test"
			if err := f.remote.signer.SignPost(req, likeJSON(ghost), remoteKeyID("ghost"), f.remote.keys["bob"]); err != nil {
				t.Fatal(err)
			}
			return f.do(req)
		}, http.StatusUnauthorized, "404"},
		{"malformed Signature header", func(t *testing.T) (int, string) {
			req := f.signedPost("flood1.test", "/users/alice/inbox", "bob", like, nil)
			req.Header.Set("Signature", `keyId="unterminated,algorithm=`)
			return f.do(req)
		}, http.StatusUnauthorized, "malformed signature"},
		// RFC 9421 the verifier cannot check: 401, so the sender falls back to cavage.
		{"RFC 9421 it cannot verify", func(t *testing.T) (int, string) {
			req := f.signedPost("flood1.test", "/users/alice/inbox", "bob", like, nil)
			req.Header.Set("Signature-Input", `sig1=("@method");keyid="`+remoteKeyID("bob")+`";alg="rsa-v1_5-sha256"`)
			req.Header.Set("Signature", `sig1=:AAAA:`)
			return f.do(req)
		}, http.StatusUnauthorized, "RFC 9421"},
		// Correctly signed garbage.
		{"JSON garbage", func(t *testing.T) (int, string) {
			return f.deliver("/users/alice/inbox", "bob", []byte(`{"id": "https://example.com/x", "type": `))
		}, http.StatusBadRequest, "invalid JSON"},
		// Correctly signed, but no actor.
		{"missing actor", func(t *testing.T) (int, string) {
			return f.deliver("/users/alice/inbox", "bob", []byte(`{"id":"https://example.com/x","type":"Like","object":"https://flood1.test/users/alice"}`))
		}, http.StatusBadRequest, "no actor"},
		// 10 MB declared: refused before reading it (checked in TestBodyLimitDoesNotRead).
		{"10 MB body", func(t *testing.T) (int, string) {
			return rawPost(t, f.srv.Listener.Addr().String(), "/users/alice/inbox", 10<<20)
		}, http.StatusRequestEntityTooLarge, "exceeds the limit"},
		// Chunked, so no Content-Length to refuse early: cut while reading.
		{"chunked body over the limit", func(t *testing.T) (int, string) {
			big := bytes.Repeat([]byte("x"), 100<<10)
			req := f.signedPost("flood1.test", "/users/alice/inbox", "bob", big, nil)
			req.Body, req.ContentLength, req.GetBody = io.NopCloser(bytes.NewReader(big)), -1, nil
			return f.do(req)
		}, http.StatusRequestEntityTooLarge, "exceeds the limit"},
		{"wrong Content-Type", func(t *testing.T) (int, string) {
			req := f.signedPost("flood1.test", "/users/alice/inbox", "bob", like, nil)
			req.Header.Set("Content-Type", "text/plain")
			return f.do(req)
		}, http.StatusUnsupportedMediaType, "Content-Type"},
		{"unknown recipient", func(t *testing.T) (int, string) {
			return f.deliver("/users/nobody/inbox", "bob", like)
		}, http.StatusNotFound, `no actor "nobody"`},
		{"unknown origin", func(t *testing.T) (int, string) {
			return f.do(f.signedPost("flood99.test", "/inbox", "bob", like, nil))
		}, http.StatusNotFound, "no origin"},
		{"GET an inbox", func(t *testing.T) (int, string) {
			req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/users/alice/inbox", nil)
			req.Host = "flood1.test"
			return f.do(req)
		}, http.StatusMethodNotAllowed, "POST"},
		// After all that, the inbox still works.
		{"good request", func(t *testing.T) (int, string) {
			return f.deliver("/users/alice/inbox", "bob", like)
		}, http.StatusAccepted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.in.Log().Latest(1, Filter{})
			status, body := tt.send(t)
			if status != tt.status || !strings.Contains(body, tt.reason) {
				t.Fatalf("got %d %q, want %d containing %q", status, body, tt.status, tt.reason)
			}
			got := f.in.Log().Latest(1, Filter{})
			if len(got) != 1 || (len(before) == 1 && got[0].Seq == before[0].Seq) {
				t.Fatal("nothing logged")
			}
			e := got[0]
			wantVerdict := VerdictRejected
			if tt.status < 300 {
				wantVerdict = VerdictAccepted
			}
			if e.Status != tt.status || e.Verdict != wantVerdict || !strings.Contains(e.Reason, tt.reason) || e.Direction != DirIn {
				t.Errorf("log entry %+v, want status %d verdict %s reason containing %q", e, tt.status, wantVerdict, tt.reason)
			}
		})
	}
	if n := metricValue(t, f.reg, "crowd_inbox_activities_total", map[string]string{"verdict": "rejected"}); n != float64(len(tests)-1) {
		t.Errorf("rejected counter = %v, want %d", n, len(tests)-1)
	}
	if n := metricValue(t, f.reg, "crowd_inbox_activities_total", map[string]string{"type": "Like", "verdict": "accepted", "status": "202"}); n != 1 {
		t.Errorf("accepted Like counter = %v, want 1", n)
	}
}

// rawPost sends headers declaring a body of size bytes and then streams
// it, while reading the answer; the server answering early is what we want.
func rawPost(t *testing.T, addr, path string, size int) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: flood1.test\r\nContent-Type: application/activity+json\r\nContent-Length: %d\r\n\r\n", path, size)
	done := make(chan struct{})
	go func() {
		defer close(done)
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := conn.Write(chunk); err != nil {
				return // the server hung up: expected
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	conn.Close()
	<-done
	return resp.StatusCode, string(b)
}

// TestBodyLimitDoesNotRead: a 10 MB body is refused (413) after the
// server read little more than the headers.
func TestBodyLimitDoesNotRead(t *testing.T) {
	f := newFixture(t, false)
	status, body := rawPost(t, f.srv.Listener.Addr().String(), "/users/alice/inbox", 10<<20)
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d %q", status, body)
	}
	if n := f.read.Load(); n > 1<<20 {
		t.Errorf("the server read %d bytes of a refused 10 MB body", n)
	}
}

// TestFollowAcceptUndo: a remote Follow is recorded before the 202, its
// Accept is queued durably before the 202, delivered signed by the
// followed actor embedding the Follow, and verified by the remote; Undo
// removes the follower.
func TestFollowAcceptUndo(t *testing.T) {
	f := newFixture(t, false) // workers not started yet: see what the 202 promised
	alice := f.actor("alice@flood1.test")
	bob := remoteID("bob")
	follow := followJSON(bob+"/follows/1", bob, alice.ID)
	status, body := f.deliver("/users/alice/inbox", "bob", follow)
	if status != http.StatusAccepted {
		t.Fatalf("Follow: %d %s", status, body)
	}
	rels := f.world.Graph.Followers(alice.ID)
	if len(rels) != 1 || rels[0].Remote != bob || rels[0].FollowID != bob+"/follows/1" {
		t.Fatalf("followers after the 202: %+v", rels)
	}
	if files := queueFiles(t, f.state); len(files) != 1 {
		t.Fatalf("queue files after the 202: %v", files)
	}
	// The key fetch was a GET signed by flood1.test's instance actor.
	gets := f.remote.getsSnapshot()
	if len(gets) == 0 || gets[0].VerifyErr != nil || gets[0].Verified.KeyID != f.world.Origins[0].Instance.KeyID {
		t.Fatalf("key fetch not signed by the instance actor: %+v", gets)
	}

	if err := f.in.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Accept", func() bool { return len(f.remote.postsTo("/users/bob/inbox")) == 1 })
	got := f.remote.postsTo("/users/bob/inbox")[0]
	if got.VerifyErr != nil {
		t.Fatalf("the remote could not verify the Accept: %v", got.VerifyErr)
	}
	if got.Verified.Owner != alice.ID || got.Verified.Algorithm != signing.RSASHA256 {
		t.Errorf("Accept signed by %+v, want alice with rsa-sha256", got.Verified)
	}
	var accept struct {
		ID, Type, Actor string
		Object          json.RawMessage
	}
	mustJSON(t, got.Body, &accept)
	if accept.Type != "Accept" || accept.Actor != alice.ID || !strings.HasPrefix(accept.ID, alice.ID+"#") {
		t.Errorf("Accept = %s", got.Body)
	}
	var embedded map[string]any
	mustJSON(t, accept.Object, &embedded)
	if embedded["id"] != bob+"/follows/1" || embedded["type"] != "Follow" || embedded["actor"] != bob || embedded["object"] != alice.ID {
		t.Errorf("the Accept does not embed the Follow as received: %s", accept.Object)
	}
	eventually(t, "the queue to empty", func() bool { return len(queueFiles(t, f.state)) == 0 })
	if n := metricValue(t, f.reg, "crowd_outgoing_deliveries_total", map[string]string{"type": "Accept", "outcome": "delivered"}); n != 1 {
		t.Errorf("delivered counter = %v", n)
	}
	out := f.entries(Filter{Direction: DirOut, Type: "Accept"})
	if len(out) != 1 || out[0].Verdict != VerdictDelivered || out[0].Status != http.StatusAccepted || out[0].Headers.Get("Signature") == "" {
		t.Errorf("outgoing log: %+v", out)
	}

	// Undo, embedding the Follow, to the shared inbox.
	undo := fmt.Appendf(nil, `{"id":%q,"type":"Undo","actor":%q,"object":%s}`, bob+"/follows/1/undo", bob, follow)
	if status, body := f.deliver("/inbox", "bob", undo); status != http.StatusAccepted {
		t.Fatalf("Undo: %d %s", status, body)
	}
	if rels := f.world.Graph.Followers(alice.ID); len(rels) != 0 {
		t.Errorf("followers after Undo: %+v", rels)
	}
	// Follow again and Undo by id only.
	f.deliver("/users/alice/inbox", "bob", followJSON(bob+"/follows/2", bob, alice.ID))
	undo = fmt.Appendf(nil, `{"id":%q,"type":"Undo","actor":%q,"object":%q}`, bob+"/follows/2/undo", bob, bob+"/follows/2")
	if status, _ := f.deliver("/inbox", "bob", undo); status != http.StatusAccepted {
		t.Fatal(status)
	}
	if rels := f.world.Graph.Followers(alice.ID); len(rels) != 0 {
		t.Errorf("followers after Undo by id: %+v", rels)
	}
}

// TestAcceptRejectOfOurFollows: the answers to the crowd's own Follows
// move the following state, matched every way a server may quote the
// Follow.
func TestAcceptRejectOfOurFollows(t *testing.T) {
	f := newFixture(t, true)
	alice := f.actor("alice@flood1.test")
	bobFl2 := f.actor("bob@flood2.test")
	bob := remoteID("bob")
	g := f.world.Graph

	// A Follow sent by hand: registered pending, delivered to bob.
	res, err := f.in.SendActivity(context.Background(), adminapi.SendRequest{From: "alice@flood1.test", Type: "Follow", To: "acct:bob@" + remoteHost})
	if err != nil || res.Status != http.StatusAccepted || res.Inbox != bob+"/inbox" {
		t.Fatalf("send Follow: %+v %v", res, err)
	}
	rel, ok := g.FollowingByRemote(alice.ID, bob)
	if !ok || rel.State != adminapi.StatePending {
		t.Fatalf("following after the Follow: %+v %v", rel, ok)
	}
	var sent struct{ ID string }
	mustJSON(t, res.Activity, &sent)
	if sent.ID != rel.FollowID {
		t.Fatalf("registered %s, sent %s", rel.FollowID, sent.ID)
	}
	if p := f.remote.postsTo("/users/bob/inbox"); len(p) != 1 || p[0].VerifyErr != nil {
		t.Fatalf("the remote got %+v", p)
	}

	tests := []struct {
		name  string
		body  string
		local string // whose following to check
		state string // expected state afterwards ("" = no relation)
	}{
		// Mastodon: the Follow embedded whole.
		{"accept embedded", fmt.Sprintf(`{"id":"%s/a/1","type":"Accept","actor":%q,"object":{"id":%q,"type":"Follow","actor":%q,"object":%q}}`, bob, bob, rel.FollowID, alice.ID, bob),
			alice.ID, actors.StateAccepted},
		// Some servers quote only the Follow's id.
		{"reject by id", fmt.Sprintf(`{"id":"%s/r/1","type":"Reject","actor":%q,"object":%q}`, bob, bob, rel.FollowID),
			alice.ID, actors.StateRejected},
		// A Follow the graph never heard of, by a crowd actor (a separate
		// flood process sent it): recorded from its regenerable id.
		{"accept of an unregistered crowd Follow", fmt.Sprintf(`{"id":"%s/a/2","type":"Accept","actor":%q,"object":%q}`, bob, bob,
			bobFl2.Follow(actors.FollowSpec{Published: time.Unix(1700000000, 0), Seq: 9, Object: bob}).ID), bobFl2.ID, actors.StateAccepted},
		// A third party cannot accept a Follow addressed to bob.
		{"accept by the wrong actor", fmt.Sprintf(`{"id":"%s/a/3","type":"Reject","actor":%q,"object":{"id":%q,"type":"Follow","actor":%q,"object":"https://example.com/users/someone"}}`, bob, bob, "https://flood1.test/users/alice/follows/zzz", alice.ID),
			alice.ID, actors.StateRejected /* unchanged from the row before last */},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := f.deliver("/inbox", "bob", []byte(tt.body)); status != http.StatusAccepted {
				t.Fatalf("%d %s", status, body)
			}
			rel, ok := g.FollowingByRemote(tt.local, bob)
			if !ok || rel.State != tt.state {
				t.Errorf("following = %+v (%v), want state %s", rel, ok, tt.state)
			}
		})
	}

	// Undo by hand: the remote gets the Undo embedding the Follow, and the
	// relation is forgotten.
	res, err = f.in.SendActivity(context.Background(), adminapi.SendRequest{From: "alice@flood1.test", Type: "Undo", To: bob})
	if err != nil || res.Status != http.StatusAccepted {
		t.Fatalf("send Undo: %+v %v", res, err)
	}
	var undo struct {
		Type   string
		Object struct{ ID, Type string }
	}
	mustJSON(t, res.Activity, &undo)
	if undo.Type != "Undo" || undo.Object.ID != rel.FollowID || undo.Object.Type != "Follow" {
		t.Errorf("Undo = %s", res.Activity)
	}
	if _, ok := g.FollowingByRemote(alice.ID, bob); ok {
		t.Error("following still there after the Undo")
	}
}

// TestCrowdToCrowd: crowd actors' keys resolve from the world (no fetch)
// and the Accept to a crowd actor is delivered in-process.
func TestCrowdToCrowd(t *testing.T) {
	f := newFixture(t, true)
	alice := f.actor("alice@flood1.test")
	bob2 := f.actor("bob@flood2.test")
	follow := bob2.Follow(actors.FollowSpec{Published: time.Now(), Seq: 1, Object: alice.ID})
	body, _ := json.Marshal(follow)
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/users/alice/inbox", nil)
	req.Host = "flood1.test"
	if err := signing.NewSigner(signing.SignerOptions{}).SignPost(req, body, bob2.KeyID, bob2.Key); err != nil {
		t.Fatal(err)
	}
	if status, b := f.do(req); status != http.StatusAccepted {
		t.Fatalf("%d %s", status, b)
	}
	if len(f.remote.getsSnapshot()) != 0 || f.in.Keys().Fetches() != 0 {
		t.Error("a crowd key was fetched over the network")
	}
	// bob@flood2 registered nothing, yet alice's Accept lands in his inbox
	// in-process, is verified there, and records his following.
	eventually(t, "the in-process Accept", func() bool {
		r, ok := f.world.Graph.FollowingByRemote(bob2.ID, alice.ID)
		return ok && r.State == actors.StateAccepted
	})
	// The inbox logs a delivery after acting on it: the graph can show the
	// Accept a moment before the log does.
	eventually(t, "the in-process Accept's log entry", func() bool {
		return len(f.entries(Filter{Direction: DirIn, Type: "Accept"})) > 0
	})
	in := f.entries(Filter{Direction: DirIn, Type: "Accept"})
	if len(in) != 1 || in[0].Remote != "in-process" || in[0].Status != http.StatusAccepted {
		t.Errorf("in-process Accept log: %+v", in)
	}
}

// TestSelfDeleteNotFetched: Mastodon's Delete of a deleted actor is
// answered 202 without fetching the (gone) key.
func TestSelfDeleteNotFetched(t *testing.T) {
	f := newFixture(t, false)
	gone := remoteID("gone")
	del := fmt.Appendf(nil, `{"id":"%s#delete","type":"Delete","actor":%q,"object":%q}`, gone, gone, gone)
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/inbox", nil)
	req.Host = "flood1.test"
	if err := f.remote.signer.SignPost(req, del, gone+"#main-key", f.remote.keys["bob"]); err != nil {
		t.Fatal(err)
	}
	if status, b := f.do(req); status != http.StatusAccepted {
		t.Fatalf("%d %s", status, b)
	}
	if n := len(f.remote.getsSnapshot()); n != 0 {
		t.Errorf("%d fetches for a self-Delete", n)
	}
	if e := f.entries(Filter{Type: "Delete"}); len(e) != 1 || !strings.Contains(e[0].Note, "without fetching") {
		t.Errorf("log: %+v", e)
	}
}

// TestQueueFullAnswers503: a Follow whose Accept cannot be queued is
// answered 503 with Retry-After (the follow itself is kept).
func TestQueueFullAnswers503(t *testing.T) {
	f := newFixture(t, false, func(c *Config) { c.Delivery.MaxPending = 1 })
	alice := f.actor("alice@flood1.test")
	bob, carol := remoteID("bob"), remoteID("carol")
	if s, b := f.deliver("/users/alice/inbox", "bob", followJSON(bob+"/f/1", bob, alice.ID)); s != http.StatusAccepted {
		t.Fatal(s, b)
	}
	req := f.signedPost("flood1.test", "/users/alice/inbox", "carol", followJSON(carol+"/f/1", carol, alice.ID), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("got %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// A repeated Follow from bob is not queued twice.
	if s, _ := f.deliver("/users/alice/inbox", "bob", followJSON(bob+"/f/1", bob, alice.ID)); s != http.StatusAccepted {
		t.Errorf("repeated Follow: %d", s)
	}
}

// TestReadBody: a body reads whole and byte for byte whatever length it
// declared.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("0123456789", 300)
	for _, tt := range []struct {
		name     string
		declared int64
	}{
		// The usual case: Content-Length is the body's length.
		{"declared exactly", int64(len(body))},
		// A reader that gives more than declared (net/http's never does):
		// the buffer grows.
		{"declared shorter than it is", 10},
		// A body that ends early: what came is the body.
		{"declared longer than it is", int64(len(body)) * 2},
		// Chunked: no length to go by.
		{"length unknown (chunked)", -1},
		// Content-Length: 0 with a body behind it.
		{"declared empty", 0},
		// A declared gigabyte: the first buffer is capped, the body grows it.
		{"declared beyond the preallocation bound", 1 << 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readBody(iotest.HalfReader(strings.NewReader(body)), tt.declared)
			if err != nil || string(got) != body {
				t.Errorf("readBody = %d bytes, %v; want the %d bytes", len(got), err, len(body))
			}
		})
	}
	// An error mid-body is returned with what was read before it.
	got, err := readBody(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader(body))), int64(len(body)))
	if !errors.Is(err, iotest.ErrTimeout) || string(got) != body[:1] {
		t.Errorf("readBody over a failing reader = %q, %v; want the first byte and the timeout", got, err)
	}
}

// TestLoggedBody: the log keeps a body within its limit without a copy,
// and only the limit's worth of a longer one, copied, so the entry does
// not hold the whole body's buffer; nor a buffer much larger than its body.
func TestLoggedBody(t *testing.T) {
	const limit = 16
	for _, tt := range []struct {
		name       string
		body       string
		capacity   int // of the body's buffer; 0: what []byte(body) gives
		want       string
		wantShared bool // the string is the body's own memory
	}{
		// A delivery within the limit: the body itself.
		{"within the limit", "0123456789", 0, "0123456789", true},
		// Exactly at the limit: still the body itself.
		{"at the limit", "0123456789abcdef", 0, "0123456789abcdef", true},
		// Beyond it: the first limit bytes, copied.
		{"beyond the limit", "0123456789abcdefXYZ", 0, "0123456789abcdef", false},
		// Nothing read: nothing logged.
		{"empty", "", 0, "", false},
		// readBody's room for a body's last read: still shared.
		{"the buffer's usual room", "0123456789", 10 + 512, "0123456789", true},
		// A peer that declared 64 KiB and sent 10 bytes: copied, so that
		// the entry does not hold the 64 KiB buffer.
		{"a buffer much larger than the body", "0123456789", 64 << 10, "0123456789", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := append(make([]byte, 0, max(tt.capacity, len(tt.body))), tt.body...)
			got := loggedBody(body, limit)
			if got != tt.want {
				t.Fatalf("loggedBody = %q, want %q", got, tt.want)
			}
			shared := len(body) > 0 && len(got) > 0 && unsafe.StringData(got) == &body[0]
			if shared != tt.wantShared {
				t.Errorf("shares the body's memory: %v, want %v", shared, tt.wantShared)
			}
		})
	}
}

// TestActivityMediaType: the inbox takes activity+json and ld+json in any
// form a server writes them, the two usual ones without a parse, and
// refuses every other type and what does not parse.
func TestActivityMediaType(t *testing.T) {
	tests := []struct {
		name string
		ct   string
		want bool
	}{
		// What the crowd, Mastodon and GoToSocial send.
		{"activity+json", "application/activity+json", true},
		// ActivityPub's own recommendation.
		{"ld+json with the profile", `application/ld+json; profile="https://www.w3.org/ns/activitystreams"`, true},
		// Another case: parsed, and media types ignore case.
		{"upper case", "Application/Activity+JSON", true},
		// A charset, which some servers add.
		{"a charset", "application/activity+json; charset=utf-8", true},
		// ld+json with no profile.
		{"ld+json alone", "application/ld+json", true},
		// Plain JSON is not an activity's type.
		{"application/json", "application/json", false},
		// Nor is a web page.
		{"text/html", "text/html", false},
		// No Content-Type at all.
		{"empty", "", false},
		// What does not parse as a media type.
		{"a parameter without a value", "application/activity+json; charset", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := activityMediaType(tt.ct); got != tt.want {
				t.Fatalf("activityMediaType(%q) = %v, want %v", tt.ct, got, tt.want)
			}
		})
	}
}

// TestAFollowNotTakenIsNotLeftPending: a Follow sent by hand is registered
// pending before it goes (so that its Accept finds it); when the target
// refuses it (non-2xx) or is never reached, it is taken back, else it would
// wait as pending and keep floods from following that pair until a prune.
// A Follow that was taken stays pending for its Accept.
func TestAFollowNotTakenIsNotLeftPending(t *testing.T) {
	f := newFixture(t, true)
	alice := f.actor("alice@flood1.test")
	bob := remoteID("bob")
	for _, tc := range []struct {
		name    string
		status  int    // the remote's answer
		inbox   string // the inbox sent to ("": bob's)
		pending bool
	}{
		{"answered 500", http.StatusInternalServerError, "", false},          // refused: taken back
		{"answered 403", http.StatusForbidden, "", false},                    // refused: taken back
		{"never reached", 0, "https://" + remoteHost + ":8443/inbox", false}, // no connection made: taken back
		{"accepted", http.StatusAccepted, "", true},                          // taken: awaits its Accept
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.remote.setStatuses(tc.status)
			_, err := f.in.SendActivity(context.Background(), adminapi.SendRequest{From: "alice@flood1.test", Type: "Follow", To: bob, Inbox: tc.inbox})
			// Sent, whatever came of it: the Follow was registered first.
			if (err == nil) != (tc.status != 0) || (err != nil && !errors.Is(err, ErrUndelivered)) {
				t.Fatalf("send: %v", err)
			}
			rel, ok := f.world.Graph.FollowingByRemote(alice.ID, bob)
			if ok != tc.pending || (ok && rel.State != adminapi.StatePending) {
				t.Errorf("following %+v (%v), want pending %v", rel, ok, tc.pending)
			}
		})
	}
}

// TestASendToAnUnknownNameSaysWhichResolver: a send to a name that does not
// resolve says the crowd looks names up with its machine's resolver, not
// its DNS's --dns-record (which users expect to answer it).
func TestASendToAnUnknownNameSaysWhichResolver(t *testing.T) {
	f := newFixture(t, false)
	_, err := f.in.SendActivity(context.Background(), adminapi.SendRequest{From: "alice@flood1.test", Type: "Follow", To: "acct:admin@sut.test"})
	if !errors.Is(err, ErrTarget) || !strings.Contains(err.Error(), "no such host") || !strings.Contains(err.Error(), "not with its own DNS's --dns-record") {
		t.Errorf("%v: want the target unresolved, and which resolver looked", err)
	}
}

// TestNeverSent: which failures of a post left the request unsent, so that
// a Follow registered for it is taken back.
func TestNeverSent(t *testing.T) {
	post := func(err error) error { return &url.Error{Op: "Post", URL: "https://sut.test/inbox", Err: err} }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false}, // answered: the status decides
		{"connection refused", post(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"a certificate not trusted", post(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), true},
		{"a certificate for another name", post(x509.HostnameError{Host: "sut.test", Certificate: &x509.Certificate{}}), true},
		{"not TLS at all", post(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), true},
		{"a reset after the request went", post(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), false},
		{"a timeout", post(context.DeadlineExceeded), false},
	} {
		if got := neverSent(tc.err); got != tc.want {
			t.Errorf("%s: neverSent = %v, want %v", tc.name, got, tc.want)
		}
	}
}
