package loadrun

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/recordtest"
	"github.com/crowdfed/crowd/pasture"
)

// TestFetchbackWindowInProcess: a standalone run's window, opened in the
// crowd of this process, counts the fetches served over a real listener
// during the run and the grace after its end, and puts them in the record
// with the amplification over its sends.
func TestFetchbackWindowInProcess(t *testing.T) {
	fw := pasture.NewFetchWindows(nil)
	srv := httptest.NewServer(fw.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("{}"))
	})))
	defer srv.Close()
	get := func(path string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	r := &runner{c: Config{Fetchback: FetchbackConfig{Grace: 300 * time.Millisecond}}, log: zap.NewNop(),
		env: &Environment{Fetchbacks: localFetchbacks{fw}}}
	w := r.openFetchback(context.Background(), "test")
	if w == nil {
		t.Fatal("no window opened")
	}
	get("/users/alice")
	note := (&actors.Actor{ID: srv.URL + "/users/alice"}).NoteID(actors.NoteSpec{Seq: 1, MentionID: "m", MentionHandle: "@m@sut.test"})
	get(strings.TrimPrefix(note, srv.URL)) // a plain note: its Create's
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
}

// TestFetchLeaverNamesAgree: the record attributes leaver fetches by the
// name the crowd's tally gives them; the two packages must not drift.
func TestFetchLeaverNamesAgree(t *testing.T) {
	if adminapi.FetchLeaver != record.FetchLeaver {
		t.Errorf("adminapi.FetchLeaver %q, record.FetchLeaver %q", adminapi.FetchLeaver, record.FetchLeaver)
	}
}

// TestFetchCreditsAreRecordTypes: every type the crowd credits a fetch to
// is an activity type of the record's mix, so its amplification row finds it.
func TestFetchCreditsAreRecordTypes(t *testing.T) {
	kinds := map[string]bool{}
	for _, k := range (record.Mix{Create: 1, Like: 1, Follow: 1, Announce: 1, Undo: 1, Delete: 1, Update: 1, Reply: 1, Media: 1}).Weights() {
		kinds[string(k.Kind)] = true
	}
	for _, c := range adminapi.Credits() {
		if !kinds[c] {
			t.Errorf("the crowd credits fetches to %q, no type of the record", c)
		}
	}
}
