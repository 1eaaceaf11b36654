package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The CLI reference is generated from the command tree by cobra's generator, imported here
// only, so the binary does not carry it. The committed files are what `-update` writes.
var updateReference = flag.Bool("update", false, "rewrite docs/cli and docs/man from the command tree")

// referenceDirs are the committed reference's folders, from this package's directory.
func referenceDirs() (markdown, man string) {
	return filepath.Join("..", "..", "docs", "cli"), filepath.Join("..", "..", "docs", "man")
}

// manDate is the date every man page's header carries: a fixed one, so that a page changes
// only when its command does.
func manDate() *time.Time {
	d := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
	return &d
}

// writeReference writes the Markdown reference into markdownDir and the man pages into
// manDir, one file per command, from the tree execute runs (built, never run).
func writeReference(markdownDir, manDir string) error {
	for _, dir := range []string{markdownDir, manDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	// Each from a tree of its own, its texts escaped for the Markdown it becomes: a < would
	// open an HTML tag (GitHub hides 'CROWD_<FLAG>'s <FLAG>), a * or _ emphasis.
	root := newRoot()
	root.DisableAutoGenTag = true // no generation date in the files
	escapeMarkdownTree(root)
	if err := doc.GenMarkdownTree(root, markdownDir); err != nil {
		return err
	}
	// The man pages go through Markdown to roff, the flags' usages too.
	root = newRoot()
	root.DisableAutoGenTag = true
	escapeManTree(root)
	header := &doc.GenManHeader{Title: "CROWD", Section: "1", Date: manDate(), Source: "crowd", Manual: "crowd manual"}
	return doc.GenManTree(root, header, manDir)
}

// escapeMarkdownTree escapes, for the Markdown reference, the texts cobra writes there as
// Markdown: every command's Short and Long (its flags and examples go in code blocks, as
// they are). root is a tree built for the reference alone: its help texts are changed.
func escapeMarkdownTree(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Short, c.Long = escapeManMarkdown(c.Short), escapeManMarkdown(c.Long)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestCLIReferenceIsFresh: docs/cli (Markdown) and docs/man (man pages) are what the command
// tree generates today, file for file, so the reference never describes a flag that changed.
func TestCLIReferenceIsFresh(t *testing.T) {
	markdownDir, manDir := referenceDirs()
	if *updateReference {
		for _, dir := range []string{markdownDir, manDir} {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeReference(markdownDir, manDir); err != nil {
			t.Fatal(err)
		}
	}
	fresh := t.TempDir()
	if err := writeReference(filepath.Join(fresh, "cli"), filepath.Join(fresh, "man")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []struct{ fresh, committed string }{
		{filepath.Join(fresh, "cli"), markdownDir},
		{filepath.Join(fresh, "man"), manDir},
	} {
		for _, stale := range staleFiles(t, dir.fresh, dir.committed) {
			t.Errorf("%s: %s; refresh the reference: go test ./cmd/crowd -run TestCLIReference -update",
				filepath.ToSlash(filepath.Join(strings.TrimPrefix(dir.committed, filepath.Join("..", "..")+string(filepath.Separator)), stale.name)), stale.why)
		}
	}
}

// staleFile is a committed file of the reference that differs from the generated one.
type staleFile struct{ name, why string }

// staleFiles compares the files of the generated folder with the committed one's.
func staleFiles(t *testing.T, fresh, committed string) []staleFile {
	t.Helper()
	want, got := readDir(t, fresh), readDir(t, committed)
	var stale []staleFile
	for _, name := range sortedKeys(want) {
		switch body, ok := got[name]; {
		case !ok:
			stale = append(stale, staleFile{name, "missing (a command added)"})
		case !bytes.Equal(body, want[name]):
			stale = append(stale, staleFile{name, "differs from what " + commandOf(name) + " generates"})
		}
	}
	for _, name := range sortedKeys(got) {
		if _, ok := want[name]; !ok {
			stale = append(stale, staleFile{name, "no command generates it (a command removed or renamed)"})
		}
	}
	return stale
}

// commandOf names the command a reference file documents: crowd_weather_set.md → "crowd weather set".
func commandOf(file string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(file, ".md"), ".1")
	return "`" + strings.ReplaceAll(strings.ReplaceAll(base, "_", " "), "-", " ") + "`"
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = body
	}
	return files
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestCLIReferenceCoversEveryCommand: the generated reference has a Markdown page and a man
// page for every command of the tree, hidden and help commands aside, so that a command the
// generator skipped cannot pass the freshness test unnoticed.
func TestCLIReferenceCoversEveryCommand(t *testing.T) {
	eachDocumentedCommand(t, func(dir string, c *cobra.Command) {
		base := strings.ReplaceAll(c.CommandPath(), " ", "_")
		for _, f := range []string{filepath.Join(dir, "cli", base+".md"), filepath.Join(dir, "man", strings.ReplaceAll(base, "_", "-")+".1")} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("%s: no reference page (%v)", c.CommandPath(), err)
			}
		}
	})
}

// TestMarkdownReferenceSaysTheHelp: every command's Markdown page, read as a Markdown renderer
// reads it (an HTML tag hidden, a * taken for emphasis, a backslash before a markup character
// that character), holds its help text whole: 'CROWD_<FLAG>' keeps its <FLAG>, GitHub hiding
// it as a tag otherwise.
func TestMarkdownReferenceSaysTheHelp(t *testing.T) {
	tag := regexp.MustCompile(`(^|[^\\])<[A-Za-z/][^>]*>`)
	emphasis := regexp.MustCompile(`(^|[^\\])\*`)
	unescape := regexp.MustCompile(`\\([\\<&*_\[])`)
	eachDocumentedCommand(t, func(dir string, c *cobra.Command) {
		page, err := os.ReadFile(filepath.Join(dir, "cli", strings.ReplaceAll(c.CommandPath(), " ", "_")+".md"))
		if err != nil {
			t.Fatal(err)
		}
		// The running text: the flags and examples are fenced code, taken as they are.
		var text []string
		for i, part := range strings.Split(string(page), "```") {
			if i%2 == 0 {
				part = emphasis.ReplaceAllString(tag.ReplaceAllString(part, "$1"), "$1")
				part = unescape.ReplaceAllString(part, "$1")
			}
			text = append(text, part)
		}
		read := oneSpaced(strings.Join(text, "```"))
		for _, text := range []string{c.Short, c.Long} {
			if !strings.Contains(read, oneSpaced(text)) {
				t.Errorf("%s: its Markdown page does not say its help text %q", c.CommandPath(), firstLine(text))
			}
		}
	})
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// eachDocumentedCommand writes the reference into a temporary folder (dir/cli, dir/man)
// and calls check with it for every command of a fresh tree the reference documents: hidden
// and help commands aside.
func eachDocumentedCommand(t *testing.T, check func(dir string, c *cobra.Command)) {
	t.Helper()
	dir := t.TempDir()
	if err := writeReference(filepath.Join(dir, "cli"), filepath.Join(dir, "man")); err != nil {
		t.Fatal(err)
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		check(dir, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
}
