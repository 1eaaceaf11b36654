package signing

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDumpRequest checks DumpRequest against a golden file (-update rewrites
// it). The request is signed with a fixed key and clock, and RSA PKCS#1 v1.5 is
// deterministic, so the dump is byte-for-byte stable.
func TestDumpRequest(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	req, _ := http.NewRequest(http.MethodPost, "https://sut.test/users/bob/inbox", nil)
	if err := NewSigner(SignerOptions{Now: func() time.Time { return now }}).SignPost(req, testBody, keyA, k.rsaA); err != nil {
		t.Fatal(err)
	}
	got, err := DumpRequest(req, testBody)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "dump-post.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(want) {
		t.Errorf("dump differs from %s (run with -update if intended):\n%s", golden, got)
	}

	// The shape other tools rely on.
	var d struct {
		Method  string            `json:"method"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	if err := json.Unmarshal(got, &d); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"host", "date", "digest", "content-type", "signature", "user-agent"} {
		if d.Headers[h] == "" {
			t.Errorf("header %q missing", h)
		}
	}
	if d.Method != "POST" || d.URL != "https://sut.test/users/bob/inbox" || d.Body != string(testBody) {
		t.Errorf("dump = %+v", d)
	}

	// A server-side request: URL made absolute from Host, host header present.
	sreq := overTheWire(t, req)
	out, err := DumpRequest(sreq, testBody)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatal(err)
	}
	if d.URL != "http://sut.test/users/bob/inbox" || d.Headers["host"] != "sut.test" {
		t.Errorf("server-side dump: url %q host %q", d.URL, d.Headers["host"])
	}
}
