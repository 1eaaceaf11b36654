package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmePrintsTheDrawing: the README's layout table ("may import", its last column) names,
// for every room of the drawing, exactly the rooms the drawing lets it import, so the page a
// newcomer reads and the table the arrows are checked against cannot drift apart.
func TestReadmePrintsTheDrawing(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	printed := layoutTable(t, string(readme))
	for _, r := range drawing() {
		got, ok := printed[r.name]
		switch {
		case slices.Contains(r.imports, everyRoom):
			if !ok || !strings.Contains(got, "any room") {
				t.Errorf("README layout row %s: %q, want \"any room\"", r.name, got)
			}
		case r.name == "internal" || r.name == "internal/dialguard/dialguardtest" || r.name == "flood/record/recordtest":
			// The leaves share one row per package in the README; test helpers may have none.
		case !ok:
			t.Errorf("README layout table has no row for %s (the drawing lets it import %v)", r.name, r.imports)
		default:
			if names := backticked(got); !sameSet(names, r.imports) {
				t.Errorf("README layout row %s may import %v; the drawing says %v", r.name, names, r.imports)
			}
		}
	}
}

// layoutTable reads the rows of the README's "### Layout" table: the room (first column) to its
// last column.
func layoutTable(t *testing.T, readme string) map[string]string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "### Layout\n")
	if !ok {
		t.Fatal("README.md has no ### Layout section")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, " |"), "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue
		}
		rows[strings.Trim(strings.TrimSpace(cells[0]), "`")] = cells[len(cells)-1]
	}
	return rows
}

var backtickedName = regexp.MustCompile("`([^`]+)`")

// backticked returns the names a cell quotes, up to its first ';' (what follows is a remark).
func backticked(cell string) []string {
	cell, _, _ = strings.Cut(cell, ";")
	var names []string
	for _, m := range backtickedName.FindAllStringSubmatch(cell, -1) {
		names = append(names, m[1])
	}
	return names
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
