package pasture

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/fetchkind"
	"github.com/crowdfed/crowd/internal/histgeom"
)

// TestFetchbackWindowOverRealListeners opens a window through the admin
// API, fetches from the origins over HTTPS as a SUT does, ends the window,
// fetches once more, and reads the tally: every GET in its kind, with its
// status class, signed or not, its latency, and the one after the end
// apart; a request before the window and the inbox's POST are not counted.
func TestFetchbackWindowOverRealListeners(t *testing.T) {
	p := testPasture(t, Config{HTTPSAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0"})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(ctx) })
	httpsAddr := p.Addr("https")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: caPool(p.CA())},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, httpsAddr)
		},
	}}
	fetch := func(method, url string, signed bool) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(""))
		req.Header.Set("Accept", "application/activity+json")
		if signed {
			req.Header.Set("Signature", `keyId="https://sut.test/actor#main-key",signature="x"`)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	admin, err := adminapi.New("http://"+p.Addr("admin"), adminapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := p.cfg.World.ActorByID("https://flood1.test/users/alice")
	note := alice.NoteID(actors.NoteSpec{Seq: 1, MentionID: "https://sut.test/users/a", MentionHandle: "@a@sut.test"})

	fetch("GET", "https://flood1.test/users/alice", true) // before the window: not counted
	win, err := admin.OpenFetchback(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	fetch("GET", "https://flood1.test/.well-known/webfinger?resource=acct:alice@flood1.test", false)
	fetch("GET", "https://flood1.test/users/alice", true)
	fetch("GET", "https://flood1.test/users/alice", false)
	fetch("GET", note, true)
	fetch("GET", "https://flood1.test/users/alice/outbox", true)
	fetch("GET", "https://flood1.test/users/alice/notes/not-a-token", true) // 404
	fetch("POST", "https://flood1.test/users/alice/inbox", true)            // a delivery, not a fetch
	if _, err := admin.EndFetchback(ctx, win.ID); err != nil {
		t.Fatal(err)
	}
	fetch("GET", "https://flood1.test/nodeinfo/2.1", false) // after the end
	open, err := admin.Fetchbacks(ctx, "")
	if err != nil || len(open) != 1 || open[0].ID != win.ID || open[0].Ended == nil {
		t.Fatalf("open windows: %+v %v", open, err)
	}
	tally, err := admin.CloseFetchback(ctx, win.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]adminapi.FetchbackKind{
		fetchkind.WebFinger:  {Fetches: 1, Status: map[string]int64{"2xx": 1}},
		fetchkind.Actor:      {Fetches: 2, Signed: 1, Status: map[string]int64{"2xx": 2}},
		fetchkind.Object:     {Fetches: 2, Signed: 2, Status: map[string]int64{"2xx": 1, "404": 1}},
		fetchkind.Collection: {Fetches: 1, Signed: 1, Status: map[string]int64{"2xx": 1}},
		fetchkind.NodeInfo:   {Fetches: 1, AfterEnd: 1, Status: map[string]int64{"2xx": 1}},
	}
	if len(tally.Kinds) != len(want) {
		t.Errorf("kinds %v, want %v", tally.Kinds, want)
	}
	for kind, w := range want {
		got := tally.Kinds[kind]
		if got.Fetches != w.Fetches || got.AfterEnd != w.AfterEnd || got.Signed != w.Signed || !equalCounts(got.Status, w.Status) {
			t.Errorf("%s: %+v, want %+v", kind, got, w)
		}
		h, err := histgeom.Decode(got.Latency)
		if err != nil || h.TotalCount() != w.Fetches || h.Max() <= 0 {
			t.Errorf("%s latency: %v values, max %v µs, %v", kind, h.TotalCount(), h.Max(), err)
		}
	}
	if tally.Objects["notes"] != 2 || len(tally.Objects) != 1 {
		t.Errorf("objects %v, want notes 2", tally.Objects)
	}
	if tally.Credits[adminapi.CreditCreate] != 1 || len(tally.Credits) != 1 {
		t.Errorf("credits %v, want Create 1 (the note; the 404 names none)", tally.Credits)
	}
	var ae *adminapi.Error
	if _, err := admin.CloseFetchback(ctx, win.ID); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("closing twice: %v, want 404", err)
	}
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
