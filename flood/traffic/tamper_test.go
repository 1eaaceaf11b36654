package traffic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-fed/httpsig"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// inboxSink is a small real inbox for the forgery tests: it verifies each
// POST's signature and checks the key's owner is the activity's actor.
// With laxDigest it verifies as go-fed/httpsig does, which never compares
// the Digest with the body (the sink checks everything else: the Date and
// (created) windows, that digest is signed, the owner), as inboxes built
// on it have shipped; without, it is the crowd's own verifier.
func inboxSink(t *testing.T, w *actors.World, laxDigest bool) *httptest.Server {
	t.Helper()
	keys := map[string]*actors.Actor{}
	for _, a := range w.Actors() {
		keys[a.KeyID] = a
	}
	for _, o := range w.Origins {
		keys[o.Instance.KeyID] = o.Instance
	}
	resolve := signing.KeyResolverFunc(func(_ context.Context, keyID string, _ bool) (signing.PublicKey, error) {
		a, ok := keys[keyID]
		if !ok {
			// A leaver (a forged Like's or Follow's actor) is served from its name.
			a, ok = w.ActorByKeyID(keyID)
		}
		if !ok {
			return signing.PublicKey{}, signing.ErrKeyUnavailable
		}
		return signing.PublicKey{Key: a.Key.Public(), Owner: a.ID, ID: keyID}, nil
	})
	strict := &signing.Verifier{Keys: resolve}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var act struct {
			Actor string `json:"actor"`
		}
		if json.Unmarshal(body, &act) != nil {
			http.Error(rw, "bad JSON", http.StatusBadRequest)
			return
		}
		owner, err := "", error(nil)
		if laxDigest {
			owner, err = laxVerify(r, resolve)
		} else {
			var v signing.Verified
			v, err = strict.Verify(r.Context(), r, body)
			owner = v.Owner
		}
		switch {
		case err != nil:
			http.Error(rw, err.Error(), http.StatusUnauthorized)
		case owner != act.Actor:
			http.Error(rw, "signer is not the actor", http.StatusUnauthorized)
		default:
			rw.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// laxVerify is go-fed/httpsig's verification, with the checks a careful
// inbox adds around it, but not the Digest's.
func laxVerify(r *http.Request, keys signing.KeyResolver) (string, error) {
	p, err := signing.ParseSignatureHeader(r.Header.Get("Signature"))
	if err != nil {
		return "", err
	}
	if !slices.Contains(p.Headers, "digest") || !slices.Contains(p.Headers, "(request-target)") {
		return "", signing.ErrMalformedSignature
	}
	d, err := http.ParseTime(r.Header.Get("Date"))
	if err != nil || time.Since(d).Abs() > time.Hour {
		return "", signing.ErrDateSkew
	}
	if p.Created != 0 && time.Since(time.Unix(p.Created, 0)).Abs() > time.Hour {
		return "", signing.ErrDateSkew
	}
	v, err := httpsig.NewVerifier(r)
	if err != nil {
		return "", err
	}
	pk, err := keys.ResolveKey(r.Context(), v.KeyId(), false)
	if err != nil {
		return "", err
	}
	if err := v.Verify(pk.Key, httpsig.RSA_SHA256); err != nil {
		return "", err
	}
	return pk.Owner, nil
}

// forgeryRun floods sink with the tamper kinds among honest sends signed
// with scheme ("": Prepare's draft-cavage) and returns the record.
func forgeryRun(t *testing.T, w *actors.World, sink string, scheme SignatureScheme, kinds []signing.Tamper) *record.Record {
	t.Helper()
	personas := fakePersonas(2)
	for _, p := range personas {
		p.Target = sink + "/inbox"
	}
	gen := mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: personas, Seed: 7,
		Mix:   record.Mix{Create: 1, Like: 1},
		Draws: &Draws{Tamper: kinds, TamperShare: 0.6}})
	forg := NewForgeries()
	var src flood.Source = NewJIT(gen, signing.NewSigner(signing.SignerOptions{}), nil)
	if scheme != "" {
		src = NewJIT(gen, nil, NewKnocker(scheme, signing.NewSigner(signing.SignerOptions{})))
	}
	pacer, err := flood.NewPacer(flood.ArrivalsConstant, 400, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: 240, MaxInflight: 8}, Pacer: pacer, Transport: flood.NewTransport(8, 0, nil),
		Source: forg.Source(src)}, Settle(gen.Settled, forg.Settled))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := res.Record(record.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Security = forg.Snapshot()
	if rec.Security == nil {
		t.Fatal("no security section")
	}
	return rec
}

