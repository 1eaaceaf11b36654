package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestComposeAddressesRecipe tests the compose recipe that gives each origin its own address
// (pasture/compose.addresses.yaml over pasture/compose.yaml) as far as this machine can without
// a registry to pull busybox and GoToSocial from: the two one-shot containers' route commands
// are read from the file and run verbatim, each in a network namespace standing for the
// container it joins (network_mode: service:…), linked at the addresses compose.yaml gives
// those containers; then a SUT's namespace reaches origins of the crowd at their own addresses
// over TLS with the right certificate. That requests leave from each origin's own address
// over such routes is TestOriginsSendFromTheirOwnAddresses's part (the same two routes, its
// own namespaces). The file's pieces must also agree with each other: one range in both routes, in GoToSocial's
// allowed addresses and in the header's CROWD_ADVERTISE, and the SUT's route through the
// crowd's compose address.
func TestComposeAddressesRecipe(t *testing.T) {
	RequireRoot(t)
	RequireTools(t, "python3", "ip")
	dir := filepath.Join(ModuleRoot(t), "pasture")
	base := readCompose(t, filepath.Join(dir, "compose.yaml"))
	overlay := readCompose(t, filepath.Join(dir, "compose.addresses.yaml"))
	ipOf := func(svc string) string {
		for _, n := range base.Services[svc].Networks {
			return n.IPv4
		}
		t.Fatalf("compose.yaml gives %s no address", svc)
		return ""
	}
	crowdIP, gtsIP := ipOf("crowd"), ipOf("gotosocial")

	// The overlay's two one-shot route containers: each joins its service's namespace with
	// NET_ADMIN, in the addresses profile.
	route := func(svc, joins string) []string {
		s, ok := overlay.Services[svc]
		switch {
		case !ok:
			t.Fatalf("compose.addresses.yaml has no %s service", svc)
		case s.NetworkMode != "service:"+joins:
			t.Errorf("%s joins %q, want service:%s", svc, s.NetworkMode, joins)
		case !slices.Contains(s.CapAdd, "NET_ADMIN"):
			t.Errorf("%s lacks NET_ADMIN, which ip route needs", svc)
		case !slices.Contains(s.Profiles, "addresses"):
			t.Errorf("%s is not in the addresses profile", svc)
		case len(s.Command) < 4 || s.Command[0] != "ip" || s.Command[1] != "route":
			t.Fatalf("%s runs %q, not an ip route command", svc, s.Command)
		}
		return s.Command
	}
	crowdRoute, gtsRoute := route("crowd-range", "crowd"), route("gts-range", "gotosocial")
	if want := []string{"ip", "route", "replace", "local", originRange, "dev", "lo"}; !slices.Equal(crowdRoute, want) {
		t.Errorf("crowd-range runs %q, want %q (the range this package's address tests use)", crowdRoute, want)
	}
	if want := []string{"ip", "route", "replace", originRange, "via", crowdIP}; !slices.Equal(gtsRoute, want) {
		t.Errorf("gts-range runs %q, want %q (the range through the crowd's compose address)", gtsRoute, want)
	}
	allow := strings.Split(overlay.Services["gotosocial"].Environment["GTS_HTTP_CLIENT_ALLOW_IPS"], ",")
	if !slices.Contains(allow, originRange) {
		t.Errorf("GoToSocial may dial %q: not the origins' range %s", allow, originRange)
	}
	if !slices.ContainsFunc(allow, func(c string) bool {
		_, n, err := net.ParseCIDR(c)
		return err == nil && n.Contains(net.ParseIP(crowdIP))
	}) {
		t.Errorf("GoToSocial may dial %q: not the crowd's own address %s", allow, crowdIP)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "compose.addresses.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "CROWD_ADVERTISE="+originRange) {
		t.Errorf("compose.addresses.yaml's usage line does not advertise %s", originRange)
	}
	if !slices.Contains(base.Services["crowd"].Command, "--advertise=${CROWD_ADVERTISE:-"+crowdIP+"}") {
		t.Errorf("compose.yaml's crowd does not take --advertise from CROWD_ADVERTISE: %q", base.Services["crowd"].Command)
	}
	if t.Failed() {
		return
	}

	// The routes, run as the containers run them, in namespaces at the compose addresses.
	crowdNS, gtsNS := NewNetns(t), NewNetns(t)
	crowdNS.Link(t, gtsNS, crowdIP+"/24", gtsIP+"/24")
	crowdNS.Run(t, crowdRoute[0], crowdRoute[1:]...)
	gtsNS.Run(t, gtsRoute[0], gtsRoute[1:]...)
	// Run twice, as after a restart of either container: `replace` must not fail.
	crowdNS.Run(t, crowdRoute[0], crowdRoute[1:]...)
	gtsNS.Run(t, gtsRoute[0], gtsRoute[1:]...)

	const origins = 20
	state := t.TempDir()
	seedKeys(t, state, origins)
	crowdServeArgs(t, crowdNS, "serve", "--state", state, "--origins", fmt.Sprint(origins), "--actors", "1",
		"--https", ":443", "--http", "", "--dns", "", "--admin", "127.0.0.1:9180", "--advertise", originRange,
		"--log-format", "json")
	ca, err := os.ReadFile(filepath.Join(state, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	plan := (&addrWorld{origins: origins}).plan(t, originRange)
	for _, k := range []int{1, 7, origins} {
		host := fmt.Sprintf("flood%d.test", k)
		addrs := plan.HostAddrs(host)
		if len(addrs) == 0 {
			t.Fatalf("no address for %s", host)
		}
		addr := addrs[0]
		client := gtsNS.HTTPClient(map[string]string{host: addr.String()}, &tls.Config{RootCAs: pool, ServerName: host})
		resp, err := client.Get("https://" + host + "/users/alice")
		if err != nil {
			t.Fatalf("from the SUT's namespace, %s at %s: %v", host, addr, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s at %s: GET /users/alice answered %d", host, addr, resp.StatusCode)
		}
	}
}
