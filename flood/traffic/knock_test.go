package traffic

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/h1"
	"github.com/crowdfed/crowd/signing"
)

// schemeSink is a TLS inbox that verifies every signature as the crowd's
// inboxes do, after its policy: refuse (401) one scheme, as a server that
// predates RFC 9421 (Fedify 1.5.9) refuses Signature-Input, or answer
// every request with a fixed status. It counts what arrived by scheme.
type schemeSink struct {
	srv               *httptest.Server
	refuse            signing.Scheme // answered 401 unverified; "" = none
	fixed             int            // when set, the answer to everything
	delay             time.Duration  // before each answer
	rfc9421, cavage   atomic.Int64   // requests received by scheme
	accepted, refused atomic.Int64
	bad               atomic.Int64 // requests that did not verify
}

func newSchemeSink(t *testing.T, w *actors.World, s *schemeSink) *schemeSink {
	t.Helper()
	v := worldVerifier(w)
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		scheme := signing.SchemeCavage
		if r.Header.Get("Signature-Input") != "" {
			scheme = signing.SchemeRFC9421
			s.rfc9421.Add(1)
		} else {
			s.cavage.Add(1)
		}
		time.Sleep(s.delay)
		switch {
		case s.fixed != 0:
			rw.WriteHeader(s.fixed)
		case scheme == s.refuse:
			s.refused.Add(1)
			http.Error(rw, "unsupported signature scheme", http.StatusUnauthorized)
		default:
			if ver, err := v.Verify(r.Context(), r, body); err != nil || ver.Scheme != string(scheme) {
				s.bad.Add(1)
				http.Error(rw, fmt.Sprint(err), http.StatusUnauthorized)
				return
			}
			s.accepted.Add(1)
			rw.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// transport dials the sink for every host (the requests name sut.test).
func (s *schemeSink) transport(t *testing.T) http.RoundTripper {
	tr := flood.NewTransport(64, 0, &tls.Config{InsecureSkipVerify: true}) // the sink's test certificate names example.com
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, s.srv.Listener.Addr().String())
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// knockingSource is a source of mode signing with k.
func knockingSource(t *testing.T, mode SigningMode, g *Generator, k *Knocker, n int64) flood.Source {
	t.Helper()
	switch mode {
	case SigningPipeline:
		pl := NewPipeline(g, k.signer, PipelineOptions{Buffer: 8, Knocker: k})
		t.Cleanup(pl.Close)
		return pl
	case SigningPresign:
		ps, err := Presign(context.Background(), g, k.signer, n, PresignOptions{Window: time.Second, Knocker: k})
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	return NewJIT(g, nil, k)
}

// TestDoubleKnock floods, in every signing mode, sinks that refuse one
// scheme, and checks what the double knock (and each single scheme)
// sends, answers and records.
func TestDoubleKnock(t *testing.T) {
	w := testWorld(t, 1, 3)
	const n = 30
	tests := []struct {
		name      string
		scheme    SignatureScheme
		refuse    signing.Scheme // the sink's policy (schemeSink)
		fixed     int
		cavageFor bool // the host starts remembered as cavage-first
		// again: the scheme of every first attempt of a second flood, once
		// the first has settled ("" = no second flood)
		again signing.Scheme
		check func(t *testing.T, s record.Signatures, sink *schemeSink, o *record.Stats)
	}{
		{"both against a server without RFC 9421", SignatureBoth, signing.SchemeRFC9421, 0, false, signing.SchemeCavage,
			func(t *testing.T, s record.Signatures, sink *schemeSink, o *record.Stats) {
				// Every activity accepted; the first ones fell back (how
				// many were in flight by then depends on the machine).
				if o.Tally.Classes[record.Class202] != o.Counts.Sent || s.FellBack < 1 || s.FellBack != s.FirstRFC9421 ||
					s.SecondAccepted != s.FellBack || s.Triggers["401"] != s.FellBack || s.FirstCavage+s.FirstRFC9421 != o.Counts.Sent ||
					s.CavageFirstHosts != 1 || s.Resigned < s.FellBack || sink.rfc9421.Load() != s.FirstRFC9421 {
					t.Errorf("signatures %+v, tally %+v, counts %+v, sink rfc9421 %d cavage %d", s, o.Tally, o.Counts, sink.rfc9421.Load(), sink.cavage.Load())
				}
			}},
		{"both against a server with RFC 9421", SignatureBoth, "", 0, false, "",
			func(t *testing.T, s record.Signatures, sink *schemeSink, o *record.Stats) {
				if o.Tally.Classes[record.Class202] != o.Counts.Sent || s.FirstRFC9421 != o.Counts.Sent || s.Fell() != 0 || sink.cavage.Load() != 0 || s.Resigned != 0 {
					t.Errorf("signatures %+v, tally %+v, sink cavage %d", s, o.Tally, sink.cavage.Load())
				}
			}},
		{"both, a cavage-first host that refuses cavage", SignatureBoth, signing.SchemeCavage, 0, true, signing.SchemeRFC9421,
			func(t *testing.T, s record.Signatures, sink *schemeSink, o *record.Stats) {
				if o.Tally.Classes[record.Class202] != o.Counts.Sent || s.FellForward < 1 || s.FellBack != 0 || s.CavageFirstHosts != 0 {
					t.Errorf("signatures %+v, tally %+v", s, o.Tally)
				}
			}},
		{"both against a throttling server", SignatureBoth, "", http.StatusTooManyRequests, false, "",
			func(t *testing.T, s record.Signatures, sink *schemeSink, o *record.Stats) {
				// A 429 says nothing of the signature: no second attempt.
				if s.Fell() != 0 || len(s.Triggers) != 0 || sink.cavage.Load() != 0 || o.Tally.Classes[record.Class429] != o.Counts.Sent {
					t.Errorf("signatures %+v, tally %+v", s, o.Tally)
				}
			}},
		{"rfc9421 against a server without it", SignatureRFC9421, signing.SchemeRFC9421, 0, false, "",
			func(t *testing.T, s record.Signatures, sink *schemeSink, o *record.Stats) {
				if o.Tally.Classes[record.Class401] != o.Counts.Sent || s.Fell() != 0 || sink.cavage.Load() != 0 || s.FirstRFC9421 != o.Counts.Sent {
					t.Errorf("signatures %+v, tally %+v", s, o.Tally)
				}
			}},
		{"cavage", SignatureCavage, signing.SchemeRFC9421, 0, false, "",
			func(t *testing.T, s record.Signatures, sink *schemeSink, o *record.Stats) {
				if o.Tally.Classes[record.Class202] != o.Counts.Sent || s.FirstCavage != o.Counts.Sent || sink.rfc9421.Load() != 0 || s.Scheme != "cavage" {
					t.Errorf("signatures %+v, tally %+v", s, o.Tally)
				}
			}},
	}
	for _, tc := range tests {
		for _, mode := range []SigningMode{SigningPipeline, SigningPresign, SigningJIT} {
			t.Run(tc.name+"/"+string(mode), func(t *testing.T) {
				t.Parallel() // its own sink and knocker; the world is read only
				sink := newSchemeSink(t, w, &schemeSink{refuse: tc.refuse, fixed: tc.fixed})
				k := NewKnocker(tc.scheme, testSigner())
				if tc.cavageFor {
					k.hosts.Store("sut.test", signing.SchemeCavage)
				}
				src := knockingSource(t, mode, signedGenerator(t, w, nil), k, n)
				res, err := recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: n, MaxInflight: 64}, Pacer: mustConstant(t, 100), Source: src, Transport: sink.transport(t)})
				if err != nil {
					t.Fatal(err)
				}
				if sink.bad.Load() != 0 || res.Overall.Counts.Sent == 0 {
					t.Fatalf("%d requests did not verify; counts %+v", sink.bad.Load(), res.Overall.Counts)
				}
				s := k.Signatures()
				tc.check(t, s, sink, res.Overall)
				if tc.again == "" {
					return
				}
				// The host is remembered: a later flood knocks once, with the
				// scheme that worked, whatever was in flight during the first.
				src = knockingSource(t, mode, signedGenerator(t, w, nil), k, n)
				res, err = recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: n, MaxInflight: 64}, Pacer: mustConstant(t, 100), Source: src, Transport: sink.transport(t)})
				if err != nil {
					t.Fatal(err)
				}
				s2 := k.Signatures().Sub(s)
				first := map[signing.Scheme]int64{signing.SchemeCavage: s2.FirstCavage, signing.SchemeRFC9421: s2.FirstRFC9421}
				if sent := res.Overall.Counts.Sent; first[tc.again] != sent || s2.Fell() != 0 || res.Overall.Tally.Classes[record.Class202] != sent {
					t.Errorf("the second flood: %+v, tally %+v; want all %d first attempts %s", s2, res.Overall.Tally, sent, tc.again)
				}
			})
		}
	}
}

