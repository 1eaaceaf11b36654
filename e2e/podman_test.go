package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The podman tests package the crowd the way its users run it (DESIGN.md §7, §8; issue 6): the
// image from the repository's Dockerfile (target `local`, from a static binary built here, since
// no registry is reachable), run with host networking, and pasture/compose.ci.yaml brought up
// with podman-compose next to the Fedify test SUT in a second image. "Host" is a network
// namespace the test made: podman runs under `nsenter --net`, so its containers share that
// namespace's loopback and nothing binds the machine's ports. (`ip netns exec` would not do: it
// remounts /sys, and runc then finds no cgroup mount.)
//
// Everything a test makes (images, containers, the network podman-compose 1.0.3 insists on
// creating) carries this process's pid and is removed at cleanup; leftovers of a test binary
// that was killed are swept by the next run.

// podmanTimeout bounds one podman or podman-compose command (a build takes seconds here).
const podmanTimeout = 3 * time.Minute

// podmanLabel marks images and containers made by these tests with the test binary's pid.
const podmanLabel = "crowd.e2e.pid"

// composeProjectPrefix starts the podman-compose project names of these tests:
// crowde2e<pid>x<random>.
const composeProjectPrefix = "crowde2e"

// podmanEnv is how the tests call podman: with the repository's containers.conf, and a
// suffix that names everything they make.
type podmanEnv struct {
	conf string // absolute path of e2e/testdata/containers.conf
	id   string // <pid>x<random hex>: unique per test
}

// newPodman checks for podman and its helpers (skipping, or failing in CI, without them),
// sweeps what killed test processes left, and returns the environment for one test.
func newPodman(t *testing.T) *podmanEnv {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "podman", "podman-compose", "runc", "nsenter", "go")
	conf, err := filepath.Abs(filepath.Join("testdata", "containers.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	p := &podmanEnv{conf: conf, id: fmt.Sprintf("%dx%s", os.Getpid(), hex.EncodeToString(rnd[:]))}
	p.sweepStale(t)
	return p
}

// command returns podman (or podman-compose, …) with CONTAINERS_CONF set; with ns, the command
// runs in that network namespace (nsenter --net, which keeps the machine's mounts).
func (p *podmanEnv) command(ctx context.Context, ns *Netns, env []string, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if ns != nil {
		cmd = exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + filepath.Join("/var/run/netns", ns.Name), name}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
	}
	cmd.Env = append(append(os.Environ(), "CONTAINERS_CONF="+p.conf), env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// output runs a command to completion within podmanTimeout and returns its stdout; stderr is
// kept for the error.
func (p *podmanEnv) output(ns *Netns, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), podmanTimeout)
	defer cancel()
	cmd := p.command(ctx, ns, env, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out), nil
}

// logs returns a container's output, stdout and stderr interleaved as podman stored them.
func (p *podmanEnv) logs(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), podmanTimeout)
	defer cancel()
	out, err := p.command(ctx, nil, nil, "podman", "logs", name).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s(podman logs: %v)\n", out, err)
	}
	return string(out)
}

