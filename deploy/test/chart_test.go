package deploytest

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/internal/originaddr"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	batchv1 "k8s.io/api/batch/v1"
)

var update = flag.Bool("update", false, "rewrite the example render (deploy/helm/example-shards-4.yaml)")

const (
	chartDir    = "../helm/crowd"
	examplePath = "../helm/example-shards-4.yaml"
)

// renders are the values the chart is rendered with in every check: each row is a fleet a user
// would install. adminToken.value is fixed, as the chart otherwise draws a random one.
var renders = []struct {
	name   string
	values string
}{
	// One crowd: a fleet of one, whose DNS map sends every origin to its one Service.
	{"shards=1", "shards: 1"},
	// The default fleet size.
	{"shards=4", "shards: 4"},
	// A wide fleet: 16 Services, 40 origins spread over them.
	{"shards=16", "shards: 16\nworld: {origins: 40}"},
	// An address per origin: every shard advertises the range and routes its slice locally.
	{"shards=4 per-origin addresses", "shards: 4\nadvertise: 10.251.0.0/16"},
	// The CA made by the chart's Job instead of a Secret, the fleet's total rate split.
	{"shards=2 ca.create totalRate", "shards: 2\nca: {create: true}\nflood: {rate: 0, totalRate: 500}"},
	// The Grafana dashboard as a ConfigMap, gates and a scenario on the flood.
	{"shards=4 dashboard gates", "shards: 4\nmetrics: {dashboard: true}\nflood: {expect: ['p95<2s', 'errors<1%'], scenario: boost-storm}"},
}

// values reads a row's values, with the fixed admin token.
func values(t *testing.T, text string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(text + "\nadminToken: {value: example-token-0123456789}\n"))
	if err != nil {
		t.Fatalf("values %q: %v", text, err)
	}
	return v.AsMap()
}

// render renders and decodes one row.
func render(t *testing.T, text string) (*Rendered, *Objects, chartutil.Values) {
	t.Helper()
	vals := values(t, text)
	r, err := Render(chartDir, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	objs, err := r.Decode()
	if err != nil {
		t.Fatalf("strict decode:\n%v", err)
	}
	chrtVals, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return r, objs, chartutil.CoalesceTables(vals, chrtVals)
}

// TestMain keeps Helm's log quiet: its loader reports the dashboard's symbolic link (to
// deploy/grafana, the one copy) on every load.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// TestChartLints runs Helm's own linter (helm lint) on the chart with its defaults and with
// every row's values: no error and no warning.
func TestChartLints(t *testing.T) {
	rows := append([]struct{ name, values string }{{"defaults", ""}}, renders...)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			v, err := chartutil.ReadValues([]byte(row.values))
			if err != nil {
				t.Fatal(err)
			}
			l := lint.All(chartDir, v.AsMap(), "default", false)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %v", m)
				}
			}
		})
	}
}

// TestChartRenders renders every row, decodes every object strictly into its k8s.io/api type,
// and checks what the fleet depends on.
func TestChartRenders(t *testing.T) {
	for _, row := range renders {
		t.Run(row.name, func(t *testing.T) {
			r, objs, vals := render(t, row.values)
			n := int(vals["shards"].(float64))
			job := objs.Job("crowd")
			if job == nil {
				t.Fatal("no Job crowd")
			}
			checkJob(t, job, objs, n)
			checkServices(t, objs, vals, n)
			checkDNSMap(t, job, objs, vals, n)
			checkCA(t, job, objs, vals)
			checkOriginRange(t, job, vals, n)
			checkAdminToken(t, job, objs)
			checkMerge(t, job, objs, n)
			checkNotes(t, r.Notes, objs)
		})
	}
}

