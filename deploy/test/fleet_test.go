package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/crowdfed/crowd/e2e"
	"github.com/crowdfed/crowd/flood/record"
	"helm.sh/helm/v3/pkg/chartutil"
	batchv1 "k8s.io/api/batch/v1"
)

// fleetValues is a small fleet for the contract: two shards, four origins, a short flood of the
// Fedify SUT's two personas.
const fleetValues = `
shards: 2
world: {origins: 4, actors: 2}
sut: {name: sut.test, address: 10.96.53.80}
services: {firstAddress: 10.96.53.10}
flood: {rate: 10, seconds: 3, personas: "load%d@sut.test", count: 2}
run: contract
adminToken: {value: contract-token-0123456789}
`

// TestFleetContract runs the rendered fleet as a cluster would, short of one: each pod of the
// indexed Job as local processes (its init steps, the serve sidecar, the flood) in a network
// namespace of its own at the address its Service would give it, all at once against the Fedify
// SUT in another namespace whose DNS is the shards' (the CoreDNS stub zone); then the merge Job as
// rendered. The merged record's totals are the sum of the shards', and the SUT fetched from every
// origin of every shard, at the address the DNS map gives it. A chart change that breaks the
// commands, the shard split or the DNS map fails here.
func TestFleetContract(t *testing.T) {
	for _, row := range []struct {
		name, values string
		slices       []string // each shard's slice of advertise, routed to its pod as the cluster would
	}{
		// Every origin of a shard at its Service's address: the DNS map names each origin.
		{"shared addresses", "", nil},
		// An address per origin: each shard takes its half of the range and routes it locally.
		{"an address per origin", "advertise: 10.251.0.0/24", []string{"10.251.0.0/25", "10.251.0.128/25"}},
		// The CA made by the chart's CA Job on the volume (run first here; in a cluster the
		// shards wait for it), the SUT given its certificate from there.
		{"a CA made by the chart", "ca: {create: true}", nil},
	} {
		t.Run(row.name, func(t *testing.T) { runFleet(t, fleetValues+row.values, row.slices) })
	}
}

