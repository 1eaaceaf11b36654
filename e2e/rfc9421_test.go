package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// TestFloodRFC9421PassesIndependentVerifiers prepares requests exactly as
// the flood does with --signature rfc9421 (traffic.Knocker, the pipeline's
// and presigner's path) and has two RFC 9421 implementations nobody here
// wrote judge each: npm http-message-signatures and Misskey's
// node-http-message-signatures (its signature base; see verify9421.mjs),
// both requiring what Mastodon requires (keyid, created, @method,
// @target-uri, content-digest with sha-256). A tampered copy must be
// refused by both, so the test can fail. The same request signed again
// with draft-cavage, as a double knock's second attempt is, must pass the
// cavage verifiers (verify.mjs).
func TestFloodRFC9421PassesIndependentVerifiers(t *testing.T) {
	t.Parallel()
	peers := NodePeers(t)
	world, err := actors.Open(actors.Config{Origins: 1, Actors: 2, Domain: "flood%d.test", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	persona := &traffic.Persona{Acct: "load0@sut.test", ID: "https://sut.test/users/load0", Inbox: "https://sut.test/users/load0/inbox",
		SharedInbox: "https://sut.test/inbox", Target: "https://sut.test/inbox", Posts: []string{"https://sut.test/users/load0/posts/1"}}
	gen, err := traffic.NewGenerator(traffic.GeneratorConfig{Senders: world.Actors(), Personas: []*traffic.Persona{persona},
		Mix: record.Mix{Create: 1, Like: 1, Follow: 1}, Seed: 1, NoteBytes: 200, Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	signer := signing.NewSigner(signing.SignerOptions{UserAgent: "crowd/test"})
	k := traffic.NewKnocker(traffic.SignatureRFC9421, signer)
	st := gen.Stream()
	keyOf := map[string]string{}
	for _, a := range world.Actors() {
		keyOf[a.KeyID] = a.PublicKeyPEM()
	}
	dump := func(p *flood.Prepared, header http.Header, tamper func(map[string]any)) []byte {
		t.Helper()
		req := &http.Request{Method: p.Method, URL: p.URL, Header: header, Host: p.URL.Host}
		raw, err := dumpRequest(req, p.Body)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(raw, &m)
		m["publicKeyPem"] = keyOf[traffic.TicketOf(p).Knock.Sender.KeyID]
		if tamper != nil {
			tamper(m)
		}
		out, _ := json.Marshal(m)
		return out
	}
	verdicts := func(t *testing.T, script string, input []byte, want int, libs int) {
		t.Helper()
		code, vs := runVerifier(t, []string{"node", filepath.Join(peers, script)}, input)
		if code != want || len(vs) != libs {
			t.Errorf("%s: exit %d, want %d: %+v", script, code, want, vs)
		}
		for _, v := range vs {
			if v.OK != (want == 0) {
				t.Errorf("%s: %s says ok=%v (%v)", script, v.Lib, v.OK, deref(v.Error))
			}
		}
	}
	for i := range 3 { // a Create, a Like and a Follow, in the mix's draw order
		d, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		p, err := k.Prepare(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%d-%s", i, p.Type), func(t *testing.T) {
			if p.Header.Get("Signature-Input") == "" || p.Header.Get("Content-Digest") == "" {
				t.Fatalf("not an RFC 9421 request: %v", p.Header)
			}
			verdicts(t, "verify9421.mjs", dump(p, p.Header, nil), 0, 2)
			verdicts(t, "verify9421.mjs", dump(p, p.Header, func(m map[string]any) {
				m["body"] = strings.Replace(m["body"].(string), `"type":"`, `"type":"X`, 1)
			}), 1, 2)
			verdicts(t, "verify9421.mjs", dump(p, p.Header, func(m map[string]any) {
				m["url"] = "https://sut.test/users/load1/inbox"
			}), 1, 2)
			verdicts(t, "verify9421.mjs", dump(p, p.Header, func(m map[string]any) { m["method"] = "PUT" }), 1, 2)
			// The double knock's second attempt: the same activity signed
			// again with draft-cavage on a copy of the headers.
			h := p.Header.Clone()
			h.Del("Date")
			req := &http.Request{Method: p.Method, URL: p.URL, Header: h, Host: p.URL.Host}
			if err := signer.Sign(signing.SchemeCavage, req, p.Body, traffic.TicketOf(p).Knock.Sender.KeyID, traffic.TicketOf(p).Knock.Sender.SigningKey()); err != nil {
				t.Fatal(err)
			}
			verdicts(t, "verify.mjs", dump(p, req.Header, nil), 0, 3)
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestFloodRealFedifyDoubleKnock floods a real Fedify 1.5.9, which
// predates RFC 9421 verification, with --signature both in every signing
// mode: the first activities go RFC 9421, Fedify refuses them (401), the
// crowd sends each again signed draft-cavage and from then on goes cavage
// first to sut.test. Every activity must end accepted, and the record must
// say how many fell back, which must be how many RFC 9421 attempts Fedify
// refused. Each mode sends 20 activities: the first knocks and the switch
// to cavage-first happen within the first few.
func TestFloodRealFedifyDoubleKnock(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 2)
	crowd := BuildCrowd(t)
	for _, mode := range []string{"pipeline", "presign", "jit"} {
		t.Run(mode, func(t *testing.T) {
			f.call(t, "POST", fedifyCtl+"/stats/reset", nil, nil)
			out := t.TempDir()
			cmd := f.ns.Command(context.Background(), crowd, "flood", "--rate", "10", "--seconds", "0", "--max-sends", "20", "--timeout", "60s",
				"--signature", "both", "--signing", mode, "--mix", "create=2,like=1",
				"--personas", "load%d@sut.test", "--count", "2", "--admin", "127.0.0.1:9180", "--state", f.state,
				"--out", out, "--label", "knock", "--log-format", "json")
			output, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("crowd flood: %v\n%s", err, output)
			}
			paths, _ := filepath.Glob(filepath.Join(out, "*-knock.json"))
			if len(paths) != 1 {
				t.Fatalf("want one record in %s, got %v\n%s", out, paths, output)
			}
			raw, err := os.ReadFile(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				floodRecord
				Signatures *record.Signatures `json:"signatures"`
			}
			if err := json.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			var stats struct {
				VerifiedTotal, RejectedTotal, FailedTotal int64
				Rejections                                []struct{ Type, Reason string }
			}
			f.call(t, "GET", fedifyCtl+"/stats", nil, &stats)
			s := rec.Signatures
			t.Logf("crowd: %+v tally %v signatures %+v; Fedify: verified %d rejected %d failed %d",
				rec.Overall.Counts, rec.Overall.Tally, s, stats.VerifiedTotal, stats.RejectedTotal, stats.FailedTotal)
			if s == nil || s.Scheme != "both" {
				t.Fatalf("record's signatures: %+v", s)
			}
			sent := rec.Overall.Counts.Sent
			if rec.Partial || sent != 20 || rec.Overall.Tally["202"] != sent || stats.VerifiedTotal != sent {
				t.Errorf("every activity must be accepted: sent %d, tally %v, Fedify verified %d", sent, rec.Overall.Tally, stats.VerifiedTotal)
			}
			if s.FellBack < 1 || s.SecondAccepted != s.FellBack || s.FellBack != s.FirstRFC9421 || s.FirstCavage+s.FirstRFC9421 != sent ||
				s.CavageFirstHosts != 1 || s.Triggers["401"] != s.FellBack {
				t.Errorf("the record's double knocks: %+v", s)
			}
			if stats.RejectedTotal != s.FellBack {
				t.Errorf("Fedify refused %d requests, the record says %d fell back: %+v", stats.RejectedTotal, s.FellBack, stats.Rejections)
			}
			if !strings.Contains(string(output), "signature both: first attempts") {
				t.Errorf("the table does not say how the signatures went:\n%s", output)
			}
		})
	}
}
