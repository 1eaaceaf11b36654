package livemetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/livemetrics"
	"github.com/crowdfed/crowd/flood/record"
)

// series flattens a gather into "name{label=value,…}" → value, with a
// histogram's sample count as name_count (native and classic alike).
func series(t *testing.T, m *livemetrics.Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, pm := range mf.Metric {
			var ls []string
			for _, lp := range pm.Label {
				if n := lp.GetName(); n == "type" || n == "class" || n == "reason" {
					ls = append(ls, n+"="+lp.GetValue())
				}
			}
			sort.Strings(ls)
			key := mf.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = pm.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = pm.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := pm.GetHistogram()
				out[mf.GetName()+"_count{"+strings.Join(ls, ",")+"}"] = float64(h.GetSampleCount())
				if len(h.GetBucket()) == 0 || h.GetSchema() == 0 && len(h.GetPositiveSpan()) == 0 && h.GetZeroCount() == 0 && h.GetSampleCount() > 0 {
					t.Errorf("%s: want classic and native buckets both, got %d classic, schema %d, %d spans", key, len(h.GetBucket()), h.GetSchema(), len(h.GetPositiveSpan()))
				}
			}
		}
	}
	return out
}

// TestMetricsEqualTheRecord: a flood against a real listener answering
// 202, 429 with Retry-After, 503 and 401 in turn, with a warm-up and a
// slot limit that drops sends: every counter and every histogram count
// equals the Result's (what the record is made of), per type and class;
// the warm-up is in none of them.
func TestMetricsEqualTheRecord(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 4 {
		case 0:
			w.WriteHeader(http.StatusAccepted)
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			// Holds a slot: 4 slots of a quarter of 60 ms each serve about 270/s,
			// below the 400/s offered, so some sends always find none.
			time.Sleep(60 * time.Millisecond)
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/inbox")
	types := []record.ActivityKind{"Create", "Like", "Follow"}
	var k atomic.Int64
	src := flood.SourceFunc(func(context.Context) (*flood.Prepared, error) {
		i := k.Add(1)
		return &flood.Prepared{Type: types[i%3], Method: http.MethodPost, URL: u, Header: http.Header{}, Body: []byte("{}")}, nil
	})
	pacer, err := flood.NewConstantPacer(400)
	if err != nil {
		t.Fatal(err)
	}
	m := livemetrics.New(livemetrics.Options{Labels: livemetrics.Labels{Label: "t", Seed: "1"}})
	rec := record.NewRecorder(record.RecorderOptions{Progress: m.Progress})
	err = flood.Run(context.Background(), flood.Plan{Limits: flood.Limits{Duration: 1500 * time.Millisecond, Warmup: 300 * time.Millisecond, MaxInflight: 4}, Pacer: pacer,
		Source: src, Transport: flood.NewTransport(4, 0, nil)}, flood.Collectors(rec, m))
	if err != nil {
		t.Fatal(err)
	}
	res := rec.Result()
	got := series(t, m)
	if res.WarmupCounts.Offered == 0 || res.Overall.Counts.Dropped == 0 {
		t.Fatalf("the run must have a warm-up and drops to show they are counted right: %+v warm-up %+v", res.Overall.Counts, res.WarmupCounts)
	}
	for typ, st := range res.Types {
		want := map[string]int64{
			"crowd_flood_offered_total": st.Counts.Offered, "crowd_flood_sent_total": st.Counts.Sent,
			"crowd_flood_dropped_total": st.Counts.Dropped, "crowd_flood_starved_total": st.Counts.Starved,
			"crowd_flood_aborted_total": st.Counts.Aborted, "crowd_flood_retry_after_total": st.Tally.RetryAfter,
			"crowd_flood_latency_seconds_count": st.Latency.TotalCount(), "crowd_flood_service_seconds_count": st.Service.TotalCount(),
			"crowd_flood_lateness_seconds_count": st.Lateness.TotalCount(),
		}
		for name, w := range want {
			if g := got[fmt.Sprintf("%s{type=%s}", name, typ)]; g != float64(w) {
				t.Errorf("%s{type=%s} = %v, the record has %d", name, typ, g, w)
			}
		}
		for c := range record.NumClasses {
			if g := got[fmt.Sprintf("crowd_flood_completed_total{class=%s,type=%s}", c, typ)]; g != float64(st.Tally.Classes[c]) {
				t.Errorf("completed{type=%s,class=%s} = %v, the record has %d", typ, c, g, st.Tally.Classes[c])
			}
		}
	}
	classes := m.Classes()
	for c := range record.NumClasses {
		if classes[c.String()] != res.Overall.Tally.Classes[c] {
			t.Errorf("Classes()[%s] = %d, the record has %d", c, classes[c.String()], res.Overall.Tally.Classes[c])
		}
	}
	if got["crowd_flood_warmup{}"] != 0 || got["crowd_flood_elapsed_seconds{}"] < 1.4 {
		t.Errorf("the last tick: warmup %v elapsed %v", got["crowd_flood_warmup{}"], got["crowd_flood_elapsed_seconds{}"])
	}
}

// TestUnansweredByReason: the sends without an answer are counted by the
// reason the flood named (a timeout's by its class when unnamed), each of
// the flood's phrases in a series of its own, errors' own texts at most
// record.MaxUnansweredReasons a type, the rest as "other"; the warm-up's
// in none.
func TestUnansweredByReason(t *testing.T) {
	m := livemetrics.New(livemetrics.Options{})
	send := func(reason string, class record.Class, measured bool) {
		m.Answered(0, &record.Delivery{Type: "Create", Measured: measured, Class: class, NoAnswer: reason})
	}
	for range 3 {
		send("connection refused", record.ClassConnError, true)
	}
	send("", record.ClassTimeout, true)                      // an older flood's: no reason
	send("connection refused", record.ClassConnError, false) // the warm-up's
	send("", record.Class202, true)                          // answered: no reason
	for i := range record.MaxUnansweredReasons + 2 {         // two texts past the bound
		send(fmt.Sprintf("h1: odd answer %d", i), record.ClassConnError, true)
	}
	send(record.NoAnswerReset, record.ClassConnError, true) // a phrase after them: its own series still
	got := series(t, m)
	for key, want := range map[string]float64{
		"crowd_flood_unanswered_total{reason=connection refused,type=Create}": 3,
		"crowd_flood_unanswered_total{reason=timeout,type=Create}":            1,
		"crowd_flood_unanswered_total{reason=other,type=Create}":              2, // the texts past the bound
		"crowd_flood_unanswered_total{reason=connection reset,type=Create}":   1,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	named, total := 0, 0.0
	for key, v := range got {
		if strings.HasPrefix(key, "crowd_flood_unanswered_total{") {
			total += v
			if !strings.Contains(key, "reason=other,") {
				named++
			}
		}
	}
	if named != 3+record.MaxUnansweredReasons || total != 3+1+record.MaxUnansweredReasons+2+1 {
		t.Errorf("%d reasons with a series, %v sends counted; want 3 phrases and %d texts, and every unanswered send", named, total, record.MaxUnansweredReasons)
	}

	// Workers count at once (the race detector watches): still at most the
	// bound named, and every send counted.
	m = livemetrics.New(livemetrics.Options{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				m.Answered(w, &record.Delivery{Type: "Like", Measured: true, Class: record.ClassConnError, NoAnswer: fmt.Sprintf("reason %d", (w+i)%12)})
			}
		})
	}
	wg.Wait()
	named, total = 0, 0
	for key, v := range series(t, m) {
		if strings.HasPrefix(key, "crowd_flood_unanswered_total{") {
			total += v
			if !strings.Contains(key, "reason=other,") {
				named++
			}
		}
	}
	if named != record.MaxUnansweredReasons || total != 800 {
		t.Errorf("concurrently: %d reasons named, %v sends counted; want %d and 800", named, total, record.MaxUnansweredReasons)
	}
}

// TestEncodeIsDelimitedProtobuf: Encode's output decodes back to the
// same families (the serve reads pushes with expfmt).
func TestEncodeIsDelimitedProtobuf(t *testing.T) {
	m := livemetrics.New(livemetrics.Options{})
	m.Offered(record.Offer{Type: "Create", Measured: true})
	m.Answered(0, &record.Delivery{Type: "Create", Measured: true, Class: record.Class202, Done: time.Millisecond})
	b, err := m.Encode()
	if err != nil || len(b) == 0 {
		t.Fatalf("Encode: %d bytes, %v", len(b), err)
	}
	mfs, _ := m.Registry().Gather()
	if got := countDelimited(t, b); got != len(mfs) {
		t.Fatalf("decoded %d families, gathered %d", got, len(mfs))
	}
}