// runFleet runs one render of the fleet and checks its records and the SUT's fetches.
func runFleet(t *testing.T, values string, slices []string) {
	e2e.RequireRoot(t)
	peers := e2e.NodePeers(t)
	crowd := e2e.BuildCrowd(t)
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	objs, job, merge := renderFleet(t, vals)
	_, shards := Indexed(job)

	hub, addrs := fleetNetwork(t, objs, shards, slices)
	volumes, sutTLS, caFile := fleetCA(t, hub.ns, objs, crowd)
	startSUT(t, hub.ns, hub.sut, peers, sutTLS, caFile)

	// The pods, all at once (parallelism = completions): init steps and sidecars, then floods.
	floods := make([][]*exec, shards)
	var sidecars []*e2e.Process
	for i := range shards {
		r := &podRunner{ns: hub.shards[i], pod: Pod{Index: i, IP: addrs[i], Secrets: objs.SecretsByName()},
			volumes: volumes, crowd: crowd, workdir: t.TempDir()}
		sidecars = append(sidecars, r.initSteps(t, job.Spec.Template.Spec)...)
		floods[i] = r.commands(t, job.Spec.Template.Spec.Containers)
	}
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() { runAll(t, floods[i]) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, p := range sidecars {
		p.Stop()
	}

	// The merge Job as rendered, on the same volume.
	m := &podRunner{ns: hub.ns, pod: Pod{Index: -1, Secrets: objs.SecretsByName()}, volumes: volumes, crowd: crowd, workdir: t.TempDir()}
	m.initSteps(t, merge.Spec.Template.Spec)
	runAll(t, m.commands(t, merge.Spec.Template.Spec.Containers))
	if t.Failed() {
		t.FailNow()
	}
	checkMergedTotals(t, filepath.Join(volumes["data"], "out", "contract"), shards)
	checkEveryOriginReached(t, hub.ns, vals, shards)
}

// fleetCA makes the fleet's CA and the SUT's certificate, and returns the pods' volumes (each a
// folder), the folder of the SUT's certificate and the CA's certificate. With the chart's CA Job
// that Job runs, as rendered, on the volume; else the CA is README step 1's, made with crowd ca
// issue and given to the pods as the Secret crowd-ca would hold it.
func fleetCA(t *testing.T, ns *e2e.Netns, objs *Objects, crowd string) (volumes map[string]string, sutTLS, caFile string) {
	t.Helper()
	tmp := t.TempDir()
	volumes = map[string]string{"data": filepath.Join(tmp, "volume")}
	if job := objs.Job(Release + "-ca"); job != nil {
		r := &podRunner{ns: ns, pod: Pod{Index: -1}, volumes: volumes, crowd: crowd, workdir: t.TempDir()}
		runAll(t, r.commands(t, job.Spec.Template.Spec.Containers))
		if t.Failed() {
			t.FailNow()
		}
		ca := filepath.Join(volumes["data"], "ca")
		return volumes, filepath.Join(ca, "sut"), filepath.Join(ca, "tls", "ca.pem")
	}
	state, sutTLS := filepath.Join(tmp, "ca-state"), filepath.Join(tmp, "sut-tls")
	if out, err := osexec.Command(crowd, "ca", "issue", "sut.test", "--state", state, "--out", sutTLS).CombinedOutput(); err != nil {
		t.Fatalf("crowd ca issue: %v\n%s", err, out)
	}
	volumes["ca"] = filepath.Join(state, "tls")
	return volumes, sutTLS, filepath.Join(state, "tls", "ca.pem")
}

// renderFleet renders vals and returns the objects, the fleet's Job and the merge Job.
func renderFleet(t *testing.T, vals chartutil.Values) (*Objects, *batchv1.Job, *batchv1.Job) {
	t.Helper()
	r, err := Render(chartDir, vals.AsMap())
	if err != nil {
		t.Fatal(err)
	}
	objs, err := r.Decode()
	if err != nil {
		t.Fatal(err)
	}
	job, merge := objs.Job(Release), objs.Job(Release+"-merge")
	if job == nil || merge == nil {
		t.Fatal("the render has no fleet Job or no merge Job")
	}
	return objs, job, merge
}

// runAll runs a pod's containers to their end, in order; a failure is reported with the
// container's output (not fatal: it runs in a goroutine of its pod).
func runAll(t *testing.T, xs []*exec) {
	for _, x := range xs {
		if out, err := x.CombinedOutput(); err != nil {
			t.Errorf("container %s (%q): %v\n%s", x.name, x.argv, err, out)
			return
		}
	}
}

// network is the SUT's namespace and one per shard, each joined to it by a link.
type network struct {
	ns     *e2e.Netns
	sut    string // the SUT's address in ns
	shards []*e2e.Netns
}

// fleetNetwork makes the namespaces: shard i's at the cluster IP of its Service (the address
// the DNS map gives its origins), the SUT's at sut.address, with a route each way (and to shard
// i's slice of the origins' range, when slices are given); the SUT's resolver asks the shards, as
// the CoreDNS stub zone in NOTES does.
func fleetNetwork(t *testing.T, objs *Objects, shards int, slices []string) (*network, []string) {
	t.Helper()
	sutAddr := strings.Split(envValue(*containerOf(t, objs.Job(Release), "serve"), "CROWD_DNS_RECORD"), ",")[0]
	sutAddr = sutAddr[strings.Index(sutAddr, "=")+1:]
	n := &network{ns: e2e.NewNetns(t), sut: sutAddr}
	addrs := make([]string, shards)
	var resolv strings.Builder
	for i := range shards {
		s := service(objs, i)
		if s == nil {
			t.Fatalf("no Service for shard %d", i)
		}
		addrs[i] = s.Spec.ClusterIP
		ns := e2e.NewNetns(t)
		dev := n.ns.Link(t, ns, sutAddr+"/32", addrs[i]+"/32")
		n.ns.Run(t, "ip", "route", "add", addrs[i]+"/32", "dev", dev)
		if slices != nil {
			n.ns.Run(t, "ip", "route", "add", slices[i], "dev", dev)
		}
		ns.Run(t, "ip", "route", "add", sutAddr+"/32", "dev", vethOf(t, ns))
		n.shards = append(n.shards, ns)
		fmt.Fprintf(&resolv, "nameserver %s\n", addrs[i])
	}
	n.ns.WriteEtc(t, "resolv.conf", resolv.String())
	return n, addrs
}

// vethOf is the one veth device in ns.
func vethOf(t *testing.T, ns *e2e.Netns) string {
	t.Helper()
	out := ns.Run(t, "ip", "-o", "link", "show", "type", "veth")
	fields := strings.Fields(out)
	if len(fields) < 2 {
		t.Fatalf("no veth in %s: %q", ns.Name, out)
	}
	name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
	return name
}

// startSUT starts the Fedify SUT (sut.test, personas load0 and load1) on addr in ns.
func startSUT(t *testing.T, ns *e2e.Netns, addr, peers, tlsDir, caFile string) {
	t.Helper()
	cmd := ns.Command(context.Background(), "node", filepath.Join(peers, "fedify-peer.mjs"),
		"--domain", "sut.test", "--listen", addr+":443", "--control", "127.0.0.1:9300",
		"--cert", filepath.Join(tlsDir, "sut.test.crt"), "--key", filepath.Join(tlsDir, "sut.test.key"),
		"--personas", "load%d", "--count", "2")
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile)
	e2e.StartProcess(t, cmd, e2e.ReadyOutput(`"ready":true`))
}

