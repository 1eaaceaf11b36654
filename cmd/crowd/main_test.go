package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/crowdtest"
	"github.com/crowdfed/crowd/pasture/tlsca"
	"github.com/spf13/cobra"
)

func TestServeRejectsBadInputNamingTheFlag(t *testing.T) {
	state := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		say  string // the message must name this
	}{
		{"unknown flag", []string{"serve", "--nope"}, nil, 2, "--nope"},
		{"origins not a number", []string{"serve", "--origins", "many"}, nil, 2, "--origins"},
		// said as what the flag wants, with its default as an example, not as strconv's error
		{"origins not a number says what it wants", []string{"serve", "--origins", "many"}, nil, 2, `invalid argument "many" for --origins: want a whole number, as in --origins=20`},
		{"zero origins", []string{"serve", "--origins", "0", "--state", state}, nil, 2, "--origins"},
		{"domain without %d", []string{"serve", "--domain", "flood.test", "--state", state}, nil, 2, "--domain"},
		{"bad shard", []string{"serve", "--shard", "3/2", "--state", state}, nil, 2, "--shard"},
		// the default 20 origins leave shard 24 of 25 with none: said before any key is made, not as the inbox's "no world"
		{"more shards than origins", []string{"serve", "--shard", "24/25", "--state", state}, nil, 2, "--shard 24/25: shard 24 of 25 holds no origin of the 20 (--origins): at most 20 shards"},
		{"advertise not an IP", []string{"serve", "--advertise", "sut", "--state", state}, nil, 2, "--advertise"},
		// a range with fewer addresses than origins fails before any key is made
		{"advertise range too small", []string{"serve", "--advertise", "127.1.0.0/30", "--origins", "5", "--state", state}, nil, 2, "--advertise"},
		// 4 shards of a /29 hold 2 addresses each; 20 origins need 5 per shard
		{"advertise range too small for the shards", []string{"serve", "--advertise", "127.1.0.0/29", "--origins", "20", "--shard", "1/4", "--state", state}, nil, 2, "--advertise"},
		{"dns record without =", []string{"serve", "--dns-record", "sut.test", "--state", state}, nil, 2, "--dns-record"},
		// listen addresses (TestServeChecksListenersBeforeKeys)
		{"https not host:port", []string{"serve", "--https", "nonsense", "--state", state}, nil, 2, "--https"},
		{"dns without a port", []string{"serve", "--dns", "127.0.0.1:", "--state", state}, nil, 2, "--dns"},
		{"dns upstream not an IP", []string{"serve", "--dns-upstream", "resolver.example", "--state", state}, nil, 2, "--dns-upstream"},
		// a port past 65535: said as the flag's, not later as the DNS's configuration
		{"dns upstream port out of range", []string{"serve", "--dns-upstream", "192.0.2.1:99999", "--state", state}, nil, 2, `--dns-upstream "192.0.2.1:99999": the port is not a number from 1 to 65535`},
		{"dns forward-for not a network", []string{"serve", "--dns-forward-for", "203.0.113.0/33", "--state", state}, nil, 2, `--dns-forward-for "203.0.113.0/33": want a network`},
		{"bad log level", []string{"serve", "--log-level", "loud", "--state", state}, nil, 2, "--log-level"},
		{"bad env value names variable and flag", []string{"serve", "--state", state}, map[string]string{"CROWD_ORIGINS": "lots"}, 2, `CROWD_ORIGINS: invalid argument "lots" for --origins: want a whole number, as in --origins=20`},
		{"a busy port names its flag", []string{"serve", "--state", state, "--origins", "1", "--actors", "1", "--https", "", "--http", "", "--dns", "", "--admin", "256.0.0.1:1"}, nil, 1, "--admin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			code, _, out := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(out, c.say) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %s", code, out, c.code, c.say)
			}
		})
	}
}

// TestServeChecksListenersBeforeKeys: a listen address that is none is
// refused before a first start spends its half minute making keys.
func TestServeChecksListenersBeforeKeys(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flag, addr string
	}{
		// No port at all.
		{"https", "nonsense"},
		// A port past 65535.
		{"https", "127.0.0.1:99999"},
		// A negative one.
		{"http", ":-1"},
		// A port that is a name, but no service's.
		{"admin", "127.0.0.1:no-such-service"},
	} {
		t.Run(c.flag+" "+c.addr, func(t *testing.T) {
			state := t.TempDir()
			code, _, stderr := runCLI(t, "serve", "--"+c.flag, c.addr, "--origins", "2", "--actors", "2", "--state", state)
			if code != 2 || !strings.Contains(stderr, "--"+c.flag) || !strings.Contains(stderr, c.addr) {
				t.Errorf("exit %d, %s; want a usage error naming --%s and %s", code, stderr, c.flag, c.addr)
			}
			if got, _ := os.ReadDir(state); len(got) != 0 {
				t.Errorf("the state holds %v: keys were made before the refusal", got)
			}
		})
	}
}

