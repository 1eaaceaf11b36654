package actors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServedWorldRecord: the world a crowd serve records is read back as it
// was, says itself as the flags that give it, and a record that is missing,
// unreadable or not a world is told apart.
func TestServedWorldRecord(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := LoadServed(dir); ok || err != nil {
		t.Fatalf("no record: %v, %v; want none and no error", ok, err)
	}
	cfg := Config{Origins: 3, Actors: 5, Domain: "a%d.example", StateDir: dir, Shard: Shard{I: 1, N: 2}, KeyPool: 4}
	if err := RecordServed(cfg); err != nil {
		t.Fatal(err)
	}
	got, ok, err := LoadServed(dir)
	if !ok || err != nil || got != ServedOf(cfg) {
		t.Fatalf("read back %+v, %v, %v; want %+v", got, ok, err, ServedOf(cfg))
	}
	if f := got.Flags(); f != "--origins 3 --actors 5 --domain a%d.example --shard 1/2 --key-pool 4" {
		t.Errorf("Flags() = %q", f)
	}
	applied, err := got.Apply(DefaultConfig())
	if err != nil || applied.Origins != 3 || applied.Shard != cfg.Shard || applied.StateDir != DefaultConfig().StateDir {
		t.Errorf("Apply: %+v, %v; want the shape taken and the state kept", applied, err)
	}
	for _, tc := range []struct {
		name, body, say string
	}{
		// Not JSON: says what to do about it.
		{"not JSON", "origins=3", "delete it"},
		// JSON, but no world: the setting is named as its flag.
		{"no world", `{"origins":0,"actors":5,"domain":"a%d.example"}`, "--origins"},
		// A shard that cannot be read.
		{"bad shard", `{"origins":3,"actors":5,"domain":"a%d.example","shard":"x"}`, "shard"},
	} {
		os.WriteFile(filepath.Join(dir, "world.json"), []byte(tc.body), 0o644)
		if _, ok, err := LoadServed(dir); ok || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.say) {
			t.Errorf("%s: %v, %v; want an error saying %q", tc.name, ok, err, tc.say)
		}
	}
}
