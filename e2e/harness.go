// Package e2e holds the helpers that integration tests use to run the crowd next to real peers
// (Fedify, the signature verifiers in testpeers/) inside network namespaces of their own, so that
// names resolve through the crowd's DNS and ports like 443 and 53 are free, without touching the
// machine's own network.
//
// Conventions: a helper that needs something the machine lacks (root, ip, node, the testpeers'
// node_modules) skips the test, except when CI=true, where it fails it: CI installs everything,
// so a skip there would hide a broken install. Everything a helper starts or creates is removed
// by t.Cleanup, and only that.
//
// A test that runs in a namespace of its own (or on free loopback ports) and floods, if at all,
// at a modest rate calls t.Parallel: .ci/run lets four run at once on CI's two cores (-parallel 4;
// go test's default is GOMAXPROCS), since they spend most of their time waiting on a peer or a
// flood's clock; one whose gates would read a shared CPU as the SUT's slowness (the scenario
// presets at their rates, live metrics' overload, the reactions test's 2 000 sends at the edge of
// what Fedify verifies, the delivery-weather test's sub-second windows on Fedify's retries) stays
// serial, and so does the podman group, whose three tests run side by side within it.
//
// The helpers build elsewhere but run only on Linux (network namespaces, process groups,
// parent-death signals).
package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/childproc"
	"github.com/crowdfed/crowd/internal/crowdtest"
)

// InCI reports whether the tests run in CI (CI=true), where a missing tool is a failure, not a skip.
func InCI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// skipOrFail skips the test locally and fails it in CI.
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI=true: every tool must be installed; see .ci/run)", msg)
	}
	t.Skip(msg)
}

// missingTools returns the names, of those given, that are not on PATH (or, given as a path,
// are not executable files).
func missingTools(names ...string) []string {
	var missing []string
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			missing = append(missing, n)
		}
	}
	return missing
}

// RequireTools skips the test when any of the named programs is missing (failing it when CI=true).
// A name may be a path, such as /usr/bin/python3.
func RequireTools(t testing.TB, names ...string) {
	t.Helper()
	if m := missingTools(names...); len(m) > 0 {
		skipOrFail(t, "missing tools: %s", strings.Join(m, ", "))
	}
}

// RequireRoot skips the test unless it runs as root (failing it when CI=true): network namespaces
// and ports below 1024 need it.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root (network namespaces)")
	}
}

// ---------------------------------------------------------------------------------------------
// Network namespaces

// Netns is a network namespace made for one test, with its loopback up and a resolv.conf naming
// 127.0.0.1 (where the test is expected to run the crowd's DNS). Processes started through
// Command run inside it; Dial and HTTPClient reach its addresses from the test process.
type Netns struct {
	// Name is the namespace's name, "crowd-<pid>-<random>"; the pid lets a later run sweep
	// namespaces that a killed test binary left behind.
	Name string
	// EtcDir is /etc/netns/<Name>: files in it are bind-mounted over /etc/<file> by
	// `ip netns exec`, for the processes started there afterwards.
	EtcDir string

	mu      sync.Mutex
	written []string // files this harness wrote into EtcDir, removed at cleanup
}

// netnsPrefix names every namespace this harness makes.
const netnsPrefix = "crowd-"

// NewNetns makes a network namespace for the test (ip netns add), brings its loopback up and
// writes /etc/netns/NAME/resolv.conf with "nameserver 127.0.0.1". Cleanup deletes the namespace
// and the files and folder it created, nothing else. Skips (fails in CI) without root or ip.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "ip")
	sweepStaleNetns(t)

	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatalf("netns name: %v", err)
	}
	n := &Netns{Name: fmt.Sprintf("%s%d-%s", netnsPrefix, os.Getpid(), hex.EncodeToString(rnd[:]))}
	n.EtcDir = filepath.Join("/etc/netns", n.Name)

	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", n.Name, err, out)
	}
	// Registered before anything else can fail, so a half-made namespace is still removed.
	t.Cleanup(func() { n.remove(t) })

	if out, err := exec.Command("ip", "netns", "exec", n.Name, "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("netns %s: lo up: %v\n%s", n.Name, err, out)
	}
	n.WriteEtc(t, "resolv.conf", "nameserver 127.0.0.1\n")
	return n
}

// WriteEtc writes /etc/netns/NAME/<file> (for example "hosts"), which processes started in the
// namespace afterwards see as /etc/<file>. The file is removed at cleanup.
func (n *Netns) WriteEtc(t testing.TB, file, content string) {
	t.Helper()
	if strings.Contains(file, "/") || file == "" || file == "." || file == ".." {
		t.Fatalf("WriteEtc: %q is not a plain file name", file)
	}
	// /etc/netns itself may be missing on a fresh machine; it is left in place (other tools
	// use it too), only NAME/ below it is ours.
	if err := os.MkdirAll(n.EtcDir, 0o755); err != nil {
		t.Fatalf("WriteEtc: %v", err)
	}
	p := filepath.Join(n.EtcDir, file)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatalf("WriteEtc: %v", err)
	}
	n.mu.Lock()
	n.written = append(n.written, p)
	n.mu.Unlock()
}

