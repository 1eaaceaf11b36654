package results_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/record/results"
)

// runLine begins a results file (SCHEMA.md, "Results").
const runLine = `{"line":"run","schema":"crowd.flood.results","version":1,"run":0,"start":"2026-12-02T17:00:00Z","settings":{"label":"f"},"rate_hz":10,"duration_us":2000000}` + "\n"

// TestCompressionOf: a results file's name picks its compression, its
// ending matched in any case.
func TestCompressionOf(t *testing.T) {
	for _, c := range []struct {
		name string
		want results.Compression
	}{
		{"sends.ndjson", results.Plain},     // plain NDJSON
		{"sends.ndjson.gz", results.Gzip},   // gzip
		{"sends.ndjson.zst", results.Zstd},  // zstd
		{"Z.NDJSON.GZ", results.Gzip},       // capitals: gzip all the same
		{"run.Zst", results.Zstd},           // mixed case
		{"sends.gzip", results.Plain},       // not the ending gzip's files take
		{"", results.Plain},                 // stdout
		{"archive.gz/sends", results.Plain}, // the ending of a folder
	} {
		if got := results.CompressionOf(c.name); got != c.want {
			t.Errorf("CompressionOf(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// compressed is data as a gzip or a zstd stream (Plain: as it is).
func compressed(t *testing.T, c results.Compression, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser = nopWriteCloser{&b}
	switch c {
	case results.Gzip:
		w = gzip.NewWriter(&b)
	case results.Zstd:
		zw, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	}
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// noisyLines are n JSON lines that compress little, so that a compressed
// stream of them is longer than a sniffing buffer.
func noisyLines(n int) string {
	var b strings.Builder
	x := uint64(1)
	for i := range n {
		x = x*6364136223846793005 + 1442695040888963407 // any sequence that looks random to a compressor
		fmt.Fprintf(&b, `{"line":"send","seq":%d,"noise":"%x"}`+"\n", i, x)
	}
	return b.String()
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// TestResultsKnownByContent: Open decompresses a results file by its
// magic number, whatever its name (stdin included), and Sniff tells a
// results file from a record and from anything else by its content.
func TestResultsKnownByContent(t *testing.T) {
	dir := t.TempDir()
	record := "{\n  \"schema\": \"crowd.flood.record\",\n  \"version\": 2\n}\n"
	for _, c := range []struct {
		name       string
		file       string // its name
		comp       results.Compression
		data       string
		compressed bool // what Sniff says
		results    bool
	}{
		// A results file under a .json name (crowd flood --results x.json).
		{"plain under .json", "sends.json", results.Plain, runLine, false, true},
		// gzip under a name that says nothing of it.
		{"gzip under .ndjson", "sends.ndjson", results.Gzip, runLine, true, true},
		// zstd under capitals.
		{"zstd under .JSON", "SENDS.JSON", results.Zstd, runLine, true, true},
		// A gzip stream longer than a stream's sniffing buffer (its lines
		// hardly compress): its start alone says it holds results.
		{"gzip past the buffer", "long.ndjson.gz", results.Gzip, runLine + noisyLines(20000), true, true},
		// A plain file under a compressed name is read as it is.
		{"plain under .gz", "sends.ndjson.gz", results.Plain, runLine, false, true},
		// Blank lines before the run line.
		{"blank lines first", "blank.ndjson", results.Plain, "\n\n" + runLine, false, true},
		// A run record, indented as crowd flood writes it.
		{"a record", "run.json", results.Plain, record, false, false},
		// A record compressed: compressed, and no results.
		{"a record gzipped", "run.json.gz", results.Gzip, record, true, false},
		// JSON lines of something else.
		{"notes", "notes.jsonl", results.Plain, `{"line":"note"}` + "\n", false, false},
		// An empty file.
		{"empty", "empty.json", results.Plain, "", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := compressed(t, c.comp, c.data)
			path := filepath.Join(dir, c.file)
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			comp, res, err := results.Sniff(path)
			if err != nil || comp != c.compressed || res != c.results {
				t.Errorf("Sniff: compressed %v, results %v, %v; want %v, %v", comp, res, err, c.compressed, c.results)
			}
			// A stream (stdin, a pipe) says the same, by peeking.
			if comp, res := results.SniffReader(bufio.NewReaderSize(bytes.NewReader(raw), 64<<10)); comp != c.compressed || res != c.results {
				t.Errorf("SniffReader: compressed %v, results %v; want %v, %v", comp, res, c.compressed, c.results)
			}
			for _, from := range []string{path, "-"} {
				r, err := results.Open(from, bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("Open(%s): %v", from, err)
				}
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil || string(got) != c.data {
					t.Errorf("Open(%s) reads %q, %v; want %q", from, got, err, c.data)
				}
			}
		})
	}
	if _, _, err := results.Sniff(filepath.Join(dir, "nope")); err == nil {
		t.Error("Sniff of a missing file: no error")
	}
}

// TestCreateCompressesByNameInAnyCase: --results Z.NDJSON.GZ writes gzip.
func TestCreateCompressesByNameInAnyCase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "Z.NDJSON.GZ")
	w, err := results.Create(path, nil, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Run(settings()).Begin(record.Schedule{Start: time.Now(), Rate: 10, Duration: time.Second}) // a line: a run that writes none leaves no file
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		t.Errorf("%s starts %q, want gzip's magic", path, raw[:min(len(raw), 16)])
	}
	if strings.Contains(string(raw), `"line"`) {
		t.Errorf("%s holds plain lines", path)
	}
}
