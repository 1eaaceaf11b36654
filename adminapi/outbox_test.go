package adminapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/crowdtest"
)

// TestOutboxThroughTheAdminAPI: Creates another process reports through
// RouteOutbox are listed by the actor's outbox, as the origin serves it,
// newest first with the true count; a batch with a bad item is refused
// whole; a restart keeps them.
func TestOutboxThroughTheAdminAPI(t *testing.T) {
	state := t.TempDir()
	cr := crowdtest.Start(t, crowdtest.Options{StateDir: state})
	c := crowd{cr}.client(t)
	ctx := context.Background()
	a, _ := cr.World.ActorByID(alice)
	var items []adminapi.OutboxItem
	for i := range 3 {
		id := a.NoteID(actors.NoteSpec{Published: time.Date(2026, 3, 1, 12, i, 0, 0, time.UTC), Seq: uint64(i), Bytes: 50,
			MentionID: bob, MentionHandle: "@bob@flood2.test"})
		items = append(items, adminapi.OutboxItem{Actor: alice, Note: id})
	}
	if err := c.RecordOutbox(ctx, items); err != nil {
		t.Fatal(err)
	}
	// A note of alice's reported as bob's: 400, and the good item before
	// it is not recorded either.
	var apiErr *adminapi.Error
	err := c.RecordOutbox(ctx, []adminapi.OutboxItem{items[0], {Actor: bob, Note: items[1].Note}})
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("a foreign note: %v, want 400", err)
	}
	wantOutbox(t, cr.Pasture.Handler(), items)

	cr.Stop()
	again := crowdtest.Start(t, crowdtest.Options{StateDir: state, Unstarted: true})
	wantOutbox(t, again.Pasture.Handler(), items)
}

// wantOutbox GETs alice's outbox and its first page from the origin
// handler and checks they count and list sent, newest first.
func wantOutbox(t *testing.T, origin http.Handler, sent []adminapi.OutboxItem) {
	t.Helper()
	var root, page struct {
		Type         string
		TotalItems   int
		First        string
		OrderedItems []struct {
			ID, Type string
			Object   struct{ ID string }
		}
	}
	get := func(url string, v any) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", actors.ContentTypeActivity)
		origin.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	get(alice+"/outbox", &root)
	if root.Type != "OrderedCollection" || root.TotalItems != len(sent) || root.First != alice+"/outbox?page=1" {
		t.Errorf("outbox %+v, want an OrderedCollection of %d", root, len(sent))
	}
	get(root.First, &page)
	if page.TotalItems != len(sent) || len(page.OrderedItems) != len(sent) {
		t.Fatalf("page 1: %d items of %d, want %d", len(page.OrderedItems), page.TotalItems, len(sent))
	}
	for i, it := range page.OrderedItems {
		want := sent[len(sent)-1-i].Note
		if it.Type != "Create" || it.Object.ID != want || it.ID != want+"/activity" {
			t.Errorf("item %d: %s %s of %s, want the Create of %s", i, it.Type, it.ID, it.Object.ID, want)
		}
	}
}
