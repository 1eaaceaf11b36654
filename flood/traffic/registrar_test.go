package traffic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
)

// TestRegistrar: the Follows a run sent are registered in a graph and
// through the admin API (a refusal counted failed), and a full queue drops
// them, counted, rather than block the sends.
func TestRegistrar(t *testing.T) {
	t.Run("graph", func(t *testing.T) {
		g := actors.NewMemoryGraph()
		r := NewRegistrar(GraphRegister(g), RegistrarOptions{})
		r.Add(FollowRegistration{Local: "https://flood1.test/users/alice", Remote: "https://sut.test/users/a", FollowID: "f1"})
		st := r.Close(context.Background())
		if st.Registered != 1 || st.Failed != 0 {
			t.Fatalf("stats %+v", st)
		}
		if rel, ok := g.FollowingByRemote("https://flood1.test/users/alice", "https://sut.test/users/a"); !ok || rel.State != actors.StatePending || rel.FollowID != "f1" {
			t.Errorf("graph has %+v, %v; want a pending follow f1", rel, ok)
		}
		r.Add(FollowRegistration{FollowID: "late"})
		if st := r.Close(context.Background()); st.Failed != 1 {
			t.Errorf("Add after Close: %+v, want it counted failed", st)
		}
	})
	t.Run("admin API", func(t *testing.T) {
		var mu sync.Mutex
		var bodies []FollowRegistration
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var f FollowRegistration
			if r.Method != http.MethodPost || r.URL.Path != adminapi.RouteFollowing.Path() || json.NewDecoder(r.Body).Decode(&f) != nil {
				http.Error(w, `{"error":"bad"}`, http.StatusBadRequest)
				return
			}
			if f.Local == "refuse" {
				http.Error(w, `{"error":"no such crowd actor"}`, http.StatusNotFound)
				return
			}
			mu.Lock()
			bodies = append(bodies, f)
			mu.Unlock()
			w.Write([]byte(`{}`))
		}))
		defer srv.Close()
		admin, err := adminapi.New(srv.URL, adminapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := NewRegistrar(func(ctx context.Context, f FollowRegistration) error {
			_, err := admin.RegisterFollowing(ctx, adminapi.FollowingRequest(f))
			return err
		}, RegistrarOptions{Workers: 2})
		for i := range 10 {
			r.Add(FollowRegistration{Local: "https://flood1.test/users/bob", Remote: "https://sut.test/users/a", FollowID: fmt.Sprint(i)})
		}
		r.Add(FollowRegistration{Local: "refuse", FollowID: "x"})
		st := r.Close(context.Background())
		if st.Registered != 10 || st.Failed != 1 || len(bodies) != 10 {
			t.Errorf("stats %+v with %d bodies; want 10 registered, 1 refused", st, len(bodies))
		}
	})
	t.Run("a full queue drops instead of blocking", func(t *testing.T) {
		release := make(chan struct{})
		r := NewRegistrar(func(ctx context.Context, _ FollowRegistration) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, RegistrarOptions{Queue: 2, Workers: 1})
		done := make(chan struct{})
		go func() {
			for range 10 {
				r.Add(FollowRegistration{FollowID: "f"})
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Add blocked on a full queue")
		}
		close(release)
		st := r.Close(context.Background())
		// One in the worker, two queued; the other seven were dropped.
		if st.Registered+st.Failed != 10 || st.Failed < 7 {
			t.Errorf("stats %+v, want ≥ 7 of 10 dropped", st)
		}
	})
}