// accepted lists the kinds with an accepted forgery, and fails t when a
// kind was never sent.
func acceptedKinds(t *testing.T, s *record.Security, kinds []signing.Tamper) []string {
	t.Helper()
	var out []string
	for _, k := range kinds {
		c := s.Kinds[string(k)]
		if c == nil || c.Sent == 0 {
			t.Fatalf("kind %s never sent: %+v", k, s.Kinds)
		}
		if c.Accepted+c.Refused != c.Sent {
			t.Fatalf("kind %s: %+v (answers without a verdict)", k, c)
		}
		if c.Accepted > 0 {
			out = append(out, string(k))
		}
	}
	return out
}

// TestForgeryAgainstInboxes floods two real inboxes with every kind: the
// crowd's verifier refuses all but the replay (a replay passes every
// signature check: only an id check refuses it, and a correct server takes
// it and drops it by its id, so forged_accepted=0 over every kind holds),
// and an inbox that skips the Digest check accepts the body-changed
// forgery, which the record lists as findings and forged_accepted=0 fails
// on (exit 1).
func TestForgeryAgainstInboxes(t *testing.T) {
	w := testWorld(t, 2, 2)
	gate, err := record.ParseGates([]string{"forged_accepted=0", "body.forged_accepted=0", "date.forged_accepted==0"})
	if err != nil {
		t.Fatal(err)
	}
	noReplay := slices.DeleteFunc(signing.Tampers(), func(k signing.Tamper) bool { return k == signing.TamperReplay })
	for _, tc := range []struct {
		name   string
		lax    bool
		scheme SignatureScheme
		kinds  []signing.Tamper
		want   []string
	}{
		{"strict", false, "", signing.Tampers(), []string{"replay"}},            // the crowd's own verifier
		{"lax digest", true, "", signing.Tampers(), []string{"body", "replay"}}, // go-fed/httpsig: never reads the body
		// Honest sends signed RFC 9421: forgeries are still draft-cavage,
		// and a replay is of an RFC 9421 request.
		{"strict, rfc9421", false, SignatureRFC9421, signing.Tampers(), []string{"replay"}},
		// A double knock never sends a refused forgery again signed
		// honestly (which this inbox would accept: a false finding). A
		// request knocked twice is not kept to replay, so none is drawn.
		{"strict, double knock", false, SignatureBoth, noReplay, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := forgeryRun(t, w, inboxSink(t, w, tc.lax).URL, tc.scheme, tc.kinds)
			if got := acceptedKinds(t, rec.Security, tc.kinds); !slices.Equal(got, tc.want) {
				t.Fatalf("accepted kinds %v, want %v; %+v", got, tc.want, rec.Security.Kinds)
			}
			for _, f := range rec.Security.Findings {
				if !slices.Contains(tc.want, f.Kind) || f.Status != http.StatusAccepted || !strings.HasPrefix(f.Activity, "https://flood") {
					t.Fatalf("finding %+v", f)
				}
			}
			// A replay taken judges nothing: the gate over every kind fails
			// on the other kinds only.
			findings := slices.DeleteFunc(slices.Clone(tc.want), func(k string) bool { return k == string(signing.TamperReplay) })
			if tl := rec.Types[string(record.TypeForged)]; tl == nil || tl.Counts.Sent != rec.Security.Total().Sent {
				t.Fatalf("the Forged row %+v does not count the %d forgeries", tl, rec.Security.Total().Sent)
			}
			results, ok := record.CheckGates(rec, gate)
			if clean := len(findings) == 0; ok != clean || (!clean && flood.ExitCode(nil, results) != 1) {
				t.Fatalf("gates %v: want forged_accepted=0 met %v", results, clean)
			}
			if body := results[1]; body.Holds == tc.lax {
				t.Fatalf("body.forged_accepted=0 holds=%v on the %s inbox", body.Holds, tc.name)
			}
			if date := results[2]; !date.Holds {
				t.Fatalf("date.forged_accepted==0: %v", date)
			}
		})
	}
}