// TestServeFindsBusyPortsBeforeKeys: a listener's port another socket
// holds stops a first start before it makes its keys, naming the flag.
func TestServeFindsBusyPortsBeforeKeys(t *testing.T) {
	t.Parallel()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	for _, c := range []struct {
		flag, addr string
	}{
		// HTTPS on a port in use.
		{"https", tcp.Addr().String()},
		// The admin API on it.
		{"admin", tcp.Addr().String()},
		// DNS on a UDP port in use.
		{"dns", udp.LocalAddr().String()},
	} {
		t.Run(c.flag, func(t *testing.T) {
			state := t.TempDir()
			args := map[string]string{"https": "127.0.0.1:0", "http": "", "dns": "", "admin": ""}
			args[c.flag] = c.addr
			code, _, stderr := runCLI(t, "serve", "--origins", "2", "--actors", "2", "--state", state,
				"--https", args["https"], "--http", args["http"], "--dns", args["dns"], "--admin", args["admin"])
			if code != 1 || !strings.Contains(stderr, "--"+c.flag) || !strings.Contains(stderr, c.addr) {
				t.Errorf("exit %d, %s; want a failure naming --%s and %s", code, stderr, c.flag, c.addr)
			}
			if keys, _ := filepath.Glob(filepath.Join(state, "keys", "*", "*")); len(keys) != 0 {
				t.Errorf("%d keys made before the refusal", len(keys))
			}
		})
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	var got *serveFlags
	root := newRoot()
	for _, c := range root.Commands() {
		if c.Name() == "serve" {
			c.RunE = func(cmd *cobra.Command, _ []string) error {
				got = &serveFlags{}
				got.world.cfg.Origins, _ = cmd.Flags().GetInt("origins")
				got.dnsRecords, _ = cmd.Flags().GetStringArray("dns-record")
				got.advertise, _ = cmd.Flags().GetStringSlice("advertise")
				got.https, _ = cmd.Flags().GetString("https")
				return nil
			}
		}
	}
	t.Setenv("CROWD_ORIGINS", "7")
	t.Setenv("CROWD_DNS_RECORD", "sut.test=10.0.0.5, other.test=10.0.0.6")
	t.Setenv("CROWD_ADVERTISE", "10.0.0.2")
	t.Setenv("CROWD_HTTPS", ":9443")
	root.SetArgs([]string{"serve", "--https", ":8443"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"int from env", got.world.cfg.Origins, 7},
		{"repeatable flag from a comma list", strings.Join(got.dnsRecords, " "), "sut.test=10.0.0.5 other.test=10.0.0.6"},
		{"slice flag from env", strings.Join(got.advertise, " "), "10.0.0.2"},
		{"the command line wins over env", got.https, ":8443"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestServeShutsDownOnCancel: serve comes up (its admin API answers
// /readyz), and a cancel stops it with exit 0 and its listeners closed. The
// test learns the admin port, bound as 127.0.0.1:0, from serve's own JSON
// log, as an operator would.
func TestServeShutsDownOnCancel(t *testing.T) {
	t.Parallel()
	stderr, logs := logLines(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		defer stderr.Close()
		done <- execute(ctx, []string{"serve", "--state", t.TempDir(), "--origins", "1", "--actors", "1",
			"--https", "127.0.0.1:0", "--http", "127.0.0.1:0", "--dns", "", "--admin", "127.0.0.1:0",
			"--log-level", "info", "--log-format", "json"}, nil, io.Discard, stderr)
	}()

	// Serve is up once it logs "crowd serving"; the admin listener logs its address before that.
	var admin string
	bound := time.After(30 * time.Second)
	for up := false; !up; {
		select {
		case e := <-logs:
			if e["msg"] == "listening" && e["listener"] == "admin" {
				admin, _ = e["addr"].(string)
			}
			up = e["msg"] == "crowd serving"
		case code := <-done:
			t.Fatalf("serve exited with %d before it was up", code)
		case <-bound:
			t.Fatal("serve did not log \"crowd serving\" within 30 s")
		}
	}
	if admin == "" {
		t.Fatal("serve is up but logged no admin address")
	}
	resp, err := http.Get("http://" + admin + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz answered %d once serve was up, want 200", resp.StatusCode)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after a cancel, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of a cancel")
	}
	if c, err := net.Dial("tcp", admin); err == nil {
		c.Close()
		t.Errorf("the admin API still accepts connections on %s after shutdown", admin)
	}
}

// logLines is a stderr for a command and the JSON lines (zap's log
// entries) written to it, as they are written; other lines are dropped. The
// caller closes the writer once the command has returned.
func logLines(t *testing.T) (io.WriteCloser, <-chan map[string]any) {
	t.Helper()
	r, w := io.Pipe()
	entries := make(chan map[string]any, 1000)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var e map[string]any
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				select {
				case entries <- e:
				default: // nobody reads any more; keep draining the pipe
				}
			}
		}
	}()
	t.Cleanup(func() {
		w.Close()
		<-read
	})
	return w, entries
}

func TestCAIssueWritesACertificateTheCrowdsCAVerifies(t *testing.T) {
	t.Parallel()
	state, out := t.TempDir(), t.TempDir()
	code, _, stderr := runCLI(t, "ca", "issue", "--state", state, "--out", out, "sut.test")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	// A CA made here, not found: said, since from the wrong directory no crowd would trust it.
	if !strings.Contains(stderr, "made a new CA in "+filepath.Join(state, "tls")) {
		t.Errorf("the CA's making is not told: %q", stderr)
	}
	if code, _, stderr := runCLI(t, "ca", "issue", "--state", state, "--out", out, "sut.test"); code != 0 || stderr != "" {
		t.Errorf("the CA found: exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	ca, err := tlsca.LoadOrCreate(filepath.Join(state, "tls"))
	if err != nil {
		t.Fatal(err)
	}
	chain, err := os.ReadFile(filepath.Join(out, "sut.test.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(chain)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "sut.test", Roots: roots}); err != nil {
		t.Errorf("the issued certificate does not verify against the crowd's CA: %v", err)
	}
	if copied, _ := os.ReadFile(filepath.Join(out, "ca.pem")); !bytes.Equal(copied, ca.CertPEM()) {
		t.Errorf("--out must hold the CA as ca.pem for the SUT to trust")
	}
	if code, _, _ := runCLI(t, "ca", "issue", "--state", state, "--out", out, "../etc"); code != 2 {
		t.Errorf("a name that is no host name: exit %d, want 2", code)
	}
	// A refused name among good ones: refused before anything is written, no CA made.
	fresh, freshOut := t.TempDir(), filepath.Join(t.TempDir(), "certs")
	if code, _, stderr := runCLI(t, "ca", "issue", "--state", fresh, "--out", freshOut, "sut.test", "*.sut.test"); code != 2 || !strings.Contains(stderr, `NAME "*.sut.test"`) {
		t.Errorf("a wildcard: exit %d, stderr %q; want 2 naming it", code, stderr)
	}
	for _, p := range []string{freshOut, filepath.Join(fresh, "tls")} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused issue made %s (%v)", p, err)
		}
	}
}

// TestOnlyARealTerminalIsATerminal: the live line redraws and the log
// goes to the console format only on a real terminal; a writer a test
// (or a pipe) hands the command never passes for one.
func TestOnlyARealTerminalIsATerminal(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		name string
		w    io.Writer
	}{
		// a buffer, as the tests hand execute
		{"buffer", &bytes.Buffer{}},
		// a pipe, as a shell's `crowd flood 2>&1 | tee`
		{"pipe", w},
		// a file that is no file at all
		{"discard", io.Discard},
	} {
		if isTerminal(c.w) {
			t.Errorf("%s: isTerminal true", c.name)
		}
	}
	// --log-format auto on a writer that is no terminal logs JSON to it.
	g := &globalOptions{logLevel: "info", logFormat: "auto"}
	var b crowdtest.SyncBuffer
	log, err := g.logger(&b)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello")
	log.Sync()
	var e map[string]any
	if err := json.Unmarshal([]byte(b.String()), &e); err != nil || e["msg"] != "hello" {
		t.Errorf("the log written to the command's stderr is %q, want one JSON entry saying hello (%v)", b.String(), err)
	}
}

// TestParseNetwork: --dns-forward-for takes a network as CIDR or an
// address alone, a network of one.
func TestParseNetwork(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" for refused
	}{
		{"203.0.113.0/24", "203.0.113.0/24"},     // a network
		{"203.0.113.9", "203.0.113.9/32"},        // an address alone
		{"2001:db8::/32", "2001:db8::/32"},       // an IPv6 network
		{"2001:db8::7", "2001:db8::7/128"},       // an IPv6 address alone
		{"::ffff:10.1.2.3", "10.1.2.3/32"},       // an IPv4-mapped address, as the IPv4 one
		{"::ffff:192.0.2.0/120", "192.0.2.0/24"}, // an IPv4-mapped network, as the IPv4 one
		{"::ffff:0:0/80", ""},                    // more than the mapped addresses
		{"0.0.0.0/0", ""},                        // every IPv4 address: an open resolver
		{"::/0", ""},                             // every IPv6 address
		{"203.0.113.0/33", ""},                   // a length past the address's
		{"fe80::1%eth0", ""},                     // a zoned address: no network
		{"sut.test", ""},                         // a name
		{"", ""},                                 // nothing
	} {
		p, err := parseNetwork(c.in)
		got := ""
		if err == nil {
			got = p.String()
		}
		if got != c.want {
			t.Errorf("parseNetwork(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