// remove deletes the namespace, then the files WriteEtc wrote and EtcDir if that left it empty.
func (n *Netns) remove(t testing.TB) {
	if out, err := exec.Command("ip", "netns", "delete", n.Name).CombinedOutput(); err != nil {
		t.Errorf("ip netns delete %s: %v\n%s", n.Name, err, out)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.written {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("netns cleanup: %v", err)
		}
	}
	// os.Remove refuses a folder that is not empty: whatever someone else put there stays.
	if err := os.Remove(n.EtcDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Logf("netns cleanup: %v", err)
	}
}

// sweepStaleNetns deletes namespaces named crowd-<pid>-* whose pid is no longer running: a test
// binary killed by a timeout never ran its cleanup. Their leftover processes (our own peers and
// crowds, started inside them) are killed first; nothing outside those namespaces is touched.
func sweepStaleNetns(t testing.TB) {
	entries, err := os.ReadDir("/var/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if out, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if p, err := strconv.Atoi(f); err == nil && p > 1 {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		_ = exec.Command("ip", "netns", "delete", name).Run()
		etc := filepath.Join("/etc/netns", name)
		if ents, err := os.ReadDir(etc); err == nil {
			for _, f := range ents {
				_ = os.Remove(filepath.Join(etc, f.Name()))
			}
			_ = os.Remove(etc)
		}
		t.Logf("removed stale network namespace %s (its test process %d is gone)", name, pid)
	}
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Command returns a command that runs name with args inside the namespace (ip netns exec).
// Start it with StartProcess for a long-running server, or run it directly for a one-shot.
func (n *Netns) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Run runs a one-shot command inside the namespace and returns its combined output; a non-zero
// exit fails the test with that output.
func (n *Netns) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := n.Command(context.Background(), name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("netns %s: %s %s: %v\n%s", n.Name, name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Dial connects from the test process to an address inside the namespace. addr must be an
// IP:port: the socket is made in the namespace, but a name lookup would run elsewhere.
func (n *Netns) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if net.ParseIP(host) == nil {
		return nil, fmt.Errorf("netns dial %s: want an IP address, not a name", addr)
	}
	var c net.Conn
	err = n.inside(func() error {
		var derr error
		c, derr = (&net.Dialer{}).DialContext(ctx, network, addr)
		return derr
	})
	return c, err
}

// HTTPClient returns a client whose connections are made inside the namespace. resolve maps a
// host name (as in the URL) to the IP to dial, so https://flood3.test/ can be reached with its
// real name for TLS (SNI, certificate check) while the address comes from the test; names not
// in resolve must be IP addresses. tlsConfig may be nil (the system roots).
func (n *Netns) HTTPClient(resolve map[string]string, tlsConfig *tls.Config) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if ip, ok := resolve[host]; ok {
				addr = net.JoinHostPort(ip, port)
			}
			return n.Dial(ctx, network, addr)
		},
		TLSClientConfig:   tlsConfig,
		ForceAttemptHTTP2: true,
		MaxIdleConns:      16,
		IdleConnTimeout:   30 * time.Second,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// ---------------------------------------------------------------------------------------------
// Processes

// ReadyFunc reports nil once a started process is ready to serve; it is polled until then.
// p is the process being waited for (its output so far is p.Output()).
type ReadyFunc func(ctx context.Context, p *Process) error

// ReadyTCP is ready when a TCP connection to addr (IP:port) succeeds, inside ns, or on the
// host's network when ns is nil.
func ReadyTCP(ns *Netns, addr string) ReadyFunc {
	return func(ctx context.Context, _ *Process) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var c net.Conn
		var err error
		if ns != nil {
			c, err = ns.Dial(ctx, "tcp", addr)
		} else {
			var d net.Dialer
			c, err = d.DialContext(ctx, "tcp", addr)
		}
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// ReadyOutput is ready once the process has printed substr (on stdout or stderr), such as the
// {"ready":true line of testpeers/fedify-peer.mjs.
func ReadyOutput(substr string) ReadyFunc {
	return func(_ context.Context, p *Process) error {
		if strings.Contains(p.Output(), substr) {
			return nil
		}
		return fmt.Errorf("waiting for %q in the output", substr)
	}
}

// ReadyTimeout bounds how long StartProcess waits for readiness.
const ReadyTimeout = 60 * time.Second

// Process is a long-running process started by StartProcess.
type Process struct {
	Cmd *exec.Cmd

	out      *crowdtest.SyncBuffer
	done     chan struct{}
	err      error // Wait's result, valid once done is closed
	stopOnce sync.Once
}

// Output returns everything the process has printed so far (stdout and stderr interleaved).
func (p *Process) Output() string { return p.out.String() }

// Exited reports whether the process has exited, and its Wait error if so.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// StartProcess starts cmd in a process group of its own, captures its output (also passed on to
// any Stdout/Stderr the caller set), and waits until ready returns nil (ready may be nil: no
// wait), failing the test if the process exits first or ReadyTimeout passes. At cleanup it stops
// the process group (Stop) and logs the output if the test failed.
// If the test binary dies, the process gets SIGKILL (Linux's parent-death signal).
func StartProcess(t testing.TB, cmd *exec.Cmd, ready ReadyFunc) *Process {
	t.Helper()
	p := &Process{Cmd: cmd, out: &crowdtest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout = teeTo(p.out, cmd.Stdout)
	cmd.Stderr = teeTo(p.out, cmd.Stderr)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	childproc.Tie(cmd)
	name := strings.Join(cmd.Args, " ")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.Output())
		}
	})
	if ready == nil {
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		if lastErr = ready(ctx, p); lastErr == nil {
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready (%v); last check: %v\noutput:\n%s", name, p.err, lastErr, p.Output())
		case <-ctx.Done():
			t.Fatalf("%s not ready after %v: %v\noutput:\n%s", name, ReadyTimeout, lastErr, p.Output())
		case <-tick.C:
		}
	}
}