// TestDrawsByOrigin checks that Zipf over origins makes the first origin
// the busiest and still reaches the others.
func TestDrawsByOrigin(t *testing.T) {
	senders := fakeSenders(2)
	o2 := &actors.Origin{Index: 2, Host: "flood2.test"}
	for i := range 6 {
		name := actors.ActorName(i)
		senders = append(senders, &actors.Actor{Origin: o2, Name: name, ID: "https://flood2.test/users/" + name, KeyID: "https://flood2.test/users/" + name + "#k"})
	}
	g := mustGenerator(t, GeneratorConfig{Senders: senders, Personas: fakePersonas(1), Mix: record.Mix{Create: 1}, Seed: 3,
		Draws: &Draws{OriginZipf: 2}})
	s := g.Stream()
	by := map[string]int{}
	for range 2000 {
		by[mustDraft(t, s).Sender.Origin.Host]++
	}
	if by["flood1.test"] <= by["flood2.test"] || by["flood2.test"] == 0 {
		t.Fatalf("by origin %v: want flood1.test the busiest (2 of 8 actors) and flood2.test reached", by)
	}
	// A world's persons, computed on demand, are grouped by origin alike.
	w := testWorld(t, 3, 2)
	g = mustGenerator(t, GeneratorConfig{SenderSet: WorldSenders(w), Personas: fakePersonas(1), Mix: record.Mix{Create: 1}, Seed: 3,
		Draws: &Draws{OriginZipf: 2}})
	s = g.Stream()
	by = map[string]int{}
	for range 2000 {
		by[mustDraft(t, s).Sender.Origin.Host]++
	}
	if by["flood1.test"] <= by["flood2.test"] || by["flood2.test"] <= by["flood3.test"] || by["flood3.test"] == 0 {
		t.Fatalf("a world's persons by origin %v: want flood1.test busier than flood2.test than flood3.test, all reached", by)
	}
	if _, err := NewGenerator(GeneratorConfig{Senders: senders, Personas: fakePersonas(1), Draws: &Draws{OriginZipf: 0.5}}); err == nil {
		t.Fatal("--origin-zipf 0.5 accepted")
	}
	if _, err := NewGenerator(GeneratorConfig{Senders: senders, Personas: fakePersonas(1), Draws: &Draws{Tamper: signing.Tampers()}}); err == nil {
		t.Fatal("a tamper list with no share accepted")
	}
}

// TestKeyRefusals floods a real inbox that holds a stale key for one
// crowd actor (it answers its first 5 requests 401, as a SUT that cached
// the actor's old key does until it refetches): the record counts those
// 401s against that keyId, then its first 2xx, and nothing for the others.
func TestKeyRefusals(t *testing.T) {
	w := testWorld(t, 1, 2)
	stale := w.Actors()[0].KeyID
	res, sec := floodRefusing(t, w, func(gen *Generator, s *signing.Signer) *JIT { return NewJIT(gen, s, nil) }, signing.NewSigner(signing.SignerOptions{}), 60, func(r *http.Request, n int) bool {
		return strings.Contains(r.Header.Get("Signature"), `keyId="`+stale+`"`) && n < 5
	})
	if res.Overall.Tally.Classes[record.Class401] != 5 || sec == nil {
		t.Fatalf("401s %d, security %+v", res.Overall.Tally.Classes[record.Class401], sec)
	}
	if want := []record.KeyRefusal{{KeyID: stale, Refused: 5, Accepted: true, Scheme: "cavage"}}; !slices.Equal(sec.KeyRefusals, want) {
		t.Fatalf("key refusals %+v, want %+v", sec.KeyRefusals, want)
	}
	if len(sec.Kinds) != 0 || !strings.Contains(strings.Join(sec.SecurityLines(5), "\n"), "1 key(s) answered 401 5 times") {
		t.Fatalf("lines %v", sec.SecurityLines(5))
	}
}

