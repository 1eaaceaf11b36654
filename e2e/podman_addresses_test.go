package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testPodmanOriginAddresses gives the crowd's container a range of addresses on a podman bridge
// network, as the compose recipe of docs/large-world.md does: the container gets one address from the
// network, and one route makes the whole origin range local to it ("ip route add local
// 10.251.0.0/16 dev lo" in its namespace; the recipe's sidecar with NET_ADMIN, done here from
// the host with nsenter since the crowd's image has no ip command), and the other side routes
// the range to the container's address. The Go test SUT listens on the bridge's gateway, in the
// test's namespace: a flood of Follows from every origin, run inside the container, reaches it
// from as many addresses as origins, each from its own origin's.
func testPodmanOriginAddresses(t *testing.T, p *podmanEnv, image string) {
	const origins = 200
	ns := NewNetns(t)
	state := t.TempDir()
	certs := issueSUTCert(t, state)
	seedKeys(t, state, origins)
	gateway := strings.TrimSpace(p.podman(t, "network", "inspect", "podman", "--format", "{{range .Subnets}}{{.Gateway}}{{end}}"))
	if gateway == "" {
		// CNI's inspect output of podman 4.3 has no Subnets: read the plugin's ranges.
		gateway = strings.TrimSpace(p.podman(t, "network", "inspect", "podman", "--format",
			"{{range .plugins}}{{range .ipam.ranges}}{{range .}}{{.gateway}}{{end}}{{end}}{{end}}"))
	}
	if gateway == "" {
		t.Fatal("the podman network's gateway is unknown")
	}

	name := "crowd-e2e-addr-" + p.id
	if out, err := p.output(ns, nil, "podman", "run", "--detach", "--name", name,
		"--label", podmanLabel+"="+strconv.Itoa(os.Getpid()), "--network", "podman", "--dns", "127.0.0.1",
		"--volume", state+":/state", image,
		"serve", "--origins", fmt.Sprint(origins), "--actors", "1", "--advertise", originRange,
		"--https", ":443", "--http", "", "--dns", ":53", "--admin", "0.0.0.0:9180",
		"--dns-record", "sut.test="+gateway, "--dns-upstream", "127.0.0.1:1", "--log-format", "json"); err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("podman logs %s:\n%s", name, p.logs(name))
		}
		if _, err := p.output(nil, nil, "podman", "rm", "--force", "--time", "2", name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	pid := strings.TrimSpace(p.podman(t, "inspect", "--format", "{{.State.Pid}}", name))
	cip := strings.TrimSpace(p.podman(t, "inspect", "--format", "{{.NetworkSettings.IPAddress}}", name))
	plain := ns.HTTPClient(nil, nil)
	waitFor(t, 60*time.Second, "the container's /readyz", func() error {
		_, err := getOK(plain, "http://"+cip+":9180/readyz")
		return err
	}, func() string { return p.logs(name) })

	// The range, local to the container; routed to it from the other side.
	if out, err := exec.Command("nsenter", "--target", pid, "--net", "ip", "route", "add", "local", originRange, "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("the container's route: %v\n%s", err, out)
	}
	ns.Run(t, "ip", "route", "add", originRange, "via", cip)
	sut := startAddrSUT(t, ns, gateway, certs)

	plan := (&addrWorld{origins: origins}).plan(t, originRange)
	if got, want := resolveA(t, ns, cip+":53", "flood7.test"), plan.Addrs(7)[0].String(); got != want {
		t.Errorf("the container's DNS answers flood7.test with %s, want %s", got, want)
	}
	// From the SUT's side, at an origin's own address: the container receives the whole range.
	if _, err := getOK(plain, "http://"+plan.Addrs(150)[0].String()+":9180/healthz"); err != nil {
		t.Errorf("the container at origin 150's address: %v", err)
	}

	out, err := p.output(nil, nil, "podman", "exec", name, "crowd", "flood", "--personas", "load%d@sut.test", "--count", "1",
		"--admin", "127.0.0.1:9180", "--state", "/state", "--out", "/state/out", "--mix", "follow=1", "--signing", "jit", "--rate", "50",
		"--seconds", "0", "--max-sends", fmt.Sprint(origins), "--timeout", "30s")
	if err != nil {
		t.Fatalf("crowd flood in the container: %v\n%s", err, out)
	}
	posts := sut.received(func(r sutRequest) bool { return r.Method == http.MethodPost })
	seen := checkFromSigner(t, plan, posts)
	t.Logf("%d Follows from %d distinct addresses, out of the container", len(posts), len(seen))
	if len(posts) != origins || len(seen) != origins {
		t.Errorf("the SUT received %d Follows from %d addresses, want %d from %d\n%s", len(posts), len(seen), origins, origins, out)
	}
}
