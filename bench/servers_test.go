package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/pasture"
	"github.com/crowdfed/crowd/signing"
)

// TestBareDocumentsAnswerTheRoutersBytes: the documents rows compare the
// router with a bare handler answering the same bytes, so over real
// listeners the two answer every canned request with the same status,
// the same header fields (but Date) and the same body.
func TestBareDocumentsAnswerTheRoutersBytes(t *testing.T) {
	world, err := openWorld(t.TempDir(), 1, 2, signing.GoBackend())
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	p, err := pasture.New(pasture.Config{World: world, Version: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	router := p.Handler()
	answers, actorReqs, wfReqs, err := cannedDocuments(router, world)
	if err != nil {
		t.Fatal(err)
	}
	if len(actorReqs) != 2 || len(wfReqs) != 2 {
		t.Fatalf("%d actor and %d WebFinger requests, want 2 each", len(actorReqs), len(wfReqs))
	}
	routerSrv, bareSrv := httptest.NewServer(router), httptest.NewServer(bareDocuments(answers))
	defer routerSrv.Close()
	defer bareSrv.Close()
	get := func(srv *httptest.Server, d docReq) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+d.url.RequestURI(), nil)
		req.Host, req.Header = d.url.Host, d.header
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Header.Del("Date")
		return resp, body
	}
	for _, d := range slices.Concat(actorReqs, wfReqs) {
		want, wantBody := get(routerSrv, d)
		got, gotBody := get(bareSrv, d)
		if want.StatusCode != http.StatusOK || got.StatusCode != want.StatusCode {
			t.Errorf("%s: status %d, the router's %d", d.url, got.StatusCode, want.StatusCode)
		}
		// Both kinds carry a field beyond Content-Type: the comparison is not empty.
		if len(want.Header) < 3 {
			t.Errorf("%s: the router answered only %v", d.url, want.Header)
		}
		for k, v := range want.Header {
			if !slices.Equal(got.Header[k], v) {
				t.Errorf("%s: %s %q, the router's %q", d.url, k, got.Header[k], v)
			}
		}
		for k := range got.Header {
			if _, ok := want.Header[k]; !ok {
				t.Errorf("%s: %s, which the router did not send", d.url, k)
			}
		}
		if !bytes.Equal(gotBody, wantBody) {
			t.Errorf("%s: the bodies differ", d.url)
		}
	}
}

// TestRoundsReverseTheOrderEveryOtherRound: the closed-loop rounds measure
// the sides A, B, … in even rounds and …, B, A in odd ones, so no side is
// always the first of a round; each side's median is of its own rates.
func TestRoundsReverseTheOrderEveryOtherRound(t *testing.T) {
	tests := []struct {
		name      string
		sides     int
		rounds    int
		wantOrder string // the sides' letters in the order they were measured
	}{
		// A pair: A B, then B A.
		{"a pair, four rounds", 2, 4, "ABBAABBA"},
		// An odd number of rounds ends as it began.
		{"a pair, three rounds", 2, 3, "ABBAAB"},
		// Four sides (the inbox backends' row): reversed whole.
		{"four sides", 4, 2, "ABCDDCBA"},
		// One side (the wrk replay) is measured alone every round.
		{"one side", 1, 3, "AAA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var order strings.Builder
			var names []string
			var fns []func(context.Context) loopResult
			for i := range tt.sides {
				side := string(rune('A' + i))
				names = append(names, side)
				n := 0
				fns = append(fns, func(context.Context) loopResult {
					order.WriteString(side)
					n++
					return loopResult{Rate: float64(100*(i+1) + n)} // side i's k-th rate: 100(i+1)+k
				})
			}
			b := &bench{cfg: config{Rounds: tt.rounds}, log: io.Discard, start: time.Now()}
			meds, all := b.rounds(context.Background(), names, fns)
			if got := order.String(); got != tt.wantOrder {
				t.Errorf("measured %s, want %s", got, tt.wantOrder)
			}
			for i, name := range names {
				if len(all[name]) != tt.rounds {
					t.Errorf("side %s measured %d times, want %d", name, len(all[name]), tt.rounds)
				}
				// The median of 1..rounds, offset by the side's hundreds.
				if want := float64(100*(i+1)) + float64(tt.rounds+1)/2; meds[i] != want {
					t.Errorf("side %s median %g, want %g", name, meds[i], want)
				}
			}
		})
	}
}
