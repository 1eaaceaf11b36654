package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The monitoring profile's files (pasture/compose.yaml, profile "monitoring"): Prometheus's
// config, Grafana's provisioning and the dashboard. CI checks them offline: no registry is
// reachable here, so the prom/prometheus and grafana images cannot be pulled and the profile is
// not brought up; its compose services are parsed and checked against these files instead.

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	UID           string           `json:"uid"`
	Title         string           `json:"title"`
	SchemaVersion int              `json:"schemaVersion"`
	Panels        []dashboardPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Datasource datasourceRef   `json:"datasource"`
			Query      json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboardPanel struct {
	ID         int           `json:"id"`
	Type       string        `json:"type"`
	Title      string        `json:"title"`
	Datasource datasourceRef `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string        `json:"refId"`
		Expr       string        `json:"expr"`
		Datasource datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // a collapsed row's
}

// loadDashboard reads deploy/grafana/dashboards/crowd.json, every field it has typed as Grafana
// types it (a string where a number belongs fails).
func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ModuleRoot(t), "deploy", "grafana", "dashboards", "crowd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("crowd.json: %v", err)
	}
	return d
}

// provisionedUID is the datasource uid Grafana's provisioning gives Prometheus.
func provisionedUID(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ModuleRoot(t), "deploy", "grafana", "provisioning", "datasources", "prometheus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+uid:\s*(\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the datasource provisioning names no uid")
	}
	return string(m[1])
}

// TestGrafanaDashboardIsValid lints the dashboard: typed as Grafana reads it, panels laid out on
// the 24-column grid without overlap, unique ids and refIds, every query on the provisioned
// Prometheus, every query an expression.
func TestGrafanaDashboardIsValid(t *testing.T) {
	d := loadDashboard(t)
	uid := provisionedUID(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q title %q schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
	}
	ids := map[int]bool{}
	var boxes []dashboardPanel
	queries := 0
	for _, p := range flattenPanels(d.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("%q: gridPos %+v is off the 24-column grid", p.Title, g)
		}
		for _, o := range boxes {
			h := o.GridPos
			if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
				t.Errorf("%q overlaps %q", p.Title, o.Title)
			}
		}
		boxes = append(boxes, p)
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != uid || len(p.Targets) == 0 {
			t.Errorf("%q: datasource %+v (want uid %s), %d queries", p.Title, p.Datasource, uid, len(p.Targets))
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if q.Expr == "" || q.RefID == "" || refs[q.RefID] || q.Datasource.UID != uid {
				t.Errorf("%q: query %+v: want an expression, a unique refId, datasource %s", p.Title, q, uid)
			}
			refs[q.RefID] = true
			queries++
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && v.Datasource.UID != uid {
			t.Errorf("variable %s: datasource %+v", v.Name, v.Datasource)
		}
	}
	if queries < 10 {
		t.Errorf("%d queries: the dashboard is nearly empty", queries)
	}
}

// TestGrafanaDashboardExpressionsParse: every query of the dashboard, its variables filled in as
// Grafana fills them ($run a regex of runs, $__rate_interval a duration), is an expression
// Prometheus accepts: they go into a rules file, one recording rule each, that `promtool check
// rules` must pass; a variable left unfilled fails here. The same check refuses a broken
// expression, so it is not one that passes whatever it is given.
func TestGrafanaDashboardExpressionsParse(t *testing.T) {
	RequireTools(t, "promtool")
	d := loadDashboard(t)
	fill := strings.NewReplacer("$__rate_interval", "1m", "$run", "live|bench")
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for _, p := range flattenPanels(d.Panels) {
		for _, q := range p.Targets {
			e := fill.Replace(q.Expr)
			if strings.Contains(e, "$") {
				t.Errorf("%q %s: a variable this test does not fill: %s", p.Title, q.RefID, q.Expr)
			}
			rules = append(rules, rule{Record: fmt.Sprintf("crowd_dashboard:panel_%d_%s", p.ID, q.RefID), Expr: e})
		}
	}
	if len(rules) < 10 {
		t.Fatalf("%d expressions in the dashboard", len(rules))
	}
	check := func(rules []rule) ([]byte, error) {
		// YAML is a superset of JSON: the rules file is written as JSON.
		b, err := json.Marshal(map[string]any{"groups": []any{map[string]any{"name": "crowd-dashboard", "rules": rules}}})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return exec.Command("promtool", "check", "rules", path).CombinedOutput()
	}
	if out, err := check(rules); err != nil {
		t.Errorf("promtool check rules on the dashboard's expressions: %v\n%s", err, out)
	}
	broken := append(slices.Clone(rules), rule{Record: "crowd_dashboard:broken", Expr: "sum(rate(crowd_flood_sent_total[1m])"})
	if out, err := check(broken); err == nil {
		t.Errorf("promtool check rules passed an unclosed parenthesis:\n%s", out)
	}
}

// flattenPanels lists panels with those of collapsed rows.
func flattenPanels(ps []dashboardPanel) []dashboardPanel {
	var out []dashboardPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flattenPanels(p.Panels)...)
	}
	return out
}