// TestDoubleKnockLatency: a send that falls back is one send whose latency
// runs from its intended time to the second answer, so it spans both
// attempts (each held back by the server here); the tally counts the
// final answer only.
func TestDoubleKnockLatency(t *testing.T) {
	w := testWorld(t, 1, 1)
	const delay = 40 * time.Millisecond
	sink := newSchemeSink(t, w, &schemeSink{refuse: signing.SchemeRFC9421, delay: delay})
	k := NewKnocker(SignatureBoth, testSigner())
	res, err := recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: 3}, Pacer: mustConstant(t, 5),
		Source: NewJIT(signedGenerator(t, w, nil), nil, k), Transport: sink.transport(t)})
	if err != nil {
		t.Fatal(err)
	}
	s, o := k.Signatures(), res.Overall
	if s.FellBack < 1 || o.Tally.Classes[record.Class202] != 3 || o.Tally.Classes[record.Class401] != 0 {
		t.Fatalf("signatures %+v, tally %+v", s, o.Tally)
	}
	if maxLat := time.Duration(o.Latency.Max()) * time.Microsecond; maxLat < 2*delay {
		t.Errorf("the fallen-back send's latency %v is less than its two answers (2 × %v)", maxLat, delay)
	}
	if maxSvc := time.Duration(o.Service.Max()) * time.Microsecond; maxSvc < 2*delay {
		t.Errorf("the fallen-back send's service time %v is less than its two answers (2 × %v)", maxSvc, delay)
	}
}

