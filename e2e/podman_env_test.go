package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The podman tests package the crowd the way its users run it (DESIGN.md §7, §8): the
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
	p := (&podmanEnv{conf: conf}).another(t)
	p.sweepStale(t)
	return p
}

// another is the environment for one more test beside p's (a subtest): the same configuration,
// a suffix of its own, and no sweep (p's has been done).
func (p *podmanEnv) another(t *testing.T) *podmanEnv {
	t.Helper()
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	return &podmanEnv{conf: p.conf, id: fmt.Sprintf("%dx%s", os.Getpid(), hex.EncodeToString(rnd[:]))}
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
				if _, err := p.output(nil, nil, "podman", "rm", "--force", "--time", "1", c.ID); err == nil {
					t.Logf("removed stale container %.12s", c.ID)
				}
			}
		}
	}
	if out, err := p.output(nil, nil, "podman", "network", "ls", "--format", "{{.Name}}"); err == nil {
		for _, name := range strings.Fields(out) {
			if project, ok := strings.CutSuffix(name, "_default"); ok && stale(projectPid(project)) {
				if _, err := p.output(nil, nil, "podman", "network", "rm", "--force", name); err == nil {
					t.Logf("removed stale network %s", name)
				}
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
				if _, err := p.output(nil, nil, "podman", "rmi", "--force", img.ID); err == nil {
					t.Logf("removed stale image %.12s", img.ID)
				}
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
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "netgo,osusergo,crowd_static",
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
	// Every module of the peers (fedify-peer.mjs imports its neighbours), not a list to keep.
	modules, err := filepath.Glob(filepath.Join(peers, "*.mjs"))
	if err != nil || len(modules) == 0 {
		t.Fatalf("the test peers' modules in %s: %v", peers, err)
	}
	for _, src := range append(modules, filepath.Join(peers, "package.json")) {
		copyFile(t, src, filepath.Join(app, filepath.Base(src)), 0o644)
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
