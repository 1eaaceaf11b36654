package flood

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/pipenet"
)

// TestParseRateLimit: each row is an answer as a real server (or the IETF
// draft) shapes its rate-limit fields, and what the record keeps of it.
func TestParseRateLimit(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	const (
		lim  = record.SaidLimit
		rem  = record.SaidRemaining
		win  = record.SaidWindow
		rst  = record.SaidReset
		ietf = record.SaidIETF
		ra   = record.SaidRetryAfter
	)
	cases := []struct {
		name string
		hdr  map[string]string
		want record.RateLimitSample
	}{
		// Mastodon's 429: X-RateLimit-* with Reset as ISO 8601 (microseconds), no Retry-After.
		{"mastodon", map[string]string{"X-RateLimit-Limit": "300", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "2026-12-02T03:04:30.000000Z"},
			record.RateLimitSample{Said: lim | rem | rst, Limit: 300, Remaining: 0, ResetIn: 270 * time.Second, ResetAt: now.Add(270 * time.Second)}},
		// GoToSocial's: Reset in epoch seconds.
		{"gotosocial", map[string]string{"X-RateLimit-Limit": "300", "X-RateLimit-Remaining": "12", "X-RateLimit-Reset": strconv.FormatInt(now.Unix()+60, 10)},
			record.RateLimitSample{Said: lim | rem | rst, Limit: 300, Remaining: 12, ResetIn: time.Minute, ResetAt: now.Add(time.Minute)}},
		// Reset as seconds from now, with Retry-After beside it.
		{"delta reset with Retry-After", map[string]string{"X-RateLimit-Reset": "1.5", "Retry-After": "2"},
			record.RateLimitSample{Said: rst | ra, ResetIn: 1500 * time.Millisecond, ResetAt: now.Add(1500 * time.Millisecond)}},
		// A reset already past resets now, never a negative wait.
		{"reset in the past", map[string]string{"X-RateLimit-Reset": "2026-12-02T02:59:00Z"},
			record.RateLimitSample{Said: rst, ResetAt: now}},
		// The draft's early separate fields (express-rate-limit's draft-6 mode).
		{"draft-6 fields", map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "99", "RateLimit-Reset": "30"},
			record.RateLimitSample{Said: lim | rem | rst, Limit: 100, Remaining: 99, ResetIn: 30 * time.Second, ResetAt: now.Add(30 * time.Second)}},
		// The draft-7 dictionary with its policy as a bare quota and w.
		{"draft-7 dictionary", map[string]string{"RateLimit": "limit=100, remaining=50, reset=5", "RateLimit-Policy": "100;w=60"},
			record.RateLimitSample{Said: lim | rem | rst | win | ietf, Limit: 100, Remaining: 50, Window: time.Minute, ResetIn: 5 * time.Second, ResetAt: now.Add(5 * time.Second)}},
		// The current draft's lists: the most constrained policy binds.
		{"current draft lists", map[string]string{"RateLimit": `"burst";r=40;t=1, "day";r=5;t=3600`, "RateLimit-Policy": `"burst";q=100;w=1, "day";q=1000;w=86400`},
			record.RateLimitSample{Said: lim | rem | rst | win | ietf, Limit: 100, Remaining: 5, Window: time.Second, ResetIn: time.Hour, ResetAt: now.Add(time.Hour)}},
		// A token as the policy name parses as a dictionary member: still the list shape.
		{"token policy name", map[string]string{"RateLimit": `default;r=3;t=10`},
			record.RateLimitSample{Said: rem | rst | ietf, Remaining: 3, ResetIn: 10 * time.Second, ResetAt: now.Add(10 * time.Second)}},
		// Garbage is left out, never guessed: negative, words, absurd windows, bad syntax.
		{"garbage", map[string]string{"X-RateLimit-Limit": "-5", "X-RateLimit-Remaining": "lots", "X-RateLimit-Reset": "99999999999999999999", "RateLimit": `limit="x"`, "RateLimit-Policy": `10;w=999999999999`},
			record.RateLimitSample{Said: lim | ietf, Limit: 10}},
		// Nothing said: a plain answer.
		{"none", map[string]string{"Content-Type": "text/plain"}, record.RateLimitSample{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.hdr {
				h.Set(k, v)
			}
			got := parseRateLimit(h, func() time.Time { return now })
			// The fields an answer the dispatcher reads keeps
			// (rateLimitField, its names in another case) say the same.
			kept := http.Header{}
			for k, v := range h {
				if rateLimitField([]byte(strings.ToLower(k))) {
					kept[k] = v
				}
			}
			if k := parseRateLimit(kept, func() time.Time { return now }); k != got {
				t.Errorf("from the fields kept: %+v\nfrom all: %+v", k, got)
			}
			if !got.ResetAt.Equal(tc.want.ResetAt) {
				t.Errorf("reset at %v, want %v", got.ResetAt, tc.want.ResetAt)
			}
			got.ResetAt, tc.want.ResetAt = time.Time{}, time.Time{}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// FuzzParseRateLimit: whatever a SUT sends, the parser neither panics nor
// files a negative count, wait or window, nor a fact it did not flag.
func FuzzParseRateLimit(f *testing.F) {
	f.Add("300", "0", "2026-12-02T03:04:30.000000Z", "", "")
	f.Add("", "", "", `"burst";r=40;t=1, "day";r=5;t=3600`, `"burst";q=100;w=1`)
	f.Add("1", "2", "1e300", "limit=100, remaining=50, reset=5", "100;w=60")
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, limit, remaining, reset, ietf, policy string) {
		h := http.Header{"X-Ratelimit-Limit": {limit}, "X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Reset": {reset},
			"Ratelimit": {ietf}, "Ratelimit-Policy": {policy}}
		s := parseRateLimit(h, func() time.Time { return now })
		if s.Limit < 0 || s.Remaining < 0 || s.Window < 0 || s.ResetIn < 0 {
			t.Fatalf("negative fact %+v", s)
		}
		if s.ResetIn > maxLimitSpan || s.Window > maxLimitSpan {
			t.Fatalf("absurd span %+v", s)
		}
		if s.Said&record.SaidReset == 0 && (s.ResetIn != 0 || !s.ResetAt.IsZero()) ||
			s.Said&record.SaidLimit == 0 && s.Limit != 0 || s.Said&record.SaidWindow == 0 && s.Window != 0 {
			t.Fatalf("unflagged fact %+v", s)
		}
	})
}

// TestRateLimitsRecorded: a SUT that advertises 300 per window on its 2xx
// and answers 429 with X-RateLimit-* but no Retry-After (as Mastodon and
// GoToSocial do) once the quota is spent: the record keeps, per class, the
// limit advertised, what remained and the reset seen, and that the 429s
// said when to come back though no Retry-After came.
func TestRateLimitsRecorded(t *testing.T) {
	forClients(t, func(t *testing.T, client Client) {
		synctest.Test(t, func(t *testing.T) { testRateLimitsRecorded(t, client) })
	})
}

func testRateLimitsRecorded(t *testing.T, client Client) {
	var n atomic.Int64
	sink := pipenet.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		h := w.Header()
		h.Set("X-RateLimit-Limit", "300")
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(max(300-i, 0), 10))
		h.Set("X-RateLimit-Reset", time.Now().Add(5*time.Minute).UTC().Format("2006-01-02T15:04:05.000000Z"))
		if i > 300 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	tr := NewClientTransport(TransportOptions{Client: client, MaxInflight: 10, Dial: sink.DialContext})
	defer tr.CloseIdleConnections()
	res := mustRun(t, context.Background(), Plan{Limits: Limits{Duration: 4 * time.Second, MaxInflight: 10},
		Sleep:  time.Sleep, // synctest: fake clock
		Pacer:  mustConstant(t, 100),
		Source: newCycleSource(t, "http://sink.test/inbox"), Transport: tr,
	})
	rec, err := res.Record(record.Settings{Label: "limits"})
	if err != nil {
		t.Fatal(err)
	}
	o := rec.Overall
	if o.Tally.Classes[record.Class429] != 100 || o.Tally.RetryAfter != 0 {
		t.Fatalf("tally %+v, want 100 × 429 and no Retry-After", o.Tally)
	}
	ok, shed := o.RateLimits.Classes[record.Class202], o.RateLimits.Classes[record.Class429]
	if ok.Answers != 300 || *ok.Limit != (record.Span{Min: 300, Max: 300}) || *ok.Remaining != (record.Span{Min: 0, Max: 299}) {
		t.Errorf("202s' limits %+v", ok)
	}
	if shed.Answers != 100 || shed.ResetOnly != 100 || *shed.Remaining != (record.Span{Min: 0, Max: 0}) {
		t.Errorf("429s' limits %+v, want 100 answers naming a reset without Retry-After, none remaining", shed)
	}
	// Microsecond ISO times on the fake clock: the reset is 5 min from each answer, to the millisecond.
	if shed.ResetInMS == nil || shed.ResetInMS.Min < 299_000 || shed.ResetInMS.Max > 300_000 {
		t.Errorf("reset in %+v ms, want 5 min", shed.ResetInMS)
	}
	if got, want := o.RateLimits.All().Advertised(), "a limit of 300 per window"; got[:len(want)] != want {
		t.Errorf("advertised %q, want it to start %q", got, want)
	}
}

// BenchmarkParseRateLimit prices what every answer of the send loop pays
// for its rate-limit fields: an answer without any (the common 202), and
// one with Mastodon's three.
//
//	go test -run '^$' -bench ParseRateLimit ./flood/
func BenchmarkParseRateLimit(b *testing.B) {
	for _, tc := range []struct {
		name string
		h    http.Header
	}{
		{"none", http.Header{"Date": {"Wed, 02 Dec 2026 05:00:00 GMT"}, "Content-Length": {"0"}, "Content-Type": {"text/plain"}}},
		{"mastodon", http.Header{"X-Ratelimit-Limit": {"300"}, "X-Ratelimit-Remaining": {"12"}, "X-Ratelimit-Reset": {"2026-12-02T05:05:00.000Z"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				_ = parseRateLimit(tc.h, time.Now)
			}
		})
	}
}