// dashboardMetrics are the metric names the dashboard's queries and variables name.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	d := loadDashboard(t)
	var exprs []string
	for _, p := range flattenPanels(d.Panels) {
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	for _, v := range d.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) == nil && q.Query != "" {
			exprs = append(exprs, q.Query)
		}
	}
	var names []string
	for _, e := range exprs {
		for _, n := range promQLMetrics(e) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// promQLMetrics returns the metric names a PromQL expression (or a label_values() variable
// query) selects: identifiers left once strings, label matchers, ranges and groupings are
// removed (and numbers), that are neither a function call nor a keyword.
func promQLMetrics(expr string) []string {
	for _, re := range []string{`"(?:[^"\\]|\\.)*"`, `\{[^}]*\}`, `\[[^\]]*\]`, `\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`,
		`\b[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?`} {
		expr = regexp.MustCompile(re).ReplaceAllString(expr, " ")
	}
	if m := regexp.MustCompile(`^\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`).FindStringSubmatch(expr); m != nil {
		return []string{m[1]}
	}
	keywords := map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
	var out []string
	for _, m := range regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`).FindAllString(expr, -1) {
		if strings.HasSuffix(m, "(") || keywords[m] {
			continue
		}
		out = append(out, m)
	}
	return out
}

// checkDashboardNames: every metric the dashboard names is in exposition (a scrape of the
// crowd serve's /metrics after a flood pushed to it), or is Prometheus's own per target.
func checkDashboardNames(t *testing.T, exposition string) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{"up": true, "scrape_samples_scraped": true} // Prometheus's own
	for name, mf := range mfs {
		exported[name] = true
		if mf.GetType().String() == "HISTOGRAM" {
			exported[name+"_bucket"], exported[name+"_count"], exported[name+"_sum"] = true, true, true
		}
	}
	names := dashboardMetrics(t)
	if len(names) < 15 {
		t.Fatalf("the dashboard names only %v", names)
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("the dashboard queries %s, which the crowd does not export", n)
		}
	}
}

// TestPromQLMetrics: what the name check reads out of a query (one row per shape the
// dashboard uses).
func TestPromQLMetrics(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		// A rate under an aggregation with a grouping and a matcher.
		{`sum by (label) (rate(crowd_flood_sent_total{label=~"$run"}[$__rate_interval]))`, "crowd_flood_sent_total"},
		// A quantile: le is a label, 0.99 a number.
		{`histogram_quantile(0.99, sum by (le, type) (rate(crowd_flood_latency_seconds_bucket{x="a}b"}[1m])))`, "crowd_flood_latency_seconds_bucket"},
		// Two metrics in arithmetic, a comparison and a keyword.
		{`go_memstats_heap_inuse_bytes / 1e9 > bool up`, "go_memstats_heap_inuse_bytes up"},
		// A variable's query.
		{`label_values(crowd_flood_sent_total, label)`, "crowd_flood_sent_total"},
	} {
		if got := strings.Join(promQLMetrics(c.expr), " "); got != c.want {
			t.Errorf("%s: %q, want %q", c.expr, got, c.want)
		}
	}
}

// TestPrometheusConfig: promtool (Debian's prometheus package) accepts the monitoring
// profile's Prometheus config.
func TestPrometheusConfig(t *testing.T) {
	RequireTools(t, "promtool")
	cfg := filepath.Join(ModuleRoot(t), "deploy", "prometheus", "prometheus.yml")
	if out, err := exec.Command("promtool", "check", "config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}

// composeFile is the part of the compose files (pasture/compose*.yaml) the checks here read.
type composeFile struct {
	Services map[string]struct {
		Profiles    []string          `json:"profiles"`
		Volumes     []string          `json:"volumes"`
		NetworkMode string            `json:"network_mode"`
		CapAdd      []string          `json:"cap_add"`
		Command     []string          `json:"command"`
		Environment map[string]string `json:"environment"`
		Networks    map[string]struct {
			IPv4 string `json:"ipv4_address"`
		} `json:"networks"`
	} `json:"services"`
}

// readCompose parses a compose file with python3's YAML parser, the one podman-compose itself
// uses.
func readCompose(t *testing.T, path string) composeFile {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys, json, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)", path).Output()
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	var c composeFile
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestComposeMonitoringProfile parses pasture/compose.yaml (with python3's YAML parser, which
// podman-compose itself uses) and checks the monitoring profile hangs together: Prometheus and
// Grafana are in it, every file they mount exists, Grafana's datasource is Prometheus's
// address, and Prometheus scrapes the crowd's admin API and the SUT at their addresses.
func TestComposeMonitoringProfile(t *testing.T) {
	RequireTools(t, "python3")
	dir := filepath.Join(ModuleRoot(t), "pasture")
	c := readCompose(t, filepath.Join(dir, "compose.yaml"))
	ip := func(svc string) string {
		for _, n := range c.Services[svc].Networks {
			return n.IPv4
		}
		return ""
	}
	for _, svc := range []string{"prometheus", "grafana"} {
		s, ok := c.Services[svc]
		if !ok || !slices.Contains(s.Profiles, "monitoring") {
			t.Fatalf("service %s missing or not in the monitoring profile", svc)
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if _, err := os.Stat(filepath.Join(dir, src)); err != nil {
				t.Errorf("%s mounts %s: %v", svc, src, err)
			}
		}
	}
	root := ModuleRoot(t)
	read := func(p ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{root}, p...)...))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ds := read("deploy", "grafana", "provisioning", "datasources", "prometheus.yaml")
	if want := "url: http://" + net.JoinHostPort(ip("prometheus"), "9090"); !strings.Contains(ds, want) {
		t.Errorf("Grafana's datasource lacks %q", want)
	}
	_, adminPort, _ := net.SplitHostPort(c.Services["crowd"].Environment["CROWD_ADMIN"])
	prom := read("deploy", "prometheus", "prometheus.yml")
	for _, target := range []string{net.JoinHostPort(ip("crowd"), adminPort), net.JoinHostPort(ip("gotosocial"), "9464")} {
		if !strings.Contains(prom, `"`+target+`"`) {
			t.Errorf("prometheus.yml does not scrape %s", target)
		}
	}
}
