package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRepoLinksResolve: every relative link and anchor of the README and of the pages under
// docs/ and deploy/ leads to a file that exists and, for an anchor, to a heading of it.
func TestRepoLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := Pages(root, "docs", "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pages, "docs/README.md") {
		t.Fatalf("no docs/README.md among %v: the walk did not reach docs/", pages)
	}
	problems, err := Check(root, pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Two commands", "two-commands"},                                                                    // spaces become hyphens, case folds
		{"A whole load run: `crowd run`", "a-whole-load-run-crowd-run"},                                     // punctuation and backticks drop, code keeps its text
		{"`slow:DELAY:DOC_SHARE`", "slowdelaydoc_share"},                                                    // underscores stay
		{"`tls-expired` and `tls-wrong-name`", "tls-expired-and-tls-wrong-name"},                            // hyphens stay
		{"Hostile traffic: does the SUT verify?", "hostile-traffic-does-the-sut-verify"},                    // a question mark drops
		{"Ten thousand origins, 10 000 actors", "ten-thousand-origins-10-000-actors"},                       // digits stay, each space counts
		{"See [the schema](flood/record/SCHEMA.md)", "see-the-schema"},                                      // a link keeps its label only
		{"Écrit à la main", "écrit-à-la-main"},                                                              // letters beyond ASCII stay
		{"Several crowds as one, reports and comparisons", "several-crowds-as-one-reports-and-comparisons"}, // a comma drops
	} {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchors(t *testing.T) {
	page := strings.Join([]string{
		"# Title",
		"## Usage",
		"```sh",
		"# not a heading: a shell comment",
		"```",
		"## Usage",
		"### Closed ###",
		`<a name="kept"></a>`,
		"#NoSpace is not a heading",
	}, "\n")
	got := Anchors(page)
	for _, tc := range []struct {
		anchor string
		want   bool
	}{
		{"title", true},                          // a level-1 heading
		{"usage", true},                          // the first of two equal headings
		{"usage-1", true},                        // the second is numbered
		{"not-a-heading-a-shell-comment", false}, // lines in a fence are code
		{"closed", true},                         // closing hashes are not text
		{"kept", true},                           // an HTML anchor
		{"nospace-is-not-a-heading", false},      // a hash with no space after is text
		{"usage-2", false},                       // no third Usage
	} {
		if got[tc.anchor] != tc.want {
			t.Errorf("anchor %q: %v, want %v (anchors %v)", tc.anchor, got[tc.anchor], tc.want, got)
		}
	}
}

func TestLinks(t *testing.T) {
	page := strings.Join([]string{
		"See [flooding](docs/flooding.md#ladder) and [the site](https://example.test/x).", // 1
		"`[in code](nowhere.md)` is code; ![a plot](img/plot.png)",                        // 2
		"```",
		"[in a fence](nowhere.md)",
		"```",
		"[here](#usage) [mail](mailto:a@b.test) [other host](//example.test/) [dir](deploy/)", // 6
		"a label [wrapped over",                 // 7
		"two lines](docs/weather.md) ends here", // 8
	}, "\n")
	var got []string
	for _, l := range Links(page) {
		got = append(got, l.Target+"@"+string(rune('0'+l.Line)))
	}
	want := []string{
		"docs/flooding.md#ladder@1", // a page and its anchor
		"img/plot.png@2",            // an image is a link too; the code span before it is not
		"#usage@6",                  // an anchor of the page itself
		"deploy/@6",                 // a directory
		"docs/weather.md@7",         // a label wrapped over lines: the line it starts on
	}
	if !slices.Equal(got, want) {
		t.Errorf("Links = %v, want %v", got, want)
	}
}

// TestCheck runs the check over a small tree of real files, one broken link of each kind.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Crowd\n[ok](docs/a.md#part-one) [gone](docs/none.md) [later](docs/later.md)\n")
	write("docs/a.md", "# A\n## Part one\n[up](../README.md#crowd) [bad anchor](../README.md#nope) [self](#a)\n"+
		"[out](../../elsewhere.md) [into code](../main.go#L3) [dir](sub/)\n")
	write("docs/sub/b.md", "[back](../a.md#part-one)\n")
	write("main.go", "package main\n")

	pages, err := Pages(root, "docs", "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "docs/a.md", "docs/sub/b.md"}; !slices.Equal(pages, want) {
		t.Fatalf("Pages = %v, want %v (deploy/ is absent and skipped)", pages, want)
	}
	problems, err := Check(root, pages)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.File+" "+p.Link)
	}
	want := []string{
		"README.md docs/none.md",       // no such file
		"README.md docs/later.md",      // absent
		"docs/a.md ../README.md#nope",  // the file exists, the heading does not
		"docs/a.md ../../elsewhere.md", // outside the repository
		"docs/a.md ../main.go#L3",      // an anchor into a file that is not Markdown
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems = %v\nwant %v", problems, want)
	}
}

// TestCheckUnreadablePage: a page that cannot be read is an error, not a silent pass.
func TestCheckUnreadablePage(t *testing.T) {
	if _, err := Check(t.TempDir(), []string{"README.md"}); err == nil {
		t.Error("Check of a missing README.md: no error")
	}
}