// checkMergedTotals: merged.json adds up exactly the shards' records it was made of.
func checkMergedTotals(t *testing.T, dir string, shards int) {
	t.Helper()
	merged, err := record.LoadRecord(filepath.Join(dir, "merged.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum record.Counts
	var warm record.Counts
	var fetches int64
	for i := range shards {
		rec, err := record.LoadRecord(filepath.Join(dir, fmt.Sprintf("in-%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Overall.Counts.Sent == 0 {
			t.Errorf("shard %d sent nothing", i)
		}
		sum.Merge(rec.Overall.Counts)
		warm.Merge(rec.Warmup)
		if rec.Fetchback != nil {
			fetches += rec.Fetchback.Total.Fetches
		}
	}
	if merged.Generators() != shards {
		t.Errorf("merged record of %d generators, want %d", merged.Generators(), shards)
	}
	if merged.Overall.Counts != sum || merged.Warmup != warm {
		t.Errorf("merged counts %+v (warm-up %+v), want the shards' sum %+v (%+v)", merged.Overall.Counts, merged.Warmup, sum, warm)
	}
	if merged.Fetchback == nil || merged.Fetchback.Total.Fetches != fetches {
		t.Errorf("merged fetch-back %+v, want %d fetches (the shards' sum)", merged.Fetchback, fetches)
	}
}

// checkEveryOriginReached: the SUT's own log of its requests has a 2xx answer from every origin
// of the world, every shard's.
func checkEveryOriginReached(t *testing.T, ns *e2e.Netns, vals chartutil.Values, shards int) {
	t.Helper()
	resp, err := ns.HTTPClient(nil, nil).Get("http://127.0.0.1:9300/fetches")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var fetches []struct {
		URL    string `json:"url"`
		Status int    `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&fetches); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /fetches: %d %v", resp.StatusCode, err)
	}
	reached := map[string]int{}
	for _, f := range fetches {
		if u, err := url.Parse(f.URL); err == nil && f.Status/100 == 2 {
			reached[u.Hostname()]++
		}
	}
	origins := int(vals["world"].(map[string]any)["origins"].(float64))
	for k := 1; k <= origins; k++ {
		host := fmt.Sprintf("flood%d.test", k)
		if reached[host] == 0 {
			t.Errorf("the SUT never fetched from %s (shard %d of %d): reached %v", host, (k-1)%shards, shards, reached)
		}
	}
}
