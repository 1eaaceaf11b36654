package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func decode(_ int, line []byte) error {
	var v map[string]any
	return json.Unmarshal(line, &v)
}

func TestReplay(t *testing.T) {
	for _, c := range []struct {
		name     string
		content  string
		applied  int
		tornLine int    // 0: nothing torn
		after    string // the file after Replay ("" with damaged: unchanged)
		damaged  string // the error names this path suffix:line, "" for none
	}{
		// A clean journal is read whole and left alone.
		{"clean", "{\"a\":1}\n{\"a\":2}\n", 2, 0, "{\"a\":1}\n{\"a\":2}\n", ""},
		// A crash mid-append: the unterminated tail is dropped, the rest kept.
		{"torn tail", "{\"a\":1}\n{\"a\":", 1, 2, "{\"a\":1}\n", ""},
		// Even a tail that parses is torn without its newline: the writer
		// writes a line and its newline at once.
		{"unterminated but whole", "{\"a\":1}\n{\"a\":2}", 1, 2, "{\"a\":1}\n", ""},
		// A bad line with lines after it is damage, not a crash: refused.
		{"damaged middle", "{\"a\":1}\n{\"a\":1}\n{oops\n{\"a\":3}\n", 2, 0, "", "j.jsonl:3"},
		// A bad last line that has its newline was written whole: refused too.
		{"damaged last complete line", "{\"a\":1}\nnot json\n", 1, 0, "", "j.jsonl:2"},
		// Damage wins over a torn tail after it: nothing is cut.
		{"damaged then torn", "x\n{\"a\":", 0, 0, "", "j.jsonl:1"},
		// An empty journal has nothing to replay.
		{"empty", "", 0, 0, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.content)
			applied := 0
			torn, err := Replay(path, func(n int, line []byte) error {
				if err := decode(n, line); err != nil {
					return err
				}
				applied++
				return nil
			})
			got, _ := os.ReadFile(path)
			if c.damaged != "" {
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.damaged) || !strings.Contains(err.Error(), "sed -i") {
					t.Fatalf("err = %v, want ErrDamaged naming %s and the repair", err, c.damaged)
				}
				if string(got) != c.content {
					t.Errorf("a damaged journal was changed: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if applied != c.applied {
				t.Errorf("applied %d lines, want %d", applied, c.applied)
			}
			if (torn != nil) != (c.tornLine != 0) || torn != nil && torn.Line != c.tornLine {
				t.Errorf("torn = %+v, want line %d", torn, c.tornLine)
			}
			if string(got) != c.after {
				t.Errorf("file after = %q, want %q", got, c.after)
			}
		})
	}
}

func TestReplayMissingFile(t *testing.T) {
	torn, err := Replay(filepath.Join(t.TempDir(), "none"), decode)
	if torn != nil || err != nil {
		t.Fatalf("missing file: %v %v", torn, err)
	}
}

func TestDropTornTail(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // a tail longer than one read block
	for _, c := range []struct {
		name, content, after string
		line                 int // torn line number, 0 for none
	}{
		// Nothing to drop after a final newline.
		{"clean", "a\nb\n", "a\nb\n", 0},
		// The unterminated tail goes, numbered after the lines before it.
		{"torn", "a\nb\nc", "a\nb\n", 3},
		// A torn tail longer than a block is found all the same.
		{"long torn", "a\n" + long, "a\n", 2},
		// A file with no newline at all is all tail.
		{"only tail", "abc", "", 1},
		{"empty", "", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.content)
			torn, err := DropTornTail(path)
			if err != nil {
				t.Fatal(err)
			}
			if (torn != nil) != (c.line != 0) || torn != nil && torn.Line != c.line {
				t.Errorf("torn = %+v, want line %d", torn, c.line)
			}
			if got, _ := os.ReadFile(path); string(got) != c.after {
				t.Errorf("after = %.40q, want %.40q", got, c.after)
			}
		})
	}
}

// forwardLines is what Backward must give, in reverse: the complete lines
// and their offsets.
func forwardLines(data []byte) (offs []int64, lines []string) {
	var off int64
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return offs, lines
		}
		offs, lines = append(offs, off), append(lines, string(data[:i]))
		off += int64(i) + 1
		data = data[i+1:]
	}
}

func checkBackward(t *testing.T, content string) {
	path := writeFile(t, content)
	var offs []int64
	var lines []string
	if err := Backward(path, func(off int64, line []byte) bool {
		offs, lines = append(offs, off), append(lines, string(line))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(offs)
	slices.Reverse(lines)
	wantOffs, wantLines := forwardLines([]byte(content))
	if !slices.Equal(offs, wantOffs) || !slices.Equal(lines, wantLines) {
		t.Fatalf("Backward of %.60q: %v %.60q, want %v %.60q", content, offs, lines, wantOffs, wantLines)
	}
}

func TestBackward(t *testing.T) {
	big := strings.Repeat("{\"seq\":1234567}\n", 20000) // many blocks, lines across block edges
	for _, c := range []struct{ name, content string }{
		{"empty", ""},
		{"one line", "a\n"},
		{"empty lines", "\n\na\n\n"},
		{"torn tail skipped", "a\nb\nhalf"},
		{"only a tail", "half"},
		{"many blocks", big},
		{"a line longer than a block", "a\n" + strings.Repeat("y", 150<<10) + "\nb\n"},
	} {
		t.Run(c.name, func(t *testing.T) { checkBackward(t, c.content) })
	}
}

func TestBackwardStops(t *testing.T) {
	path := writeFile(t, "a\nb\nc\n")
	var got []string
	Backward(path, func(_ int64, line []byte) bool {
		got = append(got, string(line))
		return len(got) < 2
	})
	if !slices.Equal(got, []string{"c", "b"}) {
		t.Errorf("got %q, want the last two lines, newest first", got)
	}
}

// FuzzBackward keeps Backward equal to reading the file forward.
func FuzzBackward(f *testing.F) {
	f.Add("a\nb\nc")
	f.Add("\n\n\n")
	f.Add(strings.Repeat("z", 70<<10) + "\n1\n")
	f.Fuzz(func(t *testing.T, content string) { checkBackward(t, content) })
}

// FuzzReplay: whatever the file holds, Replay either applies every
// complete line and leaves exactly them, or refuses and changes nothing.
func FuzzReplay(f *testing.F) {
	f.Add("{\"a\":1}\n{\"a\":")
	f.Add("{}\nx\n{}\n")
	f.Fuzz(func(t *testing.T, content string) {
		path := writeFile(t, content)
		_, err := Replay(path, decode)
		got, _ := os.ReadFile(path)
		if err != nil {
			if string(got) != content {
				t.Fatalf("refused but changed the file: %q → %q", content, got)
			}
			return
		}
		want := content[:strings.LastIndexByte(content, '\n')+1]
		if string(got) != want {
			t.Fatalf("after Replay %q, want %q", got, want)
		}
	})
}
