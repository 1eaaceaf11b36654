package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodePeers returns the testpeers folder (fedify-peer.mjs, lookup.mjs, verify.mjs) after making
// sure node and its node_modules are there: when they are missing, CI=true runs `npm ci` there,
// and a local run skips with the command to run.
func NodePeers(t testing.TB) string {
	t.Helper()
	RequireTools(t, "node")
	dir := filepath.Join(ModuleRoot(t), "testpeers")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@fedify", "fedify", "package.json")); err == nil {
		return dir
	}
	if !InCI() {
		t.Skipf("testpeers/node_modules is missing: run `npm ci` in %s", dir)
	}
	RequireTools(t, "npm")
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return dir
}

// SystemPython is Debian's interpreter, the one that sees python3-httpsig (a pyenv python3
// earlier on PATH does not).
const SystemPython = "/usr/bin/python3"

// PythonHTTPSig returns the command (interpreter and script) that runs testpeers/verify_httpsig.py,
// after checking that Debian's python3-httpsig imports; skips (fails in CI) otherwise.
func PythonHTTPSig(t testing.TB) []string {
	t.Helper()
	RequireTools(t, SystemPython)
	if out, err := exec.Command(SystemPython, "-c", "import httpsig.verify").CombinedOutput(); err != nil {
		skipOrFail(t, "python3-httpsig is not installed for %s: %v %s", SystemPython, err, out)
	}
	return []string{SystemPython, filepath.Join(ModuleRoot(t), "testpeers", "verify_httpsig.py")}
}