// podman runs podman on the machine's network and fails the test on an error.
func (p *podmanEnv) podman(t testing.TB, args ...string) string {
	t.Helper()
	out, err := p.output(nil, nil, "podman", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// removeImage is the cleanup of an image this test built.
func (p *podmanEnv) removeImage(t testing.TB, ref string) {
	if _, err := p.output(nil, nil, "podman", "rmi", "--force", ref); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// sweepStale removes containers, images and networks that earlier test processes, now gone,
// made and could not remove (a test binary killed by its timeout runs no cleanup).
func (p *podmanEnv) sweepStale(t testing.TB) {
	stale := func(pidStr string) bool {
		pid, err := strconv.Atoi(pidStr)
		return err == nil && pid > 0 && pid != os.Getpid() && !processAlive(pid)
	}
	projectPid := func(project string) string {
		rest, ok := strings.CutPrefix(project, composeProjectPrefix)
		if !ok {
			return ""
		}
		pid, _, _ := strings.Cut(rest, "x")
		return pid
	}
	if out, err := p.output(nil, nil, "podman", "ps", "--all", "--format", "json"); err == nil {
		var ctrs []struct {
			ID     string `json:"Id"`
			Labels map[string]string
		}
		_ = json.Unmarshal([]byte(out), &ctrs)
		for _, c := range ctrs {
			if stale(c.Labels[podmanLabel]) || stale(projectPid(c.Labels["io.podman.compose.project"])) {
				_, _ = p.output(nil, nil, "podman", "rm", "--force", "--time", "1", c.ID)
				t.Logf("removed stale container %.12s", c.ID)
			}
		}
	}
	if out, err := p.output(nil, nil, "podman", "network", "ls", "--format", "{{.Name}}"); err == nil {
		for _, name := range strings.Fields(out) {
			if project, ok := strings.CutSuffix(name, "_default"); ok && stale(projectPid(project)) {
				_, _ = p.output(nil, nil, "podman", "network", "rm", "--force", name)
				t.Logf("removed stale network %s", name)
			}
		}
	}
	if out, err := p.output(nil, nil, "podman", "images", "--filter", "label="+podmanLabel, "--format", "json"); err == nil {
		var imgs []struct {
			ID     string `json:"Id"`
			Labels map[string]string
		}
		_ = json.Unmarshal([]byte(out), &imgs)
		for _, img := range imgs {
			if stale(img.Labels[podmanLabel]) {
				_, _ = p.output(nil, nil, "podman", "rmi", "--force", img.ID)
				t.Logf("removed stale image %.12s", img.ID)
			}
		}
	}
}

// buildCrowdImage builds a static crowd binary into a fresh build context and packages it
// with the Dockerfile's `local` target, as the Dockerfile's header tells users to. The image is
// removed at cleanup.
func (p *podmanEnv) buildCrowdImage(t *testing.T) string {
	t.Helper()
	root := ModuleRoot(t)
	ctxDir := t.TempDir()
	// Bounded, but generously: a cold build of the tree takes about 90 s here.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// As the Dockerfile builds it: libcrypto linked in statically (the image has no libc).
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "netgo,osusergo",
		"-ldflags", "-s -w -linkmode external -extldflags -static -X main.version=e2e-podman",
		"-o", filepath.Join(ctxDir, "crowd"), "./cmd/crowd")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build (static): %v\n%s", err, out)
	}
	// The local target copies a CA bundle from the context, as users copy theirs.
	bundle, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		bundle = nil // an empty bundle: the crowd's own CA is all these tests need
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "ca-certificates.crt"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	ref := "localhost/crowd-e2e:" + p.id
	p.podman(t, "build", "--pull=never", "--layers=false", "--target", "local",
		"--build-arg", "VERSION=e2e-podman", "--label", podmanLabel+"="+strconv.Itoa(os.Getpid()),
		"--file", filepath.Join(root, "Dockerfile"), "--tag", ref, ctxDir)
	t.Cleanup(func() { p.removeImage(t, ref) })
	return ref
}

// buildSUTImage builds the Fedify test SUT (testpeers/fedify-peer.mjs) into an image with no
// base: the machine's node binary, the shared libraries ldd lists for it, and testpeers/ with
// its node_modules. The image is removed at cleanup.
func (p *podmanEnv) buildSUTImage(t *testing.T) string {
	t.Helper()
	peers := NodePeers(t)
	RequireTools(t, "ldd")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	node, err = filepath.EvalSymlinks(node)
	if err != nil {
		t.Fatal(err)
	}
	ctxDir := t.TempDir()
	rootfs := filepath.Join(ctxDir, "rootfs")
	copyFile(t, node, filepath.Join(rootfs, "usr", "bin", "node"), 0o755)
	out, err := exec.Command("ldd", node).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", node, err)
	}
	// Lines are "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" or "/lib64/ld-linux….so.2 (0x…)":
	// every absolute path is a file the binary loads, copied (symlinks followed) to the same path.
	for _, field := range strings.Fields(string(out)) {
		if filepath.IsAbs(field) {
			copyFile(t, field, filepath.Join(rootfs, field), 0o755)
		}
	}
	app := filepath.Join(rootfs, "app")
	for _, name := range []string{"fedify-peer.mjs", "package.json"} {
		copyFile(t, filepath.Join(peers, name), filepath.Join(app, name), 0o644)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(peers, "node_modules"), app).CombinedOutput(); err != nil {
		t.Fatalf("copy node_modules: %v\n%s", err, out)
	}
	ref := "localhost/crowd-e2e-fedify-sut:" + p.id
	p.podman(t, "build", "--pull=never", "--layers=false",
		"--label", podmanLabel+"="+strconv.Itoa(os.Getpid()),
		"--file", filepath.Join(ModuleRoot(t), "e2e", "testdata", "fedify-sut.Containerfile"),
		"--tag", ref, ctxDir)
	t.Cleanup(func() { p.removeImage(t, ref) })
	return ref
}

