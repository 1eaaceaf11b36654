//go:build !race

// TestBenchEndToEnd runs without the race detector (.ci/run's no-race
// pass): the detector slows the bench's RSA signing and its helper
// processes (this test binary re-executed) tenfold, and adds nothing here.
// What runs concurrently in the bench is the flood's pipeline and engine,
// signing, inbox and pasture, each tested under -race in its own package;
// the bench's own measurement loops join their workers with atomics and a
// WaitGroup only; and the test checks that every row has figures, not how
// the code it drives is synchronised.

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyArgs is the whole bench in a tiny configuration: every section
// runs, each measurement for a fraction of a second, on a 2-origin world
// (the weather section needs one origin in weather and one clear). A
// failed trial is not tried again, a search makes no bisection step once
// it has a pass and a failure, a pipeline rate is judged on two trials
// pooled, not three, and a with/without row runs one pair of paired
// trials, not four: the searches still walk down to a rate the tiny
// trials sustain, which is most of this test's time (161 s with the
// defaults, 91 s so, on CI's 2 cores, before the paired trials; with
// the later sections too, 128 s with one bisection step and 111 s
// without), and the retries and the bisection have their own table in
// TestSearch.
func tinyArgs(state, jsonPath string) []string {
	return []string{
		"-trial", "300ms", "-warmup", "100ms", "-steps", "0", "-bracket", "1",
		"-retries", "0", "-lateness-trials", "2", "-cost-pairs", "1",
		"-measure", "200ms", "-rounds", "1", "-conc", "4", "-pool", "16", "-start-rate", "500",
		"-origins", "2", "-actors", "2", "-scale", "3", "-large-origins", "40", "-large-pool", "4",
		"-cpu-rates", "20,40", "-cpu-seconds", "300ms",
		"-state", state, "-json", jsonPath,
	}
}

// TestBenchEndToEnd runs the whole bench (sink and flood helpers, the
// crowd binary, vegeta) in a tiny configuration and checks that the table
// and the JSON have every row with figures, not what the figures are:
// timing claims come from a real run, never from a test.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the crowd binary and runs every section: not in -short")
	}
	state := t.TempDir()
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), tinyArgs(state, jsonPath), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	table := stdout.String()
	if len(rep.Rows) != len(rowKeys()) {
		t.Errorf("%d rows in the JSON, want %d", len(rep.Rows), len(rowKeys()))
	}
	for i, key := range rowKeys() {
		if i >= len(rep.Rows) {
			break
		}
		row := rep.Rows[i]
		switch {
		case !withCgo && libcryptoRow(key):
			// A CGO_ENABLED=0 build has no libcrypto: the row says so.
			if !strings.Contains(row.Error, "cgo") {
				t.Errorf("row %s in a build without cgo: error %q, want one naming cgo", key, row.Error)
			}
		case row.Key != key:
			t.Errorf("row %d is %q, want %q", i, row.Key, key)
		case row.Error != "":
			t.Errorf("row %s: %s", key, row.Error)
		case row.Name == "" || row.Unit == "" || row.Target == "":
			t.Errorf("row %s lacks a name, unit or target: %+v", key, row)
		case !strings.Contains(table, "| "+cell(row.Name, key)+" |"):
			t.Errorf("the table has no row %q:\n%s", row.Name, table)
		}
	}
	// Header, separator, one line per row.
	if n := strings.Count(table, "\n|"); n != len(rowKeys())+1 {
		t.Errorf("the table has %d lines after its header, want %d:\n%s", n, len(rowKeys())+1, table)
	}
	for _, want := range []string{"Machine:", "Command: `go run ./bench ", "keys: "} {
		if !strings.Contains(table, want) {
			t.Errorf("the output lacks %q:\n%s", want, table)
		}
	}
	// The keys are made once: a second world of the same shape reuses them.
	if n := countKeys(worldDir(state, 2, 2)); n != 6 {
		t.Errorf("%d key files for 2 origins × 2 actors, want 6 (2 actors + the instance actor, each)", n)
	}
}

// libcryptoRow reports whether row key measures the libcrypto backend.
func libcryptoRow(key string) bool {
	if slices.Contains(clientKeys(rowPipelineCombined), key) {
		return true
	}
	switch key {
	case rowSignLibcrypto, rowPipelineLibcrypto, rowPipelineVsGo, rowPipelineOneCore, rowPipelineRealtime, rowInboxLibcrypto, rowInboxLibcryptoVsGo:
		return true
	}
	return false
}