// checkJob: an indexed Job running every shard at once, and each pod's --shard (in the serve
// sidecar) equal to its completion index.
func checkJob(t *testing.T, job *batchv1.Job, objs *Objects, n int) {
	t.Helper()
	indexed, completions := Indexed(job)
	if !indexed || completions != n || job.Spec.Parallelism == nil || int(*job.Spec.Parallelism) != n {
		t.Fatalf("Job: indexed %v, completions %d, parallelism %v; want indexed with %d of each", indexed, completions, job.Spec.Parallelism, n)
	}
	serve, flood := containerOf(t, job, "serve"), containerOf(t, job, "flood")
	if !Sidecar(*serve) {
		t.Error("serve is not a native sidecar (restartPolicy: Always)")
	}
	// The flood borrows the keys of the serve it drives: the same folder, read-only.
	env := map[string]string{CompletionIndexEnv: "1"}
	serveState := mountAt(Mounts(*serve, env), flagValue(Argv(*serve, env, nil), "--state"))
	floodState := mountAt(Mounts(*flood, env), flagValue(Argv(*flood, env, nil), "--state"))
	if serveState == nil || floodState == nil || serveState.Volume != floodState.Volume ||
		serveState.SubPath != floodState.SubPath || !floodState.ReadOnly {
		t.Errorf("flood's --state is %+v, want the serve's %+v read-only", floodState, serveState)
	}
	for i := range n {
		env, err := (Pod{Index: i, IP: "192.0.2.1", Secrets: objs.SecretsByName()}).Env(*serve)
		if err != nil {
			t.Fatal(err)
		}
		argv := Argv(*serve, env, []string{"crowd"})
		if got, want := flagValue(argv, "--shard"), fmt.Sprintf("%d/%d", i, n); got != want {
			t.Errorf("pod %d: serve --shard=%q, want %q (%q)", i, got, want, argv)
		}
	}
}

// checkServices: a Service per shard selecting that shard's pod, no two at one address, and none
// at the SUT's.
func checkServices(t *testing.T, objs *Objects, vals chartutil.Values, n int) {
	t.Helper()
	if len(objs.Services) != n {
		t.Fatalf("%d Services, want one per shard (%d)", len(objs.Services), n)
	}
	seen := map[string]string{sutAddress(vals): "the SUT"}
	for i := range n {
		s := service(objs, i)
		if s == nil {
			t.Errorf("no Service crowd-%d", i)
			continue
		}
		if got := s.Spec.Selector["batch.kubernetes.io/job-completion-index"]; got != fmt.Sprint(i) {
			t.Errorf("Service %s selects completion index %q, want %d", s.Name, got, i)
		}
		for _, p := range s.Spec.Ports {
			if !servesPort(containerOf(t, objs.Job(Release), "serve"), p) {
				t.Errorf("Service %s port %s targets %s/%s, which serve does not expose", s.Name, p.Name, p.TargetPort.String(), p.Protocol)
			}
		}
		if _, err := netip.ParseAddr(s.Spec.ClusterIP); err != nil {
			t.Errorf("Service %s: clusterIP %q: %v", s.Name, s.Spec.ClusterIP, err)
		}
		if other, dup := seen[s.Spec.ClusterIP]; dup {
			t.Errorf("Service %s at %s, the address of %s", s.Name, s.Spec.ClusterIP, other)
		}
		seen[s.Spec.ClusterIP] = s.Name
	}
}

// checkDNSMap: CROWD_DNS_RECORD names the SUT, and (without advertise) every origin exactly once,
// at the Service of its shard ((k-1) mod n); with advertise no origin (each shard computes them)
// and the shard's slice routed locally.
func checkDNSMap(t *testing.T, job *batchv1.Job, objs *Objects, vals chartutil.Values, n int) {
	t.Helper()
	serve := containerOf(t, job, "serve")
	records := envValue(*serve, "CROWD_DNS_RECORD")
	world := vals["world"].(map[string]any)
	origins, domain := int(world["origins"].(float64)), world["domain"].(string)
	named := map[string][]string{}
	for _, rec := range strings.Split(records, ",") {
		host, addr, ok := strings.Cut(rec, "=")
		if !ok {
			t.Fatalf("CROWD_DNS_RECORD entry %q is no NAME=IP", rec)
		}
		named[host] = append(named[host], addr)
	}
	sut := vals["sut"].(map[string]any)
	if got := named[sut["name"].(string)]; !slices.Equal(got, []string{sutAddress(vals)}) {
		t.Errorf("the SUT's name maps to %q, want [%s]", got, sutAddress(vals))
	}
	advertise, _ := vals["advertise"].(string)
	for k := 1; k <= origins; k++ {
		host := strings.Replace(domain, "%d", fmt.Sprint(k), 1)
		got := named[host]
		switch {
		case advertise != "" && len(got) != 0:
			t.Errorf("with advertise, %s is in the DNS map (%q): the shards compute it", host, got)
		case advertise == "" && len(got) != 1:
			t.Errorf("%s is named %d times in the DNS map, want once", host, len(got))
		case advertise == "" && got[0] != service(objs, (k-1)%n).Spec.ClusterIP:
			t.Errorf("%s at %s, want the address of Service crowd-%d", host, got[0], (k-1)%n)
		}
		delete(named, host)
	}
	delete(named, sut["name"].(string))
	if len(named) > 0 {
		t.Errorf("the DNS map names hosts that are no origin: %v", SortedKeys(named))
	}
	argv := Argv(*serve, map[string]string{"POD_IP": "192.0.2.1"}, nil)
	if want := cmp.Or(advertise, "192.0.2.1"); flagValue(argv, "--advertise") != want {
		t.Errorf("serve --advertise=%q, want %q", flagValue(argv, "--advertise"), want)
	}
	if hasInit := initContainer(job, "origin-range") != nil; hasInit != (advertise != "") {
		t.Errorf("origin-range step present %v, with advertise %q", hasInit, advertise)
	}
}

