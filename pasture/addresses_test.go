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

	"github.com/miekg/dns"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/originaddr"
)

// Shard 1 of 3 of a six-origin world on 127.1.0.0/24 (slices of 85
// addresses): its DNS answers every origin of the world at the origin's
// own address, and its wildcard HTTPS listener answers its own origins at
// theirs.
func TestShardServesItsSliceAndNamesTheWorld(t *testing.T) {
	w := openWorld(t, actors.Config{Origins: 6, Actors: 1, Domain: "flood%d.test", Shard: actors.Shard{I: 1, N: 3}})
	p := testPasture(t, Config{World: w, HTTPSAddr: "0.0.0.0:0", DNSAddr: "127.0.0.1:0", Range: parseRange(t, "127.1.0.0/24"), DNSUpstreams: []string{}})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(ctx) })

	// origin k: shard (k-1) mod 3, the ((k-1) div 3)-th address of that shard's slice
	want := map[string]string{
		"flood1.test": "127.1.0.0", "flood2.test": "127.1.0.85", "flood3.test": "127.1.0.170",
		"flood4.test": "127.1.0.1", "flood5.test": "127.1.0.86", "flood6.test": "127.1.0.171",
		"ns.test": "127.1.0.85", // the name server: this shard's first origin's address
	}
	for name, addr := range want {
		m := new(dns.Msg)
		m.SetQuestion(name+".", dns.TypeA)
		in, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, p.Addr("dns"))
		if err != nil || len(in.Answer) != 1 || in.Answer[0].(*dns.A).A.String() != addr {
			t.Errorf("A %s = %v (%v), want %s", name, in, err, addr)
		}
	}

	_, port, _ := net.SplitHostPort(p.Addr("https"))
	for _, host := range []string{"flood2.test", "flood5.test"} {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: caPool(p.CA())},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(want[host], port))
			},
		}}
		resp, err := client.Get("https://" + host + "/users/alice")
		if err != nil {
			t.Fatalf("%s at %s: %v", host, want[host], err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "https://"+host+"/users/alice") {
			t.Errorf("%s at %s: %d %s", host, want[host], resp.StatusCode, body)
		}
	}

	info := p.WorldPage(adminapi.WorldQuery{})
	if info.Addresses == nil || info.Addresses.Advertise != "127.1.0.0/24" || info.Addresses.Origins != 6 {
		t.Errorf("World().Addresses = %+v, want the range and the world's 6 origins", info.Addresses)
	}
}

// One address is shared by every origin, as before ranges: /api/world
// says nothing about addresses, and the DNS answers it for each origin.
func TestSharedAddress(t *testing.T) {
	rng, err := originaddr.ParseRange("127.0.0.9")
	if err != nil {
		t.Fatal(err)
	}
	p := testPasture(t, Config{DNSAddr: "127.0.0.1:0", Range: &rng, DNSUpstreams: []string{}})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(ctx) })
	for _, name := range []string{"flood1.test.", "flood2.test."} {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		in, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, p.Addr("dns"))
		if err != nil || len(in.Answer) != 1 || in.Answer[0].(*dns.A).A.String() != "127.0.0.9" {
			t.Errorf("A %s = %v (%v), want 127.0.0.9", name, in, err)
		}
	}
	if a := p.WorldPage(adminapi.WorldQuery{}).Addresses; a != nil {
		t.Errorf("World().Addresses = %+v with a shared address", a)
	}
}

func TestRangeTooSmallNamesTheFlag(t *testing.T) {
	rng, err := originaddr.ParseRange("127.1.0.0/31")
	if err != nil {
		t.Fatal(err)
	}
	w, err := actors.Open(actors.Config{Origins: 3, Actors: 1, Domain: "flood%d.test", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	_, err = New(Config{World: w, Range: &rng})
	if !errors.Is(err, actors.ErrConfig) || !strings.Contains(err.Error(), "--advertise") {
		t.Fatalf("New = %v, want ErrConfig naming --advertise", err)
	}
}

// TestStartWarnsOfARangeThatIsNotLocal: origins at their own addresses
// send from them, which needs the range local (the docs' `ip route add
// local`). A range this machine cannot bind (TEST-NET-2: binding it fails
// with EADDRNOTAVAIL, nothing is sent) is warned of at start, naming
// --advertise, the address and the route; the crowd starts (compose adds
// the route once it has). A local range, or one address shared by every
// origin (perhaps a NAT's), draws no warning.
func TestStartWarnsOfARangeThatIsNotLocal(t *testing.T) {
	if sysctl := originaddr.NonlocalBind(); sysctl != "" {
		t.Skipf("%s is 1: this machine binds any address, local or not", sysctl)
	}
	for _, c := range []struct {
		name      string
		advertise string
		say       []string // nil: no warning
	}{
		// The walk: the docs' block without its route, here TEST-NET-2.
		{"range not local", "198.51.100.0/24", []string{"--advertise 198.51.100.0/24", "cannot bind 198.51.100.0", "ip route add local 198.51.100.0/24 dev lo"}},
		// All of 127.0.0.0/8 is local on Linux.
		{"loopback range", "127.1.0.0/24", nil},
		// One shared address is never bound: only where the SUT reaches the crowd.
		{"shared address", "198.51.100.7", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			core, logs := observer.New(zap.WarnLevel)
			cw, err := StartCrowd(context.Background(), CrowdConfig{Logger: zap.New(core),
				World:  actors.Config{Origins: 3, Actors: 1, Domain: "flood%d.test", StateDir: state},
				Listen: Config{AdminAddr: "127.0.0.1:0", DNSUpstreams: []string{}, Range: parseRange(t, c.advertise)}})
			if err != nil {
				t.Fatalf("StartCrowd = %v, want a started crowd (the route may come after it)", err)
			}
			cw.Shutdown(context.Background())
			warned := logs.FilterMessageSnippet("not local").All()
			if c.say == nil {
				if len(warned) != 0 {
					t.Errorf("warned %+v", warned)
				}
				return
			}
			if len(warned) != 1 {
				t.Fatalf("warnings %+v, want one of the addresses not local", logs.All())
			}
			why, _ := warned[0].ContextMap()["error"].(string)
			for _, s := range c.say {
				if !strings.Contains(why, s) {
					t.Errorf("the warning %q does not say %q", why, s)
				}
			}
		})
	}
}
