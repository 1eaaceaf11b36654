package inbox

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// describing is a Registerer that keeps the name of every series family
// registered on it.
type describing struct{ names []string }

func (d *describing) Register(c prometheus.Collector) error {
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names = append(d.names, m[1])
		}
	}
	return nil
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		d.Register(c)
	}
}

func (d *describing) Unregister(prometheus.Collector) bool { return false }

// TestMetricsAreTheDocumented: the inbox registers every series
// METRICS.md lists for crowd serve (but the HTTP ones, the pasture's), and
// none it does not list: an alert on a documented series must find it.
func TestMetricsAreTheDocumented(t *testing.T) {
	doc, err := os.ReadFile("../METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, serve, ok := strings.Cut(string(doc), "## `crowd serve`")
	if !ok {
		t.Fatal("METRICS.md has no crowd serve section")
	}
	serve, _, _ = strings.Cut(serve, "\n## ")
	var want []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(crowd_[a-z_]+)`").FindAllStringSubmatch(serve, -1) {
		if !strings.HasPrefix(m[1], "crowd_http_") {
			want = append(want, m[1])
		}
	}
	var reg describing
	zero := func() float64 { return 0 }
	if _, err := newMetrics(&reg, zero, zero); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(reg.names)
	if !slices.Equal(reg.names, want) {
		t.Errorf("the inbox registers %v; METRICS.md lists %v", reg.names, want)
	}
}
