package flood

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/originaddr"
)

// TestSendsFromAnAddressNotLocalStopTheRun: sends leave from their
// origin's address (crowd serve --advertise RANGE); where this machine
// cannot bind it (the range not local: the docs' `ip route add local`
// skipped), no SUT refused anything, and a run that counted the failed
// binds as connection errors blamed the SUT. The run stops at the first,
// its reason naming the address and the question to ask; no send counts
// as a connection error and the server hears nothing. A local range, in
// the same set-up, is measured as ever. Real binds: all of 127.0.0.0/8 is
// local on Linux; TEST-NET-2 (198.51.100.0/24) is on no interface here,
// so binding it fails with EADDRNOTAVAIL and nothing is sent to it.
func TestSendsFromAnAddressNotLocalStopTheRun(t *testing.T) {
	if sysctl := originaddr.NonlocalBind(); sysctl != "" {
		t.Skipf("%s is 1: this machine binds any address, local or not", sysctl)
	}
	for _, a := range mustInterfaceAddrs(t) {
		if netip.MustParsePrefix("198.51.100.0/24").Contains(a) {
			t.Fatalf("this machine holds %s: the test needs a block that is not local", a)
		}
	}
	var heard atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heard.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/inbox")
	for _, c := range []struct {
		name      string
		advertise string
		stopped   string // in the stop's reason; "" runs to its end
	}{
		// The walk: a range no route makes local.
		{"range not local", "198.51.100.0/24", "cannot bind the origin's address 198.51.100.0 (EADDRNOTAVAIL): is the advertised range local?"},
		// A local range: every send answered.
		{"range local", "127.1.0.0/24", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			heard.Store(0)
			rng, err := originaddr.ParseRange(c.advertise)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := originaddr.NewPlan(rng, "flood%d.test", 5, 0)
			if err != nil {
				t.Fatal(err)
			}
			tr := originaddr.NewTransport(&http.Transport{DialContext: originaddr.BindDial(&net.Dialer{Timeout: 2 * time.Second})}, plan)
			defer tr.CloseIdleConnections()
			src := SourceFunc(func(context.Context) (*Prepared, error) {
				return &Prepared{Type: "Create", Method: http.MethodPost, URL: u, Body: []byte(`{}`), Header: http.Header{
					"Signature": {`keyId="https://flood1.test/users/alice#main-key",algorithm="rsa-sha256",headers="date",signature="AAAA"`}}}, nil
			})
			res := mustRun(t, context.Background(), Plan{Pacer: mustConstant(t, 50), Source: src, Transport: tr,
				Limits: Limits{Duration: 400 * time.Millisecond, Timeout: 2 * time.Second}})
			conn := res.Overall.Tally.Classes[record.ClassConnError]
			if c.stopped == "" {
				if res.Partial || conn != 0 || res.Overall.Tally.Classes[record.Class202] == 0 {
					t.Fatalf("partial %v (%s), %d connection errors, %d answered 202; want a whole run, all answered",
						res.Partial, res.Reason, conn, res.Overall.Tally.Classes[record.Class202])
				}
				return
			}
			if !res.Partial || !strings.Contains(string(res.Reason), c.stopped) {
				t.Errorf("partial %v, reason %q; want the run stopped saying %q", res.Partial, res.Reason, c.stopped)
			}
			if conn != 0 {
				t.Errorf("%d sends counted as connection errors (the SUT's refusal)", conn)
			}
			if n := heard.Load(); n != 0 {
				t.Errorf("the server heard %d requests", n)
			}
		})
	}
}

// mustInterfaceAddrs are this machine's interface addresses.
func mustInterfaceAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, a := range ifs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}