// copyFile copies src (following symlinks) to dst, making dst's folders.
func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls check every 200 ms until it returns nil, failing the test with the last error
// (and what more reports) after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, check func() error, more func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			extra := ""
			if more != nil {
				extra = "\n" + more()
			}
			t.Fatalf("%s: not after %v: %v%s", what, timeout, err, extra)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// getOK fetches url with client and returns the body of a 200 answer.
func getOK(client *http.Client, url string) ([]byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, nil
}

// caClient returns an HTTPS client inside ns that trusts only the CA in caFile and dials the
// names in resolve at the given IPs.
func caClient(t testing.TB, ns *Netns, caFile string, resolve map[string]string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatalf("the crowd's CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	return ns.HTTPClient(resolve, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
}

// TestPodmanImage runs the crowd's image as its users do, with host networking: the CA the
// container writes into its mounted state volume lets the host (the test process) check
// WebFinger over HTTPS, the container's DNS answers on :53, and SIGTERM stops it cleanly.
func TestPodmanImage(t *testing.T) {
	p := newPodman(t)
	ns := NewNetns(t)
	image := p.buildCrowdImage(t)

	t.Run("the image declares what users rely on", func(t *testing.T) {
		var cfg struct {
			Env          []string
			Entrypoint   []string
			Cmd          []string
			ExposedPorts map[string]struct{}
			Volumes      map[string]struct{}
			WorkingDir   string
		}
		out := p.podman(t, "image", "inspect", "--format", "{{json .Config}}", image)
		if err := json.Unmarshal([]byte(out), &cfg); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		for _, port := range []string{"80/tcp", "443/tcp", "53/udp", "53/tcp", "9180/tcp"} {
			if _, ok := cfg.ExposedPorts[port]; !ok {
				t.Errorf("port %s is not exposed: %v", port, cfg.ExposedPorts)
			}
		}
		if _, ok := cfg.Volumes["/state"]; !ok || !slices.Contains(cfg.Env, "CROWD_STATE=/state") {
			t.Errorf("want the volume /state and CROWD_STATE=/state: %v %v", cfg.Volumes, cfg.Env)
		}
		if !slices.Equal(cfg.Entrypoint, []string{"crowd"}) || !slices.Equal(cfg.Cmd, []string{"serve"}) {
			t.Errorf("entrypoint %q cmd %q, want [crowd] [serve]", cfg.Entrypoint, cfg.Cmd)
		}
	})

	state := t.TempDir()
	name := "crowd-e2e-" + p.id
	// No --state: the image's CROWD_STATE=/state is the default under test.
	if _, err := p.output(ns, nil, "podman", "run", "--detach", "--name", name,
		"--label", podmanLabel+"="+strconv.Itoa(os.Getpid()), "--network", "host",
		"--volume", state+":/state", image,
		"serve", "--origins", "2", "--actors", "3", "--https", "127.0.0.1:443", "--http", "127.0.0.1:80",
		"--dns", "127.0.0.1:53", "--admin", "127.0.0.1:9180", "--advertise", "127.0.0.1",
		"--log-format", "json"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("podman logs %s:\n%s", name, p.logs(name))
		}
		if _, err := p.output(nil, nil, "podman", "rm", "--force", "--time", "2", name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	plain := ns.HTTPClient(nil, nil)
	waitFor(t, 60*time.Second, "the container's /readyz", func() error {
		_, err := getOK(plain, "http://127.0.0.1:9180/readyz")
		return err
	}, func() string {
		out, _ := p.output(nil, nil, "podman", "ps", "--all", "--filter", "name="+name)
		return out
	})

	t.Run("WebFinger over HTTPS, trusting the CA the container wrote", func(t *testing.T) {
		client := caClient(t, ns, filepath.Join(state, "tls", "ca.pem"), map[string]string{"flood2.test": "127.0.0.1"})
		body, err := getOK(client, "https://flood2.test/.well-known/webfinger?resource=acct:bob@flood2.test")
		if err != nil {
			t.Fatal(err)
		}
		var jrd struct {
			Subject string
			Links   []struct{ Rel, Href string }
		}
		if err := json.Unmarshal(body, &jrd); err != nil {
			t.Fatalf("%v in %s", err, body)
		}
		self := ""
		for _, l := range jrd.Links {
			if l.Rel == "self" {
				self = l.Href
			}
		}
		if jrd.Subject != "acct:bob@flood2.test" || self != "https://flood2.test/users/bob" {
			t.Errorf("JRD %s", body)
		}
	})

	t.Run("the container's DNS answers on :53", func(t *testing.T) {
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return ns.Dial(ctx, network, "127.0.0.1:53")
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, "flood1.test")
		if err != nil || !slices.Equal(addrs, []string{"127.0.0.1"}) {
			t.Errorf("flood1.test = %v, %v; want [127.0.0.1]", addrs, err)
		}
	})

	t.Run("crowd on PATH carries the version it was built with", func(t *testing.T) {
		out := p.podman(t, "exec", name, "crowd", "--version")
		if !strings.Contains(out, "e2e-podman") {
			t.Errorf("crowd --version in the container: %q", out)
		}
	})

	t.Run("the static binary signs with libcrypto, and says so", func(t *testing.T) {
		out := p.podman(t, "exec", name, "crowd", "version")
		if !strings.Contains(out, "signing backend libcrypto (OpenSSL 3.") {
			t.Errorf("crowd version in the container: %q", out)
		}
		if logs := p.logs(name); !strings.Contains(logs, `"signing":"libcrypto (OpenSSL 3.`) {
			t.Errorf("the start-up log does not name the libcrypto backend:\n%s", logs)
		}
	})

	t.Run("SIGTERM stops it cleanly", func(t *testing.T) {
		p.podman(t, "stop", "--time", "10", name)
		if code := strings.TrimSpace(p.podman(t, "inspect", "--format", "{{.State.ExitCode}}", name)); code != "0" {
			t.Errorf("exit code after podman stop: %s", code)
		}
	})
}

// TestPodmanCompose brings up pasture/compose.ci.yaml with podman-compose: the crowd's image
// next to the Fedify test SUT's, host networking in a namespace of the test's own. The SUT
// follows a crowd actor and is accepted (DNS and TLS both ways between the containers),
// `crowd flood` runs inside the crowd's container and its record lands in the mounted out
// folder, and `down` leaves nothing running.
func TestPodmanCompose(t *testing.T) {
	p := newPodman(t)
	ns := NewNetns(t)
	crowdImage := p.buildCrowdImage(t)
	sutImage := p.buildSUTImage(t)

	root := ModuleRoot(t)
	file := filepath.Join(root, "pasture", "compose.ci.yaml")
	state, out := t.TempDir(), t.TempDir()
	// podman-compose 1.0.3 adds a bridge network to host-network containers; this drops it.
	shim := filepath.Join(t.TempDir(), "podman-hostnet.sh")
	copyFile(t, filepath.Join(root, "e2e", "testdata", "podman-hostnet.sh"), shim, 0o755)
	project := composeProjectPrefix + p.id
	env := []string{"CROWD_IMAGE=" + crowdImage, "SUT_IMAGE=" + sutImage,
		"CROWD_CI_STATE=" + state, "CROWD_CI_OUT=" + out}
	compose := func(args ...string) (string, error) {
		return p.output(ns, env, "podman-compose",
			append([]string{"--podman-path", shim, "--project-name", project, "--file", file}, args...)...)
	}
	projectContainers := func() []string {
		o, err := p.output(nil, nil, "podman", "ps", "--all", "--filter", "label=io.podman.compose.project="+project, "--format", "{{.Names}}")
		if err != nil {
			t.Errorf("podman ps: %v", err)
		}
		return strings.Fields(o)
	}
	logs := func() string {
		var b strings.Builder
		for _, c := range projectContainers() {
			fmt.Fprintf(&b, "---- podman logs %s\n%s", c, p.logs(c))
		}
		return b.String()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs())
		}
		_, _ = compose("down")
		for _, c := range projectContainers() {
			_, _ = p.output(nil, nil, "podman", "rm", "--force", "--time", "1", c)
		}
		if _, err := p.output(nil, nil, "podman", "network", "exists", project+"_default"); err == nil {
			if _, err := p.output(nil, nil, "podman", "network", "rm", "--force", project+"_default"); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})

	// First the one-shot CA service (podman-compose 1.0.3 ignores depends_on conditions), then
	// the crowd and the SUT, which read what it wrote.
	if o, err := compose("up", "-d", "ca"); err != nil {
		t.Fatalf("up ca: %v\n%s", err, o)
	}
	if code := strings.TrimSpace(p.podman(t, "wait", project+"_ca_1")); code != "0" {
		t.Fatalf("the ca service exited %s:\n%s", code, logs())
	}
	if o, err := compose("up", "-d", "crowd", "sut"); err != nil {
		t.Fatalf("up crowd sut: %v\n%s", err, o)
	}
	plain := ns.HTTPClient(nil, nil)
	waitFor(t, 60*time.Second, "the crowd's /readyz", func() error {
		_, err := getOK(plain, "http://127.0.0.1:9180/readyz")
		return err
	}, logs)
	waitFor(t, 60*time.Second, "the SUT's control API", func() error {
		_, err := getOK(plain, "http://127.0.0.1:9300/healthz")
		return err
	}, logs)

	t.Run("the SUT follows a crowd actor and is accepted", func(t *testing.T) {
		resp, err := plain.Post("http://127.0.0.1:9300/follow", "application/json",
			strings.NewReader(`{"from": "load0", "to": "acct:alice@flood1.test"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || !bytes.Contains(body, []byte(`"https://flood1.test/users/alice"`)) {
			t.Fatalf("POST /follow (the SUT resolves alice@flood1.test through the crowd's DNS and CA): %s %s", resp.Status, body)
		}
		var last []byte
		waitFor(t, 30*time.Second, "the Follow accepted", func() error {
			b, err := getOK(plain, "http://127.0.0.1:9300/following?persona=load0")
			if err != nil {
				return err
			}
			last = b
			var follows []struct{ Actor, State string }
			if err := json.Unmarshal(b, &follows); err != nil {
				return err
			}
			for _, f := range follows {
				if f.Actor == "https://flood1.test/users/alice" && f.State == "accepted" {
					return nil
				}
			}
			return errors.New("not accepted yet")
		}, func() string { return "following: " + string(last) })
	})

	t.Run("crowd flood runs in the crowd's container and its record lands in out/load", func(t *testing.T) {
		crowd := project + "_crowd_1"
		// A host-network container has no network namespace of its own: exec joins the
		// caller's, so it runs in the test's namespace like `up` did.
		if help, err := p.output(ns, nil, "podman", "exec", crowd, "crowd", "flood", "--help"); err != nil {
			t.Fatalf("`crowd flood` is not in this build of the crowd (issue 4), so the flood step cannot run: %v\n%s", err, help)
		}
		// No --out: the default out/load, relative to the image's working folder /, is the
		// mounted /out/load.
		flood, err := p.output(ns, nil, "podman", "exec", crowd, "crowd", "flood",
			"--rate=20", "--seconds=3", "--persona", "acct:load0@sut.test")
		if err != nil {
			t.Fatalf("crowd flood: %v", err)
		}
		var records []string
		_ = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".json") {
				records = append(records, path)
			}
			return nil
		})
		if len(records) != 1 {
			t.Fatalf("want one JSON record under the mounted out folder, found %v; flood printed:\n%s", records, flood)
		}
		if filepath.Dir(records[0]) != filepath.Join(out, "load") {
			t.Errorf("the record is %s, want it in out/load", records[0])
		}
		b, err := os.ReadFile(records[0])
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(b, &rec); err != nil || rec.Schema != "crowd.flood.record" {
			t.Errorf("record %s: schema %q, %v", records[0], rec.Schema, err)
		}
		if md, err := os.ReadFile(filepath.Join(out, "load", "runs.md")); err != nil || !bytes.Contains(md, []byte(filepath.Base(records[0]))) {
			t.Errorf("out/load/runs.md should have a row for %s: %v\n%s", filepath.Base(records[0]), err, md)
		}
		statsBody, err := getOK(plain, "http://127.0.0.1:9300/stats")
		if err != nil {
			t.Fatal(err)
		}
		var stats struct{ VerifiedTotal, RejectedTotal int }
		if err := json.Unmarshal(statsBody, &stats); err != nil {
			t.Fatal(err)
		}
		t.Logf("crowd flood printed:\n%s\nFedify's stats: verified %d, rejected %d", flood, stats.VerifiedTotal, stats.RejectedTotal)
		if stats.VerifiedTotal == 0 || stats.RejectedTotal != 0 {
			t.Errorf("Fedify verified %d and rejected %d of the flood's activities:\n%s", stats.VerifiedTotal, stats.RejectedTotal, statsBody)
		}
	})

	// down must leave nothing: no container of the project, and no process in the namespace
	// (each container's conmon lived there too).
	if o, err := compose("down"); err != nil {
		t.Fatalf("down: %v\n%s", err, o)
	}
	if left := projectContainers(); len(left) > 0 {
		t.Errorf("containers left after down: %v", left)
	}
	if o, err := exec.Command("ip", "netns", "pids", ns.Name).Output(); err != nil {
		t.Errorf("ip netns pids: %v", err)
	} else if pids := strings.Fields(string(o)); len(pids) > 0 {
		t.Errorf("processes left in the namespace after down: %v", pids)
	}
}
