package traffic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// createSource hands out Creates, each with its own note for the outbox.
type createSource struct {
	url   *url.URL
	taken []*flood.Prepared
}

func (s *createSource) Next(context.Context) (*flood.Prepared, error) {
	n := len(s.taken)
	p := (&Ticket{Outbox: &actors.SentNote{Actor: "https://flood1.test/users/alice", Note: fmt.Sprintf("https://flood1.test/users/alice/notes/n%d", n)}}).Attach(&flood.Prepared{Type: record.TypeCreate, Method: http.MethodPost, URL: s.url, Header: http.Header{}, Body: []byte(`{"type":"Create"}`)})
	s.taken = append(s.taken, p)
	return p, nil
}

// TestOutboxFeedFeedsOnlySentCreates: a run with answered, aborted,
// dropped and never-due Creates feeds the outbox sink with exactly those
// that left (answered or aborted: the target may have them),
// in batches of at most OutboxFeedOptions.Batch, each full but the last.
func TestOutboxFeedFeedsOnlySentCreates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The crowd's outboxes: the sink takes every batch and keeps it.
		var mu sync.Mutex
		var batches [][]actors.SentNote
		feed := NewOutboxFeed(func(_ context.Context, items []actors.SentNote) error {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, slices.Clone(items))
			return nil
		}, OutboxFeedOptions{Batch: 4, Every: time.Hour})

		// The SUT answers after 35 ms: with 3 slots at 100/s some sends are
		// dropped, and the interruption aborts some and leaves one undue.
		sut := answersAfter(35 * time.Millisecond)
		u, _ := url.Parse("http://sut.test/inbox")
		src := &createSource{url: u}
		var sent, unsent []string
		var hmu sync.Mutex
		heard := func(tk *Ticket, d record.Outcome) {
			hmu.Lock()
			defer hmu.Unlock()
			if d.Sent {
				sent = append(sent, tk.Outbox.Note)
			} else {
				unsent = append(unsent, tk.Outbox.Note)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(1005*time.Millisecond, cancel)
		mustRun(t, ctx, flood.Plan{Limits: flood.Limits{Duration: 10 * time.Second, MaxInflight: 3}, Sleep: time.Sleep, Pacer: mustConstant(t, 100),
			Source: src, Transport: sut}, Settle(heard, feed.Settled))
		st := feed.Close(context.Background())

		var fed []string
		for i, b := range batches {
			if len(b) > 4 || (len(b) < 4 && i < len(batches)-1) {
				t.Errorf("batch %d of %d carries %d items, want 4 (the last up to 4)", i, len(batches), len(b))
			}
			for _, it := range b {
				fed = append(fed, it.Note)
			}
		}
		if len(unsent) == 0 || len(sent) == 0 {
			t.Fatalf("the run should have sent and left unsent some Creates: %d sent, %d not", len(sent), len(unsent))
		}
		slices.Sort(fed)
		slices.Sort(sent)
		if !slices.Equal(fed, sent) || st.Fed != int64(len(sent)) || st.Failed != 0 {
			t.Errorf("fed %d notes (%+v), want the %d sent and none of the %d unsent", len(fed), st, len(sent), len(unsent))
		}
	})
}

// TestOutboxFeedCountsWhatTheSinkRefused: a sink that fails counts its
// items failed with the first reason; nothing blocks.
func TestOutboxFeedCountsWhatTheSinkRefused(t *testing.T) {
	feed := NewOutboxFeed(func(context.Context, []actors.SentNote) error { return errors.New("refused") },
		OutboxFeedOptions{Batch: 2, Every: time.Hour})
	p := (&Ticket{Outbox: &actors.SentNote{Actor: "a", Note: "a/notes/1"}}).Attach(&flood.Prepared{Type: record.TypeCreate})
	for _, d := range []record.Outcome{{Sent: true}, {Sent: true, Aborted: true}, {Sent: true, Class: record.ClassConnError}, {}} {
		feed.Settled(TicketOf(p), d)
	}
	feed.Settled(TicketOf((&Ticket{}).Attach(&flood.Prepared{Type: record.TypeLike})), record.Outcome{Sent: true}) // not a Create: nothing to feed
	st := feed.Close(context.Background())
	if st.Fed != 0 || st.Failed != 3 || st.FirstError != "outbox: refused" {
		t.Errorf("stats %+v, want 3 failed (the sent ones) with the sink's reason", st)
	}
}