// TestKeyIDOf reads the key id of a request signed either way, so keys
// refused are counted under --signature rfc9421 as under cavage.
func TestKeyIDOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header http.Header
		want   string
	}{
		// draft-cavage: keyId in Signature.
		{"cavage", http.Header{"Signature": {`keyId="https://a.test/users/x#main-key",algorithm="rsa-sha256",signature="AA=="`}}, "https://a.test/users/x#main-key"},
		// RFC 9421: keyid in Signature-Input, Signature holds bytes only.
		{"rfc9421", http.Header{"Signature": {`sig1=:AA==:`}, "Signature-Input": {`sig1=("@method" "@target-uri");created=1;keyid="https://a.test/users/x#main-key-2"`}}, "https://a.test/users/x#main-key-2"},
		// Unsigned.
		{"none", http.Header{}, ""},
	} {
		if got := keyIDOf(tc.header); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestKeyRefusalsBlameTheScheme floods real inboxes with --signature
// rfc9421: one without RFC 9421 (every request 401, as a SUT that only
// verifies draft-cavage), one holding a stale key for one actor. The
// first's 401s are explained by the scheme, never by stale keys; the
// second's, where the scheme was accepted, by a stale key.
func TestKeyRefusalsBlameTheScheme(t *testing.T) {
	w := testWorld(t, 1, 2)
	stale := w.Actors()[0].KeyID
	for _, tc := range []struct {
		name    string
		refuse  func(r *http.Request, n int) bool // n: earlier refusals
		says    string
		notSays string
	}{
		// No RFC 9421 at all: every request signed so is refused.
		{"no rfc9421", func(r *http.Request, _ int) bool { return r.Header.Get("Signature-Input") != "" },
			"every one signed RFC 9421, a scheme the SUT accepted no request in", "holding stale keys"},
		// RFC 9421 verified, one key stale for its first 5 requests.
		{"stale key", func(r *http.Request, n int) bool {
			return strings.Contains(r.Header.Get("Signature-Input"), `keyid="`+stale+`"`) && n < 5
		}, "1 key(s) answered 401 5 times before a 2xx", "for their scheme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := NewKnocker(SignatureRFC9421, signing.NewSigner(signing.SignerOptions{}))
			_, sec := floodRefusing(t, w, func(gen *Generator, _ *signing.Signer) *JIT { return NewJIT(gen, nil, k) }, nil, 30, tc.refuse)
			lines := strings.Join(sec.SecurityLines(5), "\n")
			if !strings.Contains(lines, tc.says) || strings.Contains(lines, tc.notSays) {
				t.Errorf("lines %q: want %q, not %q", lines, tc.says, tc.notSays)
			}
		})
	}
}

// floodRefusing floods an inbox that answers 401 to the requests refuse
// picks (n: its earlier refusals) and 202 to the rest with sends Creates
// from w's actors, one at a time at 100/s (slow enough that the one slot is
// free at each due time), and returns the result and the security section.
func floodRefusing(t *testing.T, w *actors.World, source func(*Generator, *signing.Signer) *JIT, signer *signing.Signer, sends int64,
	refuse func(r *http.Request, n int) bool) (*record.Result, *record.Security) {
	t.Helper()
	var mu sync.Mutex
	refused := 0
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		if refuse(r, refused) {
			refused++
			http.Error(rw, "refused", http.StatusUnauthorized)
			return
		}
		rw.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	personas := fakePersonas(1)
	personas[0].Target = srv.URL + "/inbox"
	gen := mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: personas, Seed: 1, Mix: record.Mix{Create: 1}})
	forg := NewForgeries()
	pacer, _ := flood.NewPacer(flood.ArrivalsConstant, 100, 1)
	res, err := recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: sends, MaxInflight: 1}, Pacer: pacer, Transport: flood.NewTransport(1, 0, nil),
		Source: source(gen, signer)}, Settle(forg.Settled))
	if err != nil {
		t.Fatal(err)
	}
	return res, forg.Snapshot()
}

