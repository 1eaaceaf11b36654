package e2e

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPodman packages the crowd as its users run it (podman_env_test.go): the crowd's image is
// built once, and its three tests then run side by side, each with a network namespace,
// containers and names of its own (podman serialises what its store must). The group itself is
// not parallel: no test outside it shares the cores with its containers.
func TestPodman(t *testing.T) {
	p := newPodman(t)
	image := p.buildCrowdImage(t)
	t.Run("Image", func(t *testing.T) { t.Parallel(); testPodmanImage(t, p.another(t), image) })
	t.Run("Compose", func(t *testing.T) { t.Parallel(); testPodmanCompose(t, p.another(t), image) })
	t.Run("OriginAddresses", func(t *testing.T) { t.Parallel(); testPodmanOriginAddresses(t, p.another(t), image) })
}

// testPodmanImage runs the crowd's image as its users do, with host networking: the CA the
// container writes into its mounted state volume lets the host (the test process) check
// WebFinger over HTTPS, the container's DNS answers on :53, and SIGTERM stops it cleanly.
func testPodmanImage(t *testing.T, p *podmanEnv, image string) {
	ns := NewNetns(t)

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
