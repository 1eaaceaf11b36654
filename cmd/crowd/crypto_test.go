package main

import (
	"strings"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestVersionNamesTheSigningBackend: `crowd version` says which backend
// signs, as --crypto or CROWD_CRYPTO choose it; a backend this build lacks
// is a usage error naming the flag.
func TestVersionNamesTheSigningBackend(t *testing.T) {
	auto := "go (crypto/rsa)"
	if withCgo {
		auto = "libcrypto (OpenSSL 3."
	}
	libcryptoCode, libcryptoOut := 0, "libcrypto (OpenSSL 3."
	if !withCgo {
		libcryptoCode, libcryptoOut = 2, "CGO_ENABLED=0"
	}
	for _, c := range []struct {
		name string
		args []string
		env  string // CROWD_CRYPTO, when set
		code int
		want string // in stdout, or in stderr for a failure
	}{
		{"auto by default", []string{"version"}, "", 0, auto},
		{"--crypto go", []string{"version", "--crypto", "go"}, "", 0, "go (crypto/rsa)"},
		{"CROWD_CRYPTO=go", []string{"version"}, "go", 0, "go (crypto/rsa)"},
		{"the flag beats the variable", []string{"version", "--crypto", "go"}, "libcrypto", 0, "go (crypto/rsa)"},
		{"--crypto libcrypto: only with cgo", []string{"version", "--crypto", "libcrypto"}, "", libcryptoCode, libcryptoOut},
		{"an unknown backend names the flag", []string{"version", "--crypto", "openssl"}, "", 2, `--crypto "openssl"`},
		{"checked for every command", []string{"report", "--crypto", "openssl", "x.json"}, "", 2, `--crypto "openssl"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("CROWD_CRYPTO", c.env)
			}
			code, stdout, stderr := runCLI(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			got := stdout
			if code != 0 {
				got = stderr
			} else if !strings.HasPrefix(stdout, "crowd version ") {
				t.Errorf("stdout %q does not start with the version", stdout)
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("output %q lacks %q", got, c.want)
			}
		})
	}
}

// TestFloodRecordsTheSigningBackend: a self-flood signs with the backend
// --crypto names, its inboxes verify with it (every send a 202), and the
// record's part says which backend signed.
func TestFloodRecordsTheSigningBackend(t *testing.T) {
	t.Parallel()
	names := []string{"go"}
	if withCgo {
		names = append(names, "libcrypto")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // its own state
			state, out := t.TempDir(), t.TempDir()
			code, stdout, stderr := runCLI(t, standalone(state, out, "--seconds", "1", "--rate", "30", "--crypto", name, "--log-level", "info", "--log-format", "json")...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			recs := records(t, out)
			if len(recs) != 1 || len(recs[0].Parts) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			r := recs[0]
			if got := r.Parts[0].SigningBackend; got != name {
				t.Errorf("record says %q signed, want %q", got, name)
			}
			if o := r.Overall; o.Counts.Sent == 0 || o.Tally.Classes[record.Class202] != o.Counts.Sent {
				t.Errorf("sent %d, tally %v: want every send verified and answered 202", o.Counts.Sent, o.Tally.Classes)
			}
			if !strings.Contains(stderr, `"signing_backend":"`+name+" (") {
				t.Errorf("the start-up log does not name the backend %s:\n%s", name, stderr)
			}
		})
	}
}