// checkOriginRange: with advertise, pod i's origin-range step routes locally a prefix holding
// the address of every origin of shard i, as the crowd's own address plan (internal/originaddr,
// what `crowd serve --advertise --shard` uses) gives them, and the pods' prefixes do not overlap.
// The step's script runs under sh with ip replaced by a function that prints its arguments.
func checkOriginRange(t *testing.T, job *batchv1.Job, vals chartutil.Values, n int) {
	t.Helper()
	advertise, _ := vals["advertise"].(string)
	step := initContainer(job, "origin-range")
	if advertise == "" || step == nil {
		return
	}
	world := vals["world"].(map[string]any)
	rng, err := originaddr.ParseRange(advertise)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := originaddr.NewPlan(rng, world["domain"].(string), int(world["origins"].(float64)), n)
	if err != nil {
		t.Fatal(err)
	}
	var routed []netip.Prefix
	for i := range n {
		cmd := osexec.Command("sh", "-c", "ip() { echo \"$*\"; }\n"+step.Command[len(step.Command)-1])
		cmd.Env = []string{fmt.Sprintf("%s=%d", CompletionIndexEnv, i)}
		out, err := cmd.CombinedOutput()
		var spec string
		if _, scanErr := fmt.Sscanf(string(out), "route add local %s dev lo", &spec); err != nil || scanErr != nil {
			t.Fatalf("pod %d's origin-range: %q (%v)", i, out, err)
		}
		prefix, err := netip.ParsePrefix(spec)
		if err != nil {
			t.Fatalf("pod %d routes %q: %v", i, spec, err)
		}
		for _, other := range routed {
			if other.Overlaps(prefix) {
				t.Errorf("pod %d routes %s, which overlaps %s of another pod", i, prefix, other)
			}
		}
		routed = append(routed, prefix)
		for k := i + 1; k <= plan.Origins(); k += n {
			if addrs := plan.Addrs(k); len(addrs) == 0 || !prefix.Contains(addrs[0]) {
				t.Errorf("pod %d routes %s, without origin %d's address %v", i, prefix, k, addrs)
			}
		}
	}
}

// checkCA: the CA the seed-ca step copies lands in tls/ of the folder the serve reads as --state
// (the same volume and sub-path), from the Secret (or the CA Job's folder) mounted where the
// step reads it.
func checkCA(t *testing.T, job *batchv1.Job, objs *Objects, vals chartutil.Values) {
	t.Helper()
	serve, seed := containerOf(t, job, "serve"), initContainer(job, "seed-ca")
	if seed == nil {
		t.Fatal("no seed-ca step")
	}
	env := map[string]string{CompletionIndexEnv: "3"}
	state := flagValue(Argv(*serve, env, nil), "--state")
	serveMount := mountAt(Mounts(*serve, env), state)
	seedMount := mountAt(Mounts(*seed, env), state)
	if serveMount == nil || seedMount == nil || *serveMount != *seedMount {
		t.Fatalf("serve reads --state=%s from %+v, seed-ca writes it to %+v: not one folder", state, serveMount, seedMount)
	}
	script := strings.Join(seed.Command, " ")
	caMount := mountAt(Mounts(*seed, env), "/ca")
	if caMount == nil {
		t.Fatal("seed-ca mounts nothing at /ca")
	}
	create := vals["ca"].(map[string]any)["create"].(bool)
	src := "/ca/ca.pem"
	if create {
		src = "/ca/tls/ca.pem"
		if caMount.SubPath != "ca" || caMount.Volume != "data" || objs.Job("crowd-ca") == nil {
			t.Errorf("ca.create: seed-ca reads %+v, the CA Job present: %v", caMount, objs.Job("crowd-ca") != nil)
		}
	} else if v := volume(job, caMount.Volume); v == nil || v.Secret == nil || v.Secret.SecretName != vals["ca"].(map[string]any)["secretName"] {
		t.Errorf("seed-ca's /ca is volume %+v, want the Secret ca.secretName", v)
	}
	for _, want := range []string{"cp " + src + " " + state + "/tls/ca.pem", strings.Replace("cp "+src, "ca.pem", "ca-key.pem", 1) + " " + state + "/tls/ca-key.pem"} {
		if !strings.Contains(script, want) {
			t.Errorf("seed-ca does not %q:\n%s", want, script)
		}
	}
}

