package originaddr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/h1"
)

// poolKinds make a Transport over each kind of pool the crowd sends with,
// dialling with dial: net/http's, and internal/h1's (the flood's fast
// client).
var poolKinds = []struct {
	name string
	make func(dial DialFunc, plan *Plan) *Transport
}{
	{"net/http", func(dial DialFunc, plan *Plan) *Transport {
		return NewTransport(&http.Transport{DialContext: dial}, plan)
	}},
	{"h1", func(dial DialFunc, plan *Plan) *Transport {
		mk := func(d DialFunc) Pool { return h1.NewTransport(h1.Options{Dial: h1.DialFunc(d)}) }
		return NewPools(mk(dial), dial, mk, plan)
	}},
}

// remoteLog is a real HTTP server on the wildcard address that remembers
// the remote address of every request.
type remoteLog struct {
	mu    sync.Mutex
	addrs []string
	url   string
}

func startRemoteLog(t *testing.T) *remoteLog {
	t.Helper()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	rl := &remoteLog{url: fmt.Sprintf("http://127.0.0.1:%d/inbox", l.Addr().(*net.TCPAddr).Port)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		rl.mu.Lock()
		rl.addrs = append(rl.addrs, host)
		rl.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return rl
}

func (rl *remoteLog) seen() []string {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return append([]string(nil), rl.addrs...)
}

func send(t *testing.T, rt http.RoundTripper, url string, h http.Header) error {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	maps(req.Header, h)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}

func maps(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

func cavage(host string) http.Header {
	return http.Header{"Signature": {fmt.Sprintf(`keyId="https://%s/users/alice#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest",signature="AAAA"`, host)}}
}

func rfc9421(host string) http.Header {
	return http.Header{
		"Signature-Input": {fmt.Sprintf(`sig1=("@method" "@target-uri");created=1700000000;keyid="https://%s/users/bob#main-key";alg="rsa-v1_5-sha256"`, host)},
		"Signature":       {"sig1=:AAAA:"},
	}
}

// Each origin's requests reach a real server from the origin's own
// address, over connections of their own; unsigned ones and those of
// strangers leave as the system chooses.
func TestTransportSendsFromOriginAddress(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			plan := mustPlan(t, "127.1.0.0/16", 50, 0)
			testSendsFromOriginAddress(t, k.make(BindDial(&net.Dialer{Timeout: 5 * time.Second}), plan), plan)
		})
	}
}

func testSendsFromOriginAddress(t *testing.T, tr *Transport, plan *Plan) {
	rl := startRemoteLog(t)
	defer tr.CloseIdleConnections()
	var want []string
	for k := 1; k <= 50; k++ {
		h := cavage(plan.Host(k))
		if k%2 == 0 {
			h = rfc9421(plan.Host(k))
		}
		// twice: the second request reuses the origin's pooled connection
		for range 2 {
			if err := send(t, tr, rl.url, h); err != nil {
				t.Fatalf("origin %d: %v", k, err)
			}
			want = append(want, plan.Addrs(k)[0].String())
		}
	}
	if err := send(t, tr, rl.url, cavage("stranger.example")); err != nil {
		t.Fatal(err)
	}
	if err := send(t, tr, rl.url, http.Header{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "127.0.0.1", "127.0.0.1")
	got := rl.seen()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("remote addresses:\n got %v\nwant %v", got, want)
	}
	if tr.Sources() != 50 {
		t.Errorf("Sources() = %d, want 50", tr.Sources())
	}
}

// A base dialer that ignores the source would make every origin one
// client again: the request fails instead, naming both addresses.
func TestTransportRefusesUnboundDialer(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			rl := startRemoteLog(t)
			tr := k.make((&net.Dialer{}).DialContext, mustPlan(t, "127.1.0.0/16", 5, 0))
			defer tr.CloseIdleConnections()
			err := send(t, tr, rl.url, cavage("flood3.test"))
			if err == nil || !strings.Contains(err.Error(), "not the origin's address 127.1.0.2") {
				t.Fatalf("err = %v, want a refusal naming 127.1.0.2", err)
			}
			if n := len(rl.seen()); n != 0 {
				t.Errorf("%d requests arrived from the wrong address", n)
			}
		})
	}
}

// With one shared address, nothing is rebound: the base transport sends.
func TestTransportSharedAddressPassesThrough(t *testing.T) {
	rl := startRemoteLog(t)
	plan := mustPlan(t, "127.0.0.1", 5, 0)
	tr := NewTransport(&http.Transport{}, plan)
	if err := send(t, tr, rl.url, cavage("flood3.test")); err != nil {
		t.Fatal(err)
	}
	if tr.Sources() != 0 {
		t.Errorf("Sources() = %d with a shared address", tr.Sources())
	}
}

func TestSignerHost(t *testing.T) {
	cases := []struct {
		h    http.Header
		want string
	}{
		{cavage("flood3.test"), "flood3.test"},                             // draft-cavage
		{rfc9421("flood4.test"), "flood4.test"},                            // RFC 9421
		{cavage("flood5.test:8443"), "flood5.test:8443"},                   // a port stays; Plan.Origin drops it
		{http.Header{"Signature": {`keyId="flood3.test#k"`}}, ""},          // no scheme: not a URL
		{http.Header{"Signature": {`algorithm="rsa-sha256"`}}, ""},         // no keyId
		{http.Header{}, ""},                                                // unsigned
		{http.Header{"Signature": {`keyId="https://a.test?x"`}}, "a.test"}, // a query ends the host
	}
	for _, c := range cases {
		if got := SignerHost(c.h); got != c.want {
			t.Errorf("SignerHost(%v) = %q, want %q", c.h, got, c.want)
		}
	}
}

func FuzzSignerHost(f *testing.F) {
	f.Add(`keyId="https://flood3.test/users/a#main-key"`, `sig1=();keyid="https://x.test/k"`)
	f.Fuzz(func(t *testing.T, sig, input string) {
		host := SignerHost(http.Header{"Signature": {sig}, "Signature-Input": {input}})
		if strings.ContainsAny(host, `/#?"`) {
			t.Fatalf("host %q holds a delimiter", host)
		}
	})
}

// The per-address transport honours an h1.Aborter exactly when its pools
// do: an aborted request through an origin's own pool of h1's fails as
// cancelled and never reaches the server; net/http's pools do not claim
// to honour it.
func TestTransportHonoursAborterAsItsPoolsDo(t *testing.T) {
	for _, k := range poolKinds {
		t.Run(k.name, func(t *testing.T) {
			plan := mustPlan(t, "127.1.0.0/16", 5, 0)
			tr := k.make(BindDial(&net.Dialer{Timeout: 5 * time.Second}), plan)
			defer tr.CloseIdleConnections()
			if got, want := tr.HonoursAborter(), k.name == "h1"; got != want {
				t.Fatalf("HonoursAborter() = %v, want %v", got, want)
			}
			if !tr.HonoursAborter() {
				return
			}
			rl := startRemoteLog(t)
			a := &h1.Aborter{}
			a.Abort()
			req, err := http.NewRequestWithContext(h1.WithAborter(context.Background(), a), http.MethodPost, rl.url, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			maps(req.Header, cavage(plan.Host(3)))
			if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
				t.Errorf("an aborted request through origin 3's pool: %v, want context.Canceled", err)
			}
			if got := rl.seen(); len(got) != 0 || tr.Sources() != 1 {
				t.Errorf("the server saw %v through %d pools; want nothing, through origin 3's own", got, tr.Sources())
			}
		})
	}
}
