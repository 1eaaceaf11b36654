package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key.pem")
	for _, c := range []struct {
		data string
		perm os.FileMode
	}{
		{"first", 0o600},  // a new file
		{"second", 0o644}, // replaces it, with the new mode
	} {
		if err := Write(path, []byte(c.data), c.perm); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		st, _ := os.Stat(path)
		if string(got) != c.data || st.Mode().Perm() != c.perm {
			t.Errorf("after Write(%q, %v): %q %v", c.data, c.perm, got, st.Mode().Perm())
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestCreateNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ca.pem")
	var wins sync.WaitGroup
	won := make(chan string, 8)
	for i := range 8 {
		wins.Add(1)
		go func() {
			defer wins.Done()
			if err := Create(path, []byte{byte('a' + i)}, 0o644); err == nil {
				won <- string(rune('a' + i))
			} else if !errors.Is(err, fs.ErrExist) {
				t.Errorf("Create: %v, want fs.ErrExist", err)
			}
		}()
	}
	wins.Wait()
	close(won)
	var winners []string
	for w := range won {
		winners = append(winners, w)
	}
	got, _ := os.ReadFile(path)
	if len(winners) != 1 || string(got) != winners[0] {
		t.Errorf("of 8 concurrent Creates, %v won and the file holds %q", winners, got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestCreateNumberedTakesTheFirstFreeName(t *testing.T) {
	dir := t.TempDir()
	for _, want := range []string{
		"run.json",   // the name itself
		"run-2.json", // taken: the next number
		"run-3.json", // and the next
	} {
		path, err := CreateNumbered(dir, "run", ".json", []byte(want), 0o644)
		if err != nil || filepath.Base(path) != want {
			t.Fatalf("CreateNumbered = %s, %v; want %s", path, err, want)
		}
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("%s holds %q", path, got)
		}
	}
}

func TestErrorsNameTheProblem(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "f")
	for _, c := range []struct {
		name string
		err  error
	}{
		{"Write into a missing directory", Write(missing, nil, 0o600)},
		{"Create into a missing directory", Create(missing, nil, 0o600)},
	} {
		// Named as the file asked for, not the temporary one beside it.
		if !errors.Is(c.err, fs.ErrNotExist) || !strings.Contains(c.err.Error(), missing+":") || strings.Contains(c.err.Error(), ".tmp") {
			t.Errorf("%s: %v, want fs.ErrNotExist naming %s", c.name, c.err, missing)
		}
	}
	// A directory where the file goes: said as such, and left as it was
	// (a rename over it said "file exists").
	dir := t.TempDir()
	if err := Write(dir, []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), dir+": it is a directory") {
		t.Errorf("Write over a directory: %v, want it named as a directory", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("the directory after a refused Write: %v, %v", fi, err)
	}
}

func TestAppendWritesTheHeaderOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.md")
	for _, row := range []string{"| a |\n", "| b |\n"} {
		if err := Append(path, []byte("| h |\n|---|\n"), []byte(row), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != "| h |\n|---|\n| a |\n| b |\n" {
		t.Errorf("runs.md = %q", got)
	}
}
