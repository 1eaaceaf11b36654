package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/doccheck"
)

// docRewrites are the only changes made to a runnable block's commands before they run
// (docs/README.md lists them): the docs' persona is one the test SUT has.
var docRewrites = strings.NewReplacer("admin@sut.test", "load0@sut.test")

// Bounds of a runnable command: a docs command is short by rule, and crowd tail runs until
// stopped.
const (
	docCommandTimeout = 3 * time.Minute
	docTailFor        = 5 * time.Second
)

// TestRunnableDocs runs every command of the fenced blocks marked runnable in the README and
// docs/ (doccheck.RunnableInfo), in page order, against the crowd and a real Fedify 1.5.9 as
// sut.test: each must exit 0, so a command the docs show cannot rot. The crowd is started
// here, not by a block; `crowd` is the built binary and ./crowd-state the crowd's state.
func TestRunnableDocs(t *testing.T) {
	t.Parallel()
	root := ModuleRoot(t)
	pages, err := doccheck.Pages(root, "docs")
	if err != nil {
		t.Fatal(err)
	}
	type pageBlocks struct {
		page   string
		blocks []doccheck.Block
	}
	var all []pageBlocks
	for _, p := range pages {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if blocks := doccheck.RunnableBlocks(string(text)); len(blocks) > 0 {
			all = append(all, pageBlocks{p, blocks})
		}
	}
	if len(all) == 0 {
		t.Fatal("no runnable block in the README or docs/: the marker or the walk is broken")
	}
	RequireTools(t, "curl", "dig", "jq")
	f := startFederation(t, 3)
	work := docWorkdir(t, f.state)
	for _, pb := range all {
		for _, b := range pb.blocks {
			t.Run(pb.page+":"+strconv.Itoa(b.Line), func(t *testing.T) {
				for _, c := range b.Commands {
					runDocCommand(t, f.ns, work, pb.page, c)
				}
			})
		}
	}
}

// docWorkdir makes the folder runnable commands run in: bin/crowd is the built binary, and
// crowd-state the running crowd's state, so the docs' defaults (--state ./crowd-state, records
// in ./out/load) hold.
func docWorkdir(t *testing.T, state string) string {
	t.Helper()
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"bin/crowd": BuildCrowd(t), "crowd-state": state} {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// runDocCommand runs one command of a block in the namespace, from work, and fails the test
// on a non-zero exit with the command's output.
func runDocCommand(t *testing.T, ns *Netns, work, page string, c doccheck.Command) {
	t.Helper()
	text := docRewrites.Replace(c.Text)
	if text != c.Text {
		t.Logf("%s:%d rewritten: %s", page, c.Line, text)
	}
	if strings.HasPrefix(text, "crowd serve") {
		t.Logf("%s:%d not run: the harness started the crowd", page, c.Line)
		return
	}
	tail := strings.HasPrefix(text, "crowd tail")
	timeout := docCommandTimeout
	if tail {
		text, timeout = "exec "+text, docTailFor // exec: the deadline's kill reaches crowd itself
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := ns.Command(ctx, "sh", "-c", text)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(work, "bin")+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case tail && errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Logf("%s:%d followed the log for %s, then stopped:\n%s", page, c.Line, docTailFor, out)
	case tail:
		t.Errorf("%s:%d: %s stopped on its own before %s (%v): it should follow the log\n%s", page, c.Line, text, docTailFor, err, out)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Errorf("%s:%d: %s ran past %s: a runnable command must be short\n%s", page, c.Line, text, timeout, out)
	case errors.As(err, &exit):
		t.Errorf("%s:%d: %s: exit %d\n%s", page, c.Line, text, exit.ExitCode(), out)
	case err != nil:
		t.Fatalf("%s:%d: %s: %v", page, c.Line, text, err)
	default:
		t.Logf("%s:%d ok: %s\n%s", page, c.Line, text, out)
	}
}
