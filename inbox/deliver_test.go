package inbox

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/adminapi"
)

// TestDeliveryRetry: the remote answers 503 twice, then 202: the Accept is
// delivered on the third try, and each try is in the log.
func TestDeliveryRetry(t *testing.T) {
	f := newFixture(t, true)
	f.remote.setStatuses(0, http.StatusServiceUnavailable, http.StatusServiceUnavailable)
	alice := f.actor("alice@flood1.test")
	bob := remoteID("bob")
	if s, b := f.deliver("/users/alice/inbox", "bob", followJSON(bob+"/f/1", bob, alice.ID)); s != http.StatusAccepted {
		t.Fatal(s, b)
	}
	eventually(t, "delivery", func() bool { return len(f.entries(Filter{Direction: DirOut})) == 3 && len(queueFiles(t, f.state)) == 0 })
	out := f.entries(Filter{Direction: DirOut})
	for i, want := range []struct {
		verdict string
		status  int
	}{{VerdictRetrying, 503}, {VerdictRetrying, 503}, {VerdictDelivered, 202}} {
		if out[i].Verdict != want.verdict || out[i].Status != want.status || out[i].Attempt != i+1 {
			t.Errorf("try %d: %s %d (attempt %d), want %s %d", i+1, out[i].Verdict, out[i].Status, out[i].Attempt, want.verdict, want.status)
		}
	}
	if p := f.remote.postsTo("/users/bob/inbox"); len(p) != 3 || p[2].VerifyErr != nil {
		t.Errorf("remote got %d posts (last verify: %v)", len(p), p[len(p)-1].VerifyErr)
	}
	if n := metricValue(t, f.reg, "crowd_outgoing_deliveries_total", map[string]string{"outcome": "retry"}); n != 2 {
		t.Errorf("retry counter %v", n)
	}
}

// TestDeliveryGiveUp: failures that never end are given up after
// MaxAttempts, loudly (zap error, metric, log entry), and the queue file
// is removed; an answer no retry can change is given up at once.
func TestDeliveryGiveUp(t *testing.T) {
	tests := []struct {
		name     string
		status   int // what the remote always answers
		attempts int // tries before giving up
	}{
		// A server that stays down: every try is used.
		{"503 forever", http.StatusServiceUnavailable, 3},
		// 401 may be transient (our key not yet fetched): retried too.
		{"401 forever", http.StatusUnauthorized, 3},
		// 403 will not change: given up on the first answer.
		{"403", http.StatusForbidden, 1},
		// The recipient's inbox is gone.
		{"410", http.StatusGone, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.ErrorLevel)
			f := newFixture(t, true, func(c *Config) { c.Logger = zap.New(core) })
			f.remote.setStatuses(tt.status)
			alice := f.actor("alice@flood1.test")
			bob := remoteID("bob")
			if s, b := f.deliver("/users/alice/inbox", "bob", followJSON(bob+"/f/1", bob, alice.ID)); s != http.StatusAccepted {
				t.Fatal(s, b)
			}
			eventually(t, "giving up", func() bool {
				return len(f.entries(Filter{Direction: DirOut, Type: "Accept"})) == tt.attempts && len(queueFiles(t, f.state)) == 0
			})
			out := f.entries(Filter{Direction: DirOut})
			last := out[len(out)-1]
			if last.Verdict != VerdictGaveUp || last.Status != tt.status || !strings.Contains(last.Reason, "remote says no") {
				t.Errorf("last entry %+v", last)
			}
			eventually(t, "the zap error", func() bool { return logs.FilterMessage("delivery given up").Len() == 1 })
			if n := metricValue(t, f.reg, "crowd_outgoing_deliveries_total", map[string]string{"outcome": "gave_up"}); n != 1 {
				t.Errorf("gave_up counter %v", n)
			}
			if d := metricValue(t, f.reg, "crowd_delivery_queue_depth", nil); d != 0 {
				t.Errorf("queue depth %v", d)
			}
		})
	}
}

