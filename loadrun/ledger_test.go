package loadrun

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// TestLedgerCountsEachRunFromItsBegin: the ledger, a collector beside the
// record's, hands the settlements to the generator (a Follow answered 202
// is registered) and fills each run's record with what happened since that
// run began: two senders and one persona give two Follows, then every
// further Follow drawn goes out as a Create (diverted). A second run on
// the same ledger counts only its own diverted Follows and signatures.
func TestLedgerCountsEachRunFromItsBegin(t *testing.T) {
	w, err := actors.Open(actors.Config{Origins: 1, Actors: 2, Domain: "flood%d.test", StateDir: t.TempDir(), EphemeralGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var mu sync.Mutex
	var registered []traffic.FollowRegistration
	id := "https://sut.test/users/load0"
	gen, err := traffic.NewGenerator(traffic.GeneratorConfig{SenderSet: traffic.WorldSenders(w), Mix: record.Mix{Follow: 1}, Seed: 1,
		Personas:     []*traffic.Persona{{Acct: "load0@sut.test", ID: id, Inbox: id + "/inbox", Target: id + "/inbox"}},
		OnFollowSent: func(f traffic.FollowRegistration) { mu.Lock(); registered = append(registered, f); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	knock := traffic.NewKnocker(traffic.SignatureCavage, signing.NewSigner(signing.SignerOptions{}))
	l := &ledger{gen: gen, knock: knock, forg: traffic.NewForgeries(), seed: 7,
		feed: traffic.NewOutboxFeed(func(context.Context, []actors.SentNote) error { return nil }, traffic.OutboxFeedOptions{}),
		vocab: &vocabRun{changes: traffic.NewChangeFeed(func(context.Context, []actors.Change) error { return nil }, traffic.OutboxFeedOptions{}),
			reactions: traffic.NewReactionFeed(func(context.Context, []actors.Reaction) error { return nil }, traffic.OutboxFeedOptions{})}}
	accept := func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusAccepted, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	}
	run := func(sends int64) (r *record.Record) {
		t.Helper()
		synctest.Test(t, func(t *testing.T) {
			r = runLedger(t, l, sends, traffic.NewJIT(gen, nil, knock), roundTripFunc(accept))
		})
		return r
	}

	first := run(4)
	if len(registered) != 2 || first.Deviations.FollowsDiverted != 2 || first.Signatures.FirstCavage != 4 || first.Parts[0].Seed != 7 {
		t.Errorf("first run: %d Follows registered, %d diverted, %d signed cavage, seed %d; want 2, 2, 4 and 7",
			len(registered), first.Deviations.FollowsDiverted, first.Signatures.FirstCavage, first.Parts[0].Seed)
	}
	second := run(3)
	if len(registered) != 2 || second.Deviations.FollowsDiverted != 3 || second.Signatures.FirstCavage != 3 {
		t.Errorf("second run: %d Follows registered, %d diverted, %d signed cavage; want 2 (none new), 3 and 3: its own",
			len(registered), second.Deviations.FollowsDiverted, second.Signatures.FirstCavage)
	}
}

// runLedger runs sends sends from src on the fake clock, with l beside
// the record's collector, and returns the record l filled.
func runLedger(t *testing.T, l *ledger, sends int64, src flood.Source, tr http.RoundTripper) *record.Record {
	pacer, err := flood.NewConstantPacer(100)
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewRecorder(record.RecorderOptions{})
	err = flood.Run(context.Background(), flood.Plan{Pacer: pacer, Source: src, Transport: tr,
		Limits: flood.Limits{MaxSends: sends, MaxInflight: 1, Timeout: 5 * time.Second}, Sleep: time.Sleep}, flood.Collectors(rec, l))
	if err != nil {
		t.Fatal(err)
	}
	r, err := rec.Result().Record(record.Settings{Label: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	l.fill(r, "go", flood.DefaultClient, nil)
	return r
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
