package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// RecordFile is the file of one run's record in an out directory, written
// more than once: checkpoints while the run goes, each replacing the last,
// then the final record, which replaces the last checkpoint and adds the
// run's row to runs.md. The file is dir/Record.FileName() ("-2" … when
// another file took the name, which is never replaced), so whatever ends the run, killed with SIGKILL included, dir holds one record
// of it, readable with LoadRecord. Every write is atomic and durable: a
// temporary file in dir, fsync, rename over the old version, fsync of dir;
// a reader (or a crash at any moment) sees the previous version or the new
// one, never a torn file. A RecordFile is for one run and one goroutine at a
// time (RecorderOptions.Checkpoint runs on the Recorder's ticker, and the final write
// comes after Run returned).
type RecordFile struct {
	dir  string
	path string // "" until the first write took a name
}

// NewRecordFile returns the record file of a run that writes to dir
// (created at the first write). Nothing is written yet.
func NewRecordFile(dir string) *RecordFile { return &RecordFile{dir: dir} }

// Path is the record's file, or "" before the first write.
func (f *RecordFile) Path() string { return f.path }

// Checkpoint writes r as the run's record so far. The file says partial
// whatever r says (a checkpoint is never the whole run), with r's reason or
// ReasonCheckpoint; r itself is not modified. runs.md is not touched: a run
// gets its row when it ends (FinalWith), so a killed run has a record but no
// row.
func (f *RecordFile) Checkpoint(r *Record) error {
	c := *r
	c.Partial = true
	if c.PartialReason == "" {
		c.PartialReason = ReasonCheckpoint
	}
	_, err := f.write(&c)
	return err
}

// FinalWith writes doc, the run's record, replacing the last checkpoint,
// and appends r's row to dir/runs.md (writing the table header first when
// the file is new). doc is r itself, or a document that carries r with more
// sections (a `crowd run` record: the flood's fields and a "run" section);
// the whole is written once. It returns the record's path.
func (f *RecordFile) FinalWith(r *Record, doc any) (string, error) {
	path, err := f.writeDoc(r, doc)
	if err != nil {
		return path, err
	}
	return path, appendRunsMD(filepath.Join(f.dir, "runs.md"), r, filepath.Base(path))
}

// write puts r in the file: the first time under a new name (never
// replacing another file), later over the file itself.
func (f *RecordFile) write(r *Record) (string, error) { return f.writeDoc(r, r) }

// writeDoc is write of doc, named after r.
func (f *RecordFile) writeDoc(r *Record, doc any) (string, error) {
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	data = append(data, '\n')
	if f.path == "" {
		path, err := atomicfile.CreateNumbered(f.dir, strings.TrimSuffix(r.FileName(), ".json"), ".json", data, 0o644)
		if err != nil {
			return "", fmt.Errorf("record file: %w", err)
		}
		f.path = path
		return path, nil
	}
	return f.path, atomicfile.Write(f.path, data, 0o644)
}

// FileName is the record's file name in out/load/:
// <UTC start, 20060102-150405>-<label>.json (label sanitised to
// [A-Za-z0-9._-], "flood" when empty).
func (r *Record) FileName() string {
	return r.Start.UTC().Format("20060102-150405") + "-" + sanitizeLabel(r.Settings.Label) + ".json"
}

func sanitizeLabel(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			b[i] = '_'
		}
	}
	s = strings.Trim(string(b), ".")
	if s == "" {
		return "flood"
	}
	return s
}

// CheckOutDir makes sure records can be written to dir before a run
// starts: it creates dir if needed and writes and removes a probe file, so
// a directory that cannot take the record is found before the first send,
// not after the whole flood, when the record would be lost. undo removes
// the directories it created, each only while it is empty: a run refused
// or failed before it wrote anything leaves no --out behind that it never
// used. undo is never nil, and is called already when err is set.
func CheckOutDir(dir string) (undo func(), err error) {
	created := missingDirs(dir)
	undo = func() {
		for _, d := range created { // deepest first; a directory with anything in it stays, and so do its parents
			if os.Remove(d) != nil {
				return
			}
		}
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return undo, err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return undo, err
	}
	name := f.Name()
	err = f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return undo, err
}

// missingDirs lists dir and those of its parents that do not exist yet,
// deepest first: what os.MkdirAll(dir) would create.
func missingDirs(dir string) []string {
	var missing []string
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			return missing
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			return missing
		}
		d = parent
	}
}

func appendRunsMD(path string, r *Record, file string) error {
	return atomicfile.Append(path, []byte(MarkdownHeader()), []byte(r.MarkdownRow(file)), 0o644)
}
