package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPodmanCompose brings up pasture/compose.ci.yaml with podman-compose: the crowd's image
// next to the Fedify test SUT's, host networking in a namespace of the test's own. The SUT
// follows a crowd actor and is accepted (DNS and TLS both ways between the containers),
// `crowd flood` runs inside the crowd's container and its record lands in the mounted out
// folder, and `down` leaves nothing running.
func testPodmanCompose(t *testing.T, p *podmanEnv, crowdImage string) {
	ns := NewNetns(t)
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
			t.Fatalf("`crowd flood` is not in this build of the crowd's image, so the flood step cannot run: %v\n%s", err, help)
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
