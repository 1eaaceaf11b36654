package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/signing"
)

// TestCrowdSignaturesPassIndependentVerifiers signs what the crowd sends
// (a Create POST to an inbox, a GET of an actor) with the crowd's own
// signer and actor keys (the GET through apclient, as every fetch goes,
// captured on the wire), and has every verifier nobody here wrote judge
// it: Misskey's, Joyent's, activitypub-http-signatures and python3-httpsig.
// A tampered copy must be refused by each, so the test can fail.
func TestCrowdSignaturesPassIndependentVerifiers(t *testing.T) {
	t.Parallel()
	peers := NodePeers(t)
	python := PythonHTTPSig(t)
	backend := SigningBackend(t) // libcrypto in CI (CROWD_CRYPTO)
	world, err := actors.Open(actors.Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: t.TempDir(), Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	alice := world.Actors()[0]
	if got := signsWith(alice.SigningKey()); got != backend.Name() {
		t.Fatalf("alice signs with %s, want %s", got, backend.Name())
	}
	t.Logf("signing backend %s", backend.Describe())
	signer := signing.NewSigner(signing.SignerOptions{UserAgent: "crowd/test"})
	create := alice.CreateNote(actors.NoteSpec{Published: time.Now(), Seq: 1, Bytes: 200,
		MentionID: "https://sut.test/users/load0", MentionHandle: "@load0@sut.test"})
	body, err := json.Marshal(create)
	if err != nil {
		t.Fatal(err)
	}

	dump := func(method, url string, body []byte, tamper func(map[string]any)) []byte {
		t.Helper()
		var req *http.Request
		if method == http.MethodPost {
			req, _ = http.NewRequest(method, url, bytes.NewReader(body))
			if err := signer.SignPost(req, body, alice.KeyID, alice.SigningKey()); err != nil {
				t.Fatal(err)
			}
		} else {
			req = fetchedGet(t, signer, world.Origins[0].Instance, url)
		}
		raw, err := dumpRequest(req, body)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(raw, &m)
		m["publicKeyPem"] = alice.PublicKeyPEM()
		if method == http.MethodGet {
			m["publicKeyPem"] = world.Origins[0].Instance.PublicKeyPEM()
		}
		if tamper != nil {
			tamper(m)
		}
		out, _ := json.Marshal(m)
		return out
	}
	for _, c := range []struct {
		name  string
		input []byte
		want  int // exit status of every verifier: 0 all accept, 1 refused
	}{
		{"signed Create POST to a shared inbox", dump("POST", "https://sut.test/inbox", body, nil), 0},
		{"signed GET of an actor", dump("GET", "https://sut.test/users/load0", nil, nil), 0},
		{"the same POST with its body changed", dump("POST", "https://sut.test/inbox", body, func(m map[string]any) {
			m["body"] = string(bytes.Replace(body, []byte("Create"), []byte("Delete"), 1))
		}), 1},
		{"the same GET replayed to another actor", dump("GET", "https://sut.test/users/load0", nil, func(m map[string]any) {
			m["url"] = "https://sut.test/users/load1"
		}), 1},
		{"the same POST replayed to another path", dump("POST", "https://sut.test/inbox", body, func(m map[string]any) {
			m["url"] = "https://sut.test/users/load1/inbox"
		}), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			libs := map[string]bool{}
			for _, argv := range [][]string{{"node", filepath.Join(peers, "verify.mjs")}, python} {
				code, verdicts := runVerifier(t, argv, c.input)
				if code != c.want {
					t.Errorf("%s: exit %d, want %d: %+v", filepath.Base(argv[len(argv)-1]), code, c.want, verdicts)
				}
				for _, v := range verdicts {
					libs[v.Lib] = true
					if v.OK != (c.want == 0) {
						t.Errorf("%s says ok=%v (%v)", v.Lib, v.OK, v.Error)
					}
				}
			}
			if len(libs) != 4 {
				t.Errorf("want verdicts of 4 libraries, got %v", libs)
			}
		})
	}
}

// fetchedGet is the GET of url as the crowd's one ActivityPub client sends
// it, signed as the instance actor inst, captured as it arrived at a server
// that every host name dials (an https URL spoken in plain HTTP on it).
func fetchedGet(t *testing.T, signer *signing.Signer, inst *actors.Actor, url string) *http.Request {
	t.Helper()
	captured := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		captured <- r.Clone(context.Background())
		w.Header().Set("Content-Type", "application/activity+json")
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	f := apclient.New(apclient.Options{Client: &http.Client{Transport: &http.Transport{DialContext: dial, DialTLSContext: dial}},
		Signer: signer, As: apclient.SignAs(apclient.Identity{KeyID: inst.KeyID, Key: inst.SigningKey()})})
	if _, err := f.Get(context.Background(), url, ""); err != nil {
		t.Fatal(err)
	}
	return <-captured
}
