package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
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
var referenceDirs = struct{ markdown, man string }{
	markdown: filepath.Join("..", "..", "docs", "cli"),
	man:      filepath.Join("..", "..", "docs", "man"),
}

// manDate is the date every man page's header carries: a fixed one, so that a page changes
// only when its command does.
var manDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// writeReference writes the Markdown reference into markdownDir and the man pages into
// manDir, one file per command, from the tree execute runs (built, never run).
func writeReference(markdownDir, manDir string) error {
	root := newRoot()
	root.DisableAutoGenTag = true // no generation date in the files
	for _, dir := range []string{markdownDir, manDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := doc.GenMarkdownTree(root, markdownDir); err != nil {
		return err
	}
	// The man pages go through Markdown to roff: their texts escaped, or a < eats what follows.
	escapeManTree(root)
	header := &doc.GenManHeader{Title: "CROWD", Section: "1", Date: &manDate, Source: "crowd", Manual: "crowd manual"}
	return doc.GenManTree(root, header, manDir)
}

// TestCLIReferenceIsFresh: docs/cli (Markdown) and docs/man (man pages) are what the command
// tree generates today, file for file, so the reference never describes a flag that changed.
func TestCLIReferenceIsFresh(t *testing.T) {
	if *updateReference {
		for _, dir := range []string{referenceDirs.markdown, referenceDirs.man} {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeReference(referenceDirs.markdown, referenceDirs.man); err != nil {
			t.Fatal(err)
		}
	}
	fresh := t.TempDir()
	if err := writeReference(filepath.Join(fresh, "cli"), filepath.Join(fresh, "man")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []struct{ fresh, committed string }{
		{filepath.Join(fresh, "cli"), referenceDirs.markdown},
		{filepath.Join(fresh, "man"), referenceDirs.man},
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
