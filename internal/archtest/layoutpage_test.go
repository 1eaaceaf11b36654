package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutPage is the contributors' page that prints the layout table.
const layoutPage = "docs/contributing.md"

// TestLayoutPagePrintsTheDrawing: the contributors' layout table ("may import", its last column)
// names, for every room of the drawing, exactly the rooms the drawing lets it import, so the
// page a contributor reads and the table the arrows are checked against cannot drift apart.
func TestLayoutPagePrintsTheDrawing(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(layoutPage)))
	if err != nil {
		t.Fatal(err)
	}
	printed := layoutTable(t, string(readme))
	for _, r := range drawing() {
		got, ok := printed[r.name]
		switch {
		case slices.Contains(r.imports, everyRoom):
			if !ok || !strings.Contains(got, "any room") {
				t.Errorf("%s layout row %s: %q, want \"any room\"", layoutPage, r.name, got)
			}
		case r.name == "internal" || r.name == "internal/dialguard/dialguardtest" || r.name == "flood/record/recordtest":
			// The leaves share one row per package in the table; test helpers may have none.
		case !ok:
			t.Errorf("%s: the layout table has no row for %s (the drawing lets it import %v)", layoutPage, r.name, r.imports)
		default:
			if names := backticked(got); !sameSet(names, r.imports) {
				t.Errorf("%s layout row %s may import %v; the drawing says %v", layoutPage, r.name, names, r.imports)
			}
		}
	}
}

// layoutTable reads the rows of the page's "## Layout" table: the room (first column) to its
// last column.
func layoutTable(t *testing.T, readme string) map[string]string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		t.Fatalf("%s has no ## Layout section", layoutPage)
	}
	section, _, _ = strings.Cut(section, "\n## ")
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