// TestForgeryMarkers: every forged draft carries its own marker where the
// look-up for its effect finds it and nothing honest does: a forged note's
// content (also after a body forgery rewrote it), which the note its
// origin serves at that id lacks; the actor of a forged Like or Follow, a
// leaver no honest activity speaks for.
func TestForgeryMarkers(t *testing.T) {
	w := testWorld(t, 2, 3)
	for _, tc := range []struct {
		name string
		mix  record.Mix
		kind signing.Tamper
	}{
		{"create wrong-key", record.Mix{Create: 1}, signing.TamperWrongKey}, // the note's content, as signed
		{"create body", record.Mix{Create: 1}, signing.TamperBody},          // the content altered after signing keeps it
		{"like date", record.Mix{Like: 1}, signing.TamperDate},              // a Like speaks for a leaver
		{"follow target", record.Mix{Follow: 1}, signing.TamperTarget},      // so does a Follow
	} {
		t.Run(tc.name, func(t *testing.T) {
			gen := mustGenerator(t, GeneratorConfig{Senders: w.Actors(), Personas: fakePersonas(2), Seed: 3, Mix: tc.mix,
				Draws: &Draws{Tamper: []signing.Tamper{tc.kind}, TamperShare: 1}})
			s := gen.Stream()
			signer := signing.NewSigner(signing.SignerOptions{})
			seen := map[string]bool{}
			for range 20 {
				d := mustDraft(t, s)
				p, err := Prepare(signer, d)
				if err != nil {
					t.Fatal(err)
				}
				m := TicketOf(p).Forgery
				if m == nil || m.Marker == "" || seen[m.Marker] {
					t.Fatalf("mark %+v: none, or a marker drawn twice", m)
				}
				seen[m.Marker] = true
				var act struct {
					Actor  string `json:"actor"`
					Object json.RawMessage
				}
				if err := json.Unmarshal(p.Body, &act); err != nil {
					t.Fatal(err)
				}
				if m.Actor != act.Actor || m.Persona == "" || m.Type != d.Type {
					t.Fatalf("mark %+v, activity's actor %s", m, act.Actor)
				}
				if d.Type == record.TypeCreate {
					var note struct{ Content string }
					_ = json.Unmarshal(act.Object, &note)
					if !strings.Contains(note.Content, m.Marker) || (tc.kind == signing.TamperBody) != strings.Contains(note.Content, "altered after signing") {
						t.Fatalf("sent content %q lacks marker %s", note.Content, m.Marker)
					}
					spec, err := d.Sender.NoteSpecOf(m.Object)
					if err != nil {
						t.Fatal(err)
					}
					if served := d.Sender.Note(spec).Content; strings.Contains(served, m.Marker) {
						t.Fatalf("the origin serves the marker at %s: %q", m.Object, served)
					}
					continue
				}
				if !strings.Contains(act.Actor, "/users/leaver_") || act.Actor == d.Persona.ID {
					t.Fatalf("a forged %s speaks for %s, not a leaver", d.Type, act.Actor)
				}
				if a, ok := w.ActorByID(act.Actor); !ok || a.KeyID == "" || !keyServed(w, a.KeyID) {
					t.Fatalf("the crowd does not serve %s", act.Actor)
				}
			}
		})
	}
}

// keyServed tells whether the crowd serves the key with keyID.
func keyServed(w *actors.World, keyID string) bool {
	_, ok := w.ActorByKeyID(keyID)
	return ok
}

// TestForgeriesPassTheDispatcherOn: the replaying wrapper a forging run
// puts around its source tells the pipeline inside how the dispatcher
// runs, so signers under auto follow it there too.
func TestForgeriesPassTheDispatcherOn(t *testing.T) {
	w := testWorld(t, 1, 2)
	pl := NewPipeline(signedGenerator(t, w, nil), testSigner(), PipelineOptions{Workers: 1, Buffer: 2, Nice: NiceAuto})
	defer pl.Close()
	src, ok := NewForgeries().Source(pl).(flood.DispatcherAware)
	if !ok {
		t.Fatal("the forgeries' source hides the pipeline's Dispatching")
	}
	src.Dispatching(record.Dispatcher{Policy: "other"})
	if got := pl.SignerNice(); got != 19 {
		t.Errorf("beside a normal-policy dispatcher, told through the wrapper: nice %d, want 19", got)
	}
}