// TestDeliverySurvivesCrash: a Follow answered 202 while the remote is
// down; the process dies (no Shutdown); a new process on the same state
// dir has the follower and delivers the Accept.
func TestDeliverySurvivesCrash(t *testing.T) {
	tests := []struct {
		name  string
		start bool // whether the first process ran its workers (and failed a try) before dying
	}{
		// kill -9 right after the 202, before any try.
		{"killed before any try", false},
		// kill -9 while the Accept waits for its next try.
		{"killed while backing off", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			world := openWorld(t, state)
			remote := newRemote(t, world)
			remote.setStatuses(http.StatusServiceUnavailable)
			cfg := Config{World: world, Client: remote.client, Logger: zap.NewNop(),
				Delivery: DeliveryConfig{BaseDelay: time.Hour, Workers: 1}}
			first, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, kill := context.WithCancel(context.Background())
			if tt.start {
				first.Start(ctx)
			}
			alice, _ := world.ActorByID("https://flood1.test/users/alice")
			bob := remoteID("bob")
			fx := &fixture{t: t, remote: remote}
			srv := httptest.NewServer(addressed(world, first))
			defer srv.Close()
			fx.srv = srv
			if s, b := fx.deliver("/users/alice/inbox", "bob", followJSON(bob+"/f/1", bob, alice.ID)); s != http.StatusAccepted {
				t.Fatal(s, b)
			}
			if tt.start {
				eventually(t, "the failed try", func() bool {
					e := first.Log().Latest(0, Filter{Direction: DirOut})
					return len(e) == 1 && e[0].Verdict == VerdictRetrying
				})
			}
			// The crash: the workers stop where they are, nothing is
			// flushed or closed; a torn temp file is left behind too.
			kill()
			srv.Close()
			os.WriteFile(filepath.Join(state, "outbox", ".tmp-torn"), []byte(`{"id":`), 0o600)
			world.Close()

			world2 := openWorld(t, state)
			defer world2.Close()
			if rels := world2.Graph.Followers(alice.ID); len(rels) != 1 || rels[0].Remote != bob {
				t.Fatalf("followers after the crash: %+v", rels)
			}
			remote.setStatuses(0)
			cfg.World = world2
			cfg.Delivery.BaseDelay = 0
			second, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(second.Pending()); n != 1 {
				t.Fatalf("%d deliveries pending after restart", n)
			}
			if err := second.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer second.Shutdown(context.Background())
			eventually(t, "the Accept after restart", func() bool {
				for _, p := range remote.postsTo("/users/bob/inbox") {
					if p.VerifyErr == nil && strings.Contains(string(p.Body), `"type":"Accept"`) && len(second.Pending()) == 0 {
						return true
					}
				}
				return false
			})
			if files := queueFiles(t, state); len(files) != 0 {
				t.Errorf("queue files left: %v", files)
			}
			if _, err := os.Stat(filepath.Join(state, "outbox", ".tmp-torn")); err == nil {
				t.Error("the torn temp file was not cleaned up")
			}
		})
	}
}

// TestBackoff: the waits double from BaseDelay, are capped, spread by the
// jitter, and honour Retry-After.
func TestBackoff(t *testing.T) {
	in := &Inbox{cfg: Config{Delivery: DeliveryConfig{BaseDelay: 5 * time.Second, MaxDelay: 5 * time.Minute, Jitter: 0.2}}}
	tests := []struct {
		name       string
		n          int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		// First failure: BaseDelay ± 20 %.
		{"first", 1, 0, 4 * time.Second, 6 * time.Second},
		// Fourth: 5 s · 2³ = 40 s ± 20 %.
		{"fourth", 4, 0, 32 * time.Second, 48 * time.Second},
		// Far along: capped at MaxDelay (± jitter).
		{"capped", 30, 0, 4 * time.Minute, 6 * time.Minute},
		// A Retry-After longer than the backoff wins.
		{"retry-after", 1, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute},
		// …but never beyond MaxDelay.
		{"retry-after capped", 1, time.Hour, 4 * time.Minute, 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 100 {
				if d := in.backoff(tt.n, tt.retryAfter); d < tt.lo || d > tt.hi {
					t.Fatalf("backoff(%d, %s) = %s, want in [%s, %s]", tt.n, tt.retryAfter, d, tt.lo, tt.hi)
				}
			}
		})
	}
	// Eight tries with the defaults span roughly ten minutes.
	total := time.Duration(0)
	in.cfg.Delivery.Jitter = 0.0001
	for n := 1; n < 8; n++ {
		total += in.backoff(n, 0)
	}
	if total < 9*time.Minute || total > 12*time.Minute {
		t.Errorf("8 tries span %s", total)
	}
}

