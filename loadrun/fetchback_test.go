package loadrun

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
	"github.com/crowdfed/crowd/pasture/fetchback"
)

// TestFetchbackWindowInProcess: a standalone run's window, opened in the
// crowd of this process, counts the fetches its middleware serves during the
// run and the grace after its end, and puts them in the record with the
// amplification over its sends. On synctest's fake clock the fetch made
// 100 ms into a 300 ms grace is inside it on any machine.
func TestFetchbackWindowInProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const origin = "http://crowd.test"
		fw := fetchback.New(nil)
		served := fw.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("{}"))
		}))
		get := func(path string) {
			served.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, origin+path, nil))
		}
		r := &runner{c: Config{Fetchback: FetchbackConfig{Grace: 300 * time.Millisecond}}, log: zap.NewNop(),
			env: &Environment{Fetchbacks: localFetchbacks{fw}}}
		w := r.openFetchback(context.Background(), "test")
		if w == nil {
			t.Fatal("no window opened")
		}
		get("/users/alice")
		note := (&actors.Actor{ID: origin + "/users/alice"}).NoteID(actors.NoteSpec{Seq: 1, MentionID: "m", MentionHandle: "@m@sut.test"})
		get(strings.TrimPrefix(note, origin)) // a plain note: its Create's
		res := recordtest.Run(time.Now(), time.Second, map[string]*record.Stats{
			"Create": recordtest.Sends(10, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))})
		rec := recordtest.MustRecord(t, res, record.Settings{})
		done := make(chan struct{})
		go func() { w.finish(context.Background(), rec); close(done) }()
		time.Sleep(100 * time.Millisecond) // within the grace, after the end
		get("/.well-known/webfinger")
		<-done
		fb := rec.Fetchback
		if fb == nil {
			t.Fatal("no fetchback section")
		}
		if fb.Total.Fetches != 3 || fb.Kinds["webfinger"].AfterEnd != 1 || fb.Kinds["actor"].AfterEnd != 0 || fb.Objects["notes"] != 1 {
			t.Errorf("section %+v total %+v", fb.Kinds, fb.Total)
		}
		if a := fb.Amplification[0]; a.Type != "Create" || a.Fetches != 1 || a.PerActivity != 0.1 {
			t.Errorf("Create amplification %+v", a)
		}
		if len(fw.Tallies("")) != 0 {
			t.Errorf("the window is still open after the run")
		}
		if (&runner{c: Config{Fetchback: FetchbackConfig{Off: true}}, env: r.env}).openFetchback(context.Background(), "off") != nil {
			t.Errorf("--fetchback=false opened a window")
		}
	})
}

// ctxFetchbacks is the in-process counter as the admin API's client
// behaves: a call whose context is done fails with its error.
type ctxFetchbacks struct{ localFetchbacks }

func (c ctxFetchbacks) End(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.localFetchbacks.End(ctx, id)
}

func (c ctxFetchbacks) Close(ctx context.Context, id string) (adminapi.FetchbackTally, error) {
	if err := ctx.Err(); err != nil {
		return adminapi.FetchbackTally{}, err
	}
	return c.localFetchbacks.Close(ctx, id)
}

// TestFetchbackGraceAnyLength: the grace may be any length (up to the
// flag's 10 min) and the window is still closed and read, on synctest's
// fake clock: a grace longer than one call's bound to the crowd once lost
// the whole section ("context deadline exceeded").
func TestFetchbackGraceAnyLength(t *testing.T) {
	for _, grace := range []time.Duration{0, 3 * time.Second, 10 * time.Second, 53 * time.Second, 10 * time.Minute} {
		t.Run(grace.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fw := fetchback.New(nil)
				r := &runner{c: Config{Fetchback: FetchbackConfig{Grace: grace}}, log: zap.NewNop(),
					env: &Environment{Fetchbacks: ctxFetchbacks{localFetchbacks{fw}}}}
				w := r.openFetchback(context.Background(), "grace")
				rec := recordtest.MustRecord(t, recordtest.Run(time.Now(), time.Second, map[string]*record.Stats{
					"Create": recordtest.Sends(1, func(int) time.Duration { return time.Millisecond }, recordtest.Always(record.Class202))}), record.Settings{})
				start := time.Now()
				w.finish(context.Background(), rec)
				if rec.Fetchback == nil || rec.Fetchback.GraceSeconds != grace.Seconds() {
					t.Fatalf("fetchback section %+v after a %s grace", rec.Fetchback, grace)
				}
				if waited := time.Since(start); waited != grace {
					t.Errorf("waited %s, want the grace %s", waited, grace)
				}
				if len(fw.Tallies("")) != 0 {
					t.Error("the window is still open")
				}
			})
		})
	}
}

// TestFetchCreditsAreRecordTypes: every type the crowd credits a fetch to
// is an activity type of the record's mix, so its amplification row finds it.
func TestFetchCreditsAreRecordTypes(t *testing.T) {
	kinds := map[string]bool{}
	for _, k := range (record.Mix{Create: 1, Like: 1, Follow: 1, Announce: 1, Undo: 1, Delete: 1, Update: 1, Reply: 1, Media: 1}).Weights() {
		kinds[string(k.Kind)] = true
	}
	for _, c := range []string{adminapi.CreditCreate, adminapi.CreditReply, adminapi.CreditMedia, adminapi.CreditAnnounce,
		adminapi.CreditLike, adminapi.CreditFollow, adminapi.CreditUndo, adminapi.CreditDelete, adminapi.CreditUpdate} {
		if !kinds[c] {
			t.Errorf("the crowd credits fetches to %q, no type of the record", c)
		}
	}
}