// TestParseSignature reads --signature.
func TestParseSignature(t *testing.T) {
	for in, want := range map[string]SignatureScheme{"": SignatureCavage, "cavage": SignatureCavage, " RFC9421 ": SignatureRFC9421, "both": SignatureBoth} {
		if got, err := ParseSignature(in); err != nil || got != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	if _, err := ParseSignature("hs2019"); err == nil {
		t.Error("hs2019 accepted as a scheme")
	}
}

// TestKnockOnceLeavesAsWritten: with one scheme (--signature cavage, the
// default, or rfc9421) a request's first attempt always goes as it was
// signed, so with the fast client the dispatcher tries every send itself
// and writes it on a resting connection, and the first attempts are still
// counted by scheme, one a send, every request verified; knocking twice,
// the host's scheme may change before a send, and the dispatcher tries
// none.
func TestKnockOnceLeavesAsWritten(t *testing.T) {
	w := testWorld(t, 1, 3)
	const n = 30
	for _, c := range []struct {
		name    string
		scheme  SignatureScheme
		written bool // the dispatcher tries every send itself
	}{
		// The default: one scheme, cavage.
		{"cavage", SignatureCavage, true},
		// One scheme, RFC 9421.
		{"rfc9421", SignatureRFC9421, true},
		// The double knock: every send is a worker's.
		{"both", SignatureBoth, false},
	} {
		for _, mode := range []SigningMode{SigningPipeline, SigningPresign} {
			t.Run(c.name+"/"+string(mode), func(t *testing.T) {
				sink := newSchemeSink(t, w, &schemeSink{})
				k := NewKnocker(c.scheme, testSigner())
				tr := &headsCounted{Transport: flood.NewClientTransport(flood.TransportOptions{Client: flood.ClientFast, MaxInflight: 64,
					TLS: &tls.Config{InsecureSkipVerify: true}, // the sink's test certificate names example.com
					Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
						return (&net.Dialer{}).DialContext(ctx, network, sink.srv.Listener.Addr().String())
					}}).(*h1.Transport)}
				t.Cleanup(tr.CloseIdleConnections)
				src := knockingSource(t, mode, signedGenerator(t, w, nil), k, n)
				// 20 ms apart: a connection rests before each send is due.
				res, err := recorded(context.Background(), flood.Plan{Limits: flood.Limits{MaxSends: n, MaxInflight: 64}, Pacer: mustConstant(t, 50), Source: src, Transport: tr})
				if err != nil {
					t.Fatal(err)
				}
				o, s := res.Overall, k.Signatures()
				if sink.bad.Load() != 0 || o.Counts.Sent != n || o.Tally.Classes[record.Class202] != n || s.FirstCavage+s.FirstRFC9421 != n || s.Fell() != 0 {
					t.Fatalf("%d did not verify; counts %+v, tally %+v, signatures %+v; want %d sent, accepted and counted once", sink.bad.Load(), o.Counts, o.Tally, s, n)
				}
				written, tries := o.Counts.Written, tr.tries.Load()
				if want := map[bool]int64{true: n, false: 0}[c.written]; tries != want {
					t.Errorf("the dispatcher tried %d of %d sends itself, want %d", tries, n, want)
				}
				// The first send dials. A send that leaves on time finds
				// resting the connection its predecessor's answer freed, but
				// how many leave on time is the machine's: a busy one
				// (the race detector, other packages' tests, signers
				// starved of a core) sends them late and in bunches,
				// with every connection busy, so that each goes to a
				// worker that dials. So most only when most left on time.
				if onTime := o.Lateness.ValueAtQuantile(50) < onTimeMedianUS; c.written && onTime && written < n/2 || !c.written && written != 0 {
					t.Errorf("the dispatcher wrote %d of %d sends (median lateness %d µs), want most: %v", written, n, o.Lateness.ValueAtQuantile(50), c.written)
				}
				// Each as the head the signer made with it (RenderHead).
				if heads := tr.heads.Load(); heads != o.Counts.Written {
					t.Errorf("%d of the %d sends the dispatcher wrote copied a head made ahead, want all", heads, o.Counts.Written)
				}
			})
		}
	}
}

// onTimeMedianUS is the median lateness, in µs, of a run that kept its
// schedule: a fifth of its 20 ms between sends.
const onTimeMedianUS = 4000

// headsCounted is h1's transport counting the WriteHead calls (tries) and
// the requests they put on the wire (heads).
type headsCounted struct {
	*h1.Transport
	heads, tries atomic.Int64
}

func (t *headsCounted) WriteHead(h *h1.Head, body []byte, lane int, deadline time.Time) (h1.Written, bool, error) {
	w, ok, err := t.Transport.WriteHead(h, body, lane, deadline)
	t.tries.Add(1)
	if ok && err == nil {
		t.heads.Add(1)
	}
	return w, ok, err
}