// TestParseRetryAfter covers both forms of Retry-After.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, v string
		want    time.Duration
	}{
		{"absent", "", 0},                                      // nothing to honour
		{"seconds", "120", 2 * time.Minute},                    // delay-seconds
		{"date", "Thu, 01 Jan 2026 12:01:00 GMT", time.Minute}, // HTTP date
		{"past date", "Thu, 01 Jan 2026 11:00:00 GMT", 0},      // already passed
		{"garbage", "soon", 0},                                 // unparsable: ignored
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRetryAfter(tt.v, now); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestEnqueueValidation: deliveries that could never be sent are refused.
func TestEnqueueValidation(t *testing.T) {
	f := newFixture(t, false)
	alice := f.actor("alice@flood1.test")
	tests := []struct {
		name string
		d    Delivery
		ok   bool
	}{
		// Complete: From, Activity and a target.
		{"ok", Delivery{From: alice.ID, To: remoteID("bob"), Activity: []byte(`{"id":"https://flood1.test/x","type":"Like","actor":"https://flood1.test/users/alice"}`)}, true},
		// No sender.
		{"no from", Delivery{To: remoteID("bob"), Activity: []byte(`{}`)}, false},
		// Nowhere to send.
		{"no target", Delivery{From: alice.ID, Activity: []byte(`{}`)}, false},
		// An id that would escape the queue directory.
		{"path id", Delivery{ID: "../../etc", From: alice.ID, To: remoteID("bob"), Activity: []byte(`{}`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.in.Enqueue(tt.d)
			if (err == nil) != tt.ok {
				t.Errorf("Enqueue: %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if p := f.in.Pending(); len(p) != 1 || p[0].Type != "Like" {
		t.Errorf("pending: %+v", p)
	}
}

// TestDeliveryToVanishedActor: a recipient whose actor document is gone
// (404), or is not an ActivityPub document, is given up at once, with the
// reason; /api/deliveries shows the queue while it waits.
func TestDeliveryToVanishedActor(t *testing.T) {
	for _, tc := range []struct {
		name, to, reason string
	}{
		// No such actor: no retry brings it back.
		{"404", "ghost", "gone (HTTP 404)"},
		// Served as application/json: Mastodon refuses the document, and so does the crowd.
		{"wrong Content-Type", "badguy", "Content-Type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, false)
			alice := f.actor("alice@flood1.test")
			err := f.in.Enqueue(Delivery{From: alice.ID, To: remoteID(tc.to),
				Activity: []byte(`{"id":"https://flood1.test/users/alice#x","type":"Accept","actor":"https://flood1.test/users/alice","object":"https://example.com/f/1"}`)})
			if err != nil {
				t.Fatal(err)
			}
			var pending []Delivery
			getJSON(t, adminServer(t, f).URL+adminapi.RouteDeliveries.Path(), &pending)
			if len(pending) != 1 || pending[0].To != remoteID(tc.to) || pending[0].Type != "Accept" {
				t.Fatalf("pending: %+v", pending)
			}
			if err := f.in.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			eventually(t, "giving up", func() bool { return len(f.in.Pending()) == 0 })
			out := f.entries(Filter{Direction: DirOut})
			if len(out) != 1 || out[0].Verdict != VerdictGaveUp || !strings.Contains(out[0].Reason, tc.reason) {
				t.Errorf("log: %+v", out)
			}
		})
	}
}