// checkAdminToken: serve and flood both have CROWD_ADMIN_TOKEN from a Secret the chart made.
func checkAdminToken(t *testing.T, job *batchv1.Job, objs *Objects) {
	t.Helper()
	secrets := objs.SecretsByName()
	for _, name := range []string{"serve", "flood"} {
		env, err := (Pod{Index: 0, IP: "192.0.2.1", Secrets: secrets}).Env(*containerOf(t, job, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if env["CROWD_ADMIN_TOKEN"] != "example-token-0123456789" {
			t.Errorf("%s: CROWD_ADMIN_TOKEN=%q, want the value given", name, env["CROWD_ADMIN_TOKEN"])
		}
	}
}

// checkMerge: the merge Job reads one record of every shard, in the folder each flood writes to.
func checkMerge(t *testing.T, job *batchv1.Job, objs *Objects, n int) {
	t.Helper()
	merge := objs.Job("crowd-merge")
	if merge == nil {
		t.Fatal("no merge Job")
	}
	flood := containerOf(t, job, "flood")
	args := Argv(merge.Spec.Template.Spec.Containers[0], nil, nil)
	var inputs []string
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			inputs = append(inputs, a)
		}
	}
	if len(inputs) != n {
		t.Errorf("merge of %d records, want one per shard (%d): %q", len(inputs), n, args)
	}
	for i := range n {
		env := map[string]string{CompletionIndexEnv: fmt.Sprint(i)}
		out := mountAt(Mounts(*flood, env), flagValue(Argv(*flood, env, nil), "--out"))
		if out == nil {
			t.Fatalf("flood's --out is on no volume")
		}
		want := "/data/" + out.SubPath
		if !strings.Contains(strings.Join(initContainer(merge, "collect").Command, " "), filepath.Dir(want)) {
			t.Errorf("shard %d writes to %s, which the merge's collect step does not read", i, want)
		}
	}
}

// checkNotes: the CoreDNS stub zone printed by NOTES forwards to every shard's Service.
func checkNotes(t *testing.T, notes string, objs *Objects) {
	t.Helper()
	for _, s := range objs.Services {
		if !strings.Contains(notes, " "+s.Spec.ClusterIP) {
			t.Errorf("NOTES' stub zone lacks %s (%s)", s.Spec.ClusterIP, s.Name)
		}
	}
}

// TestChartRefusesBadValues: values that cannot make a fleet fail the render with a message
// naming the value, not a broken manifest.
func TestChartRefusesBadValues(t *testing.T) {
	for _, row := range []struct {
		values, want string
	}{
		// No shard at all.
		{"shards: 0", "shards must be 1 to 64"},
		// More shards than origins: a shard would flood from nothing.
		{"shards: 8\nworld: {origins: 4}", "must not exceed world.origins"},
		// A range cut in 3 has no CIDR slices.
		{"shards: 3\nadvertise: 10.251.0.0/16", "power of two"},
		// A range that is no CIDR.
		{"shards: 2\nadvertise: 10.251.0.0", "no IPv4 CIDR"},
		// Both rates: which one the user meant is unknown.
		{"flood: {rate: 10, totalRate: 40}", "not both"},
		// A token the crowd would refuse at start: too short to resist guessing.
		{"adminToken: {value: short}", "at least 16 characters"},
		// The Services' addresses would leave their /24.
		{"shards: 16\nservices: {firstAddress: 10.96.53.250}", "leaves its /24"},
	} {
		t.Run(row.values, func(t *testing.T) {
			v, err := chartutil.ReadValues([]byte(row.values))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Render(chartDir, v.AsMap())
			if err == nil || !strings.Contains(err.Error(), row.want) {
				t.Errorf("render: %v, want an error with %q", err, row.want)
			}
		})
	}
}

// TestExampleIsFresh: deploy/helm/example-shards-4.yaml is `helm template crowd` of the chart
// with shards = 4 (and a fixed admin token); -update rewrites it.
func TestExampleIsFresh(t *testing.T) {
	r, _, _ := render(t, "shards: 4")
	got := "# helm template crowd deploy/helm/crowd --set shards=4 --set adminToken.value=example-token-0123456789\n" + r.Text()
	if *update {
		if err := os.WriteFile(examplePath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatalf("%v (go test -run TestExampleIsFresh -update writes it)", err)
	}
	if string(want) != got {
		t.Errorf("%s is stale: go test -run TestExampleIsFresh -update", examplePath)
	}
}