// teeTo writes to buf and, if set, to the writer the caller chose.
func teeTo(buf io.Writer, also io.Writer) io.Writer {
	if also == nil {
		return buf
	}
	return io.MultiWriter(buf, also)
}

// Stop ends the process group StartProcess made: SIGTERM, then SIGKILL after 5 s; it returns
// once the process has exited. It is safe to call more than once (cleanup calls it too), so a
// test can stop a server and start another on the same state, as a restart would.
func (p *Process) Stop() { p.signal(syscall.SIGTERM) }

// Kill ends the process group with SIGKILL at once, like a crash or `kill -9`, and returns once
// the process has exited.
func (p *Process) Kill() { p.signal(syscall.SIGKILL) }

// signal sends sig to the process group (once in the life of the Process) and waits for the
// leader, escalating to SIGKILL after 5 s.
func (p *Process) signal(sig syscall.Signal) {
	p.stopOnce.Do(func() {
		pgid := p.Cmd.Process.Pid // Setpgid: the group id is the leader's pid
		if exited, _ := p.Exited(); !exited {
			_ = syscall.Kill(-pgid, sig)
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-p.done
			}
		}
		// Any child that outlived its leader: while one lives, the group id cannot be reused.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// ---------------------------------------------------------------------------------------------
// The crowd binary and the test peers

// ModuleRoot returns the repository root (the crowd module's folder), from the test's working
// folder: in the crowd module, or in a module that requires it through a replace directive
// pointing at the repository (the deploy tests' module), whose own go.mod is elsewhere.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", crowdModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v (run inside the crowd module or one that replaces it with the repository)", crowdModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatalf("go list -m %s: no folder (the module is not replaced by the repository)", crowdModule)
	}
	return dir
}

// crowdModule is the crowd's module path.
const crowdModule = "github.com/crowdfed/crowd"

// builtCrowd caches the crowd binary for the life of the test process. It is package state on
// purpose: building cmd/crowd once per test binary, not once per test, is the point, and a
// testing.TB has no wider scope to keep it in.
var builtCrowd struct {
	sync.Mutex
	path string
}

// BuildCrowd builds ./cmd/crowd once per test binary and returns the binary's path; CROWD_BIN,
// when set, names a binary to use instead. A build failure fails the test with the compiler's
// output. The binary lives in a temporary folder named for this process; folders of earlier test
// processes that are gone are removed here.
func BuildCrowd(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("CROWD_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("CROWD_BIN: %v", err)
		}
		return bin
	}
	builtCrowd.Lock()
	defer builtCrowd.Unlock()
	if builtCrowd.path != "" {
		return builtCrowd.path
	}
	sweepStaleBuilds()
	root := ModuleRoot(t)
	dir := buildDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("BuildCrowd: %v", err)
	}
	bin := filepath.Join(dir, "crowd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/crowd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("BuildCrowd: go build ./cmd/crowd failed: %v\n%s", err, out)
	}
	builtCrowd.path = bin
	return bin
}

// buildPrefix names the folders BuildCrowd makes in the temporary folder.
const buildPrefix = "crowd-e2e-build-"

// buildDir is this process's build folder.
func buildDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("%s%d", buildPrefix, os.Getpid()))
}

// sweepStaleBuilds removes build folders of test processes that no longer run.
func sweepStaleBuilds() {
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), buildPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		if pid, err := strconv.Atoi(rest); err == nil && pid != os.Getpid() && !processAlive(pid) {
			_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
		}
	}
}

// removeBuild deletes this process's build folder (TestMain calls it after the tests).
func removeBuild() {
	builtCrowd.Lock()
	defer builtCrowd.Unlock()
	_ = os.RemoveAll(buildDir())
	builtCrowd.path = ""
}
