package main

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/crowdfed/crowd/internal/crowdtest"
	"github.com/crowdfed/crowd/internal/loopback"
)

// TestServeWarnsOfADNSRecordOverridingAnOrigin: a --dns-record the command
// line gives for one of the crowd's own origins is served (it wins) and
// warned of at start, naming the origin; the same record from the
// environment (a fleet maps every origin to its shard that way) and a
// record of the SUT's name are no news.
func TestServeWarnsOfADNSRecordOverridingAnOrigin(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string   // CROWD_DNS_RECORD
		args []string // more serve flags
		warn bool
	}{
		// A slip: the origin's own name on the command line.
		{"an origin's name typed", "", []string{"--dns-record", "flood1.test=127.0.0.9"}, true},
		// What the flag is for: the SUT's name.
		{"the SUT's name", "", []string{"--dns-record", "sut.test=127.0.0.8"}, false},
		// A fleet's map, from the environment.
		{"an origin's name from the environment", "flood1.test=127.0.0.9", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("CROWD_DNS_RECORD", tc.env)
			}
			admin := loopback.Free(t)
			args := serveArgs(t.TempDir(), admin, append([]string{"--dns", "127.0.0.1:0", "--dns-upstream", "127.0.0.1:1"}, tc.args...)...)
			ctx, cancel := context.WithCancel(context.Background())
			var stderr crowdtest.SyncBuffer
			code := make(chan int, 1)
			go func() { code <- execute(ctx, args, nil, io.Discard, &stderr) }()
			waitAdmin(t, admin, code)
			// Whoever gave it, the record is what the crowd's DNS answers.
			if want := map[bool]string{true: "127.0.0.9", false: "127.0.0.1"}[tc.env != "" || tc.warn]; lookupA(t, dnsListener(t, stderr.String()), "flood1.test.") != want {
				t.Errorf("flood1.test is not answered %s", want)
			}
			cancel()
			select {
			case <-code:
			case <-time.After(15 * time.Second):
				t.Fatal("serve did not stop")
			}
			warned := strings.Contains(stderr.String(), "--dns-record names one of the crowd's origins")
			if warned != tc.warn || (warned && !strings.Contains(stderr.String(), "flood1.test")) {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.warn, stderr.String())
			}
		})
	}
}

// TestServeWarnsWithoutHTTPS: a serve given no HTTPS listener says that no
// SUT can fetch its origins unless a proxy ends TLS for them; one with a
// listener says nothing of it.
func TestServeWarnsWithoutHTTPS(t *testing.T) {
	for _, c := range []struct {
		https string
		warn  bool
	}{
		{"", true},             // none: the warning
		{"127.0.0.1:0", false}, // one: no news
	} {
		admin := loopback.Free(t)
		args := serveArgs(t.TempDir(), admin, "--https", c.https, "--http", loopback.Free(t))
		var stderr crowdtest.SyncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		code := make(chan int, 1)
		go func() { code <- execute(ctx, args, nil, io.Discard, &stderr) }()
		waitAdmin(t, admin, code)
		cancel()
		select {
		case <-code:
		case <-time.After(15 * time.Second):
			t.Fatal("serve did not stop")
		}
		if warned := strings.Contains(stderr.String(), "--https is empty"); warned != c.warn {
			t.Errorf("--https %q: warned %v, want %v:\n%s", c.https, warned, c.warn, stderr.String())
		}
	}
}

// dnsListener is the address serve's log says its DNS listens on.
func dnsListener(t *testing.T, log string) string {
	t.Helper()
	m := regexp.MustCompile(`"listener":"dns","addr":"([0-9.]+:[0-9]+) `).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no DNS listener in the log:\n%s", log)
	}
	return m[1]
}

// lookupA asks the DNS at addr for name's A record, the first address or "".
func lookupA(t *testing.T, addr, name string) string {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(q, addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String()
		}
	}
	return ""
}
