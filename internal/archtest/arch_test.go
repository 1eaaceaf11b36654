package archtest

import (
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// rule is one sentence of DESIGN.md §2 as a predicate: a non-test file of a room that from
// accepts may not import a package that to accepts.
type rule struct {
	says string // the design's sentence, printed with every violation
	from func(room string) bool
	to   func(imp imported) bool
}

// imported is one import of a file, seen both as written and as a room of the layout.
type imported struct {
	path string // the import path as written
	rel  string // the path inside the module ("" for a package outside it)
	room string // the room of the layout: rel ("" outside the module)
}

// designRules is DESIGN.md §2 ("Arrows ... Never ...") as a table. Rooms that do not exist yet
// (loadrun, apclient, flood/record, flood/report) are named already, so the rules hold
// while the re-layout of issue 12 moves code into them.
func designRules() []rule {
	return []rule{
		// cmd is CLI only: flags -> Config -> Run. It reaches the rest through loadrun, the
		// environment through pasture, records and reports through their own rooms; the
		// flags' own types from the leaves that define them (the world's Config, the
		// signing backend, the URL check), with no forwarder.
		{
			says: "cmd imports only loadrun, pasture, adminapi, flood/record, flood/report, actors, signing, apclient",
			from: under("cmd"),
			to: inModule(not(under("loadrun", "pasture", "adminapi", "flood/record",
				"flood/report", "actors", "signing", "apclient", "internal"))),
		},
		// The flood only speaks HTTP, so it can flood any server, not only the crowd's own.
		{
			says: "flood never imports inbox, pasture or audience",
			from: under("flood"),
			to:   inModule(under("inbox", "pasture", "audience")),
		},
		// The record and the report are fed by the engine's collector; importing the engine
		// back would be a circle, and would drag the engine into cmd through them.
		{
			says: "flood/record and flood/report never import the engine (flood)",
			from: under("flood/record", "flood/report"),
			to:   inModule(exactly("flood")),
		},
		// The audience observes a run from its members' seats, never the flood's internals;
		// the record types it needs live in flood/record.
		{
			says: "audience never imports flood (only flood/record)",
			from: under("audience"),
			to:   inModule(exactly("flood")),
		},
		// The environment does not know who measures it.
		{
			says: "pasture never imports audience",
			from: under("pasture"),
			to:   inModule(under("audience")),
		},
		// The crowd's servers are a peer any flood can hit; they know nothing of the load side.
		{
			says: "pasture, inbox and webfinger never import flood, audience or loadrun",
			from: under("pasture", "inbox", "webfinger"),
			to:   inModule(under("flood", "audience", "loadrun")),
		},
		// pasture composes inbox and webfinger (pasture -> inbox, webfinger), never the reverse.
		{
			says: "inbox and webfinger never import pasture",
			from: under("inbox", "webfinger"),
			to:   inModule(under("pasture")),
		},
		// The world is below every server: actors -> signing is its only arrow.
		{
			says: "actors imports only signing",
			from: under("actors"),
			to:   inModule(not(under("actors", "signing", "internal"))),
		},
		// The one AP client sits between its users (flood, audience, inbox) and signing.
		{
			says: "apclient imports only signing",
			from: under("apclient"),
			to:   inModule(not(under("apclient", "signing", "internal"))),
		},
		// signing is the bottom room: everything signs through it, it depends on nothing.
		{
			says: "signing imports no other room",
			from: under("signing"),
			to:   inModule(not(under("signing", "internal"))),
		},
		// adminapi holds routes, wire types and the client; the handlers stay in inbox and
		// pasture serving its types, or inbox's internals would be dragged into every client.
		{
			says: "adminapi never imports inbox, pasture, flood, audience or loadrun",
			from: under("adminapi"),
			to:   inModule(under("inbox", "pasture", "flood", "audience", "loadrun")),
		},
		// loadrun orchestrates a run; only the CLI (and the bench, which drives the CLI's
		// pieces) stands above it.
		{
			says: "only cmd and bench import loadrun",
			from: not(under("cmd", "bench", "loadrun")),
			to:   inModule(under("loadrun")),
		},
		// Host routing is the environment's business; one router library, in one room.
		{
			says: "only pasture imports chi",
			from: not(under("pasture")),
			to: func(imp imported) bool {
				return imp.path == "github.com/go-chi/chi" ||
					strings.HasPrefix(imp.path, "github.com/go-chi/chi/")
			},
		},
	}
}

// exception is one import today's tree still makes against a rule. The list only shrinks:
// the test fails when an exception is no longer needed, so the fix of an arrow also deletes
// its line here.
type exception struct {
	file    string // slash path inside the module
	imports string // the import path inside the module
}

// knownExceptions are the arrows today's tree still makes against a rule: none since cmd/crowd
// became the CLI only (loadrun holds the run, pasture the serve root). A new one needs a reason.
func knownExceptions() []exception {
	return nil
}

// TestDesignArrows checks every non-test Go file of the module against DESIGN.md §2. Test files
// are left out: a test may build any fixture it needs, and no binary carries its imports.
func TestDesignArrows(t *testing.T) {
	root, module, err := findModule()
	if err != nil {
		t.Fatal(err)
	}
	files, err := scan(os.DirFS(root), module)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		// A scan that found almost nothing would pass vacuously.
		t.Fatalf("scanned only %d files under %s", len(files), root)
	}
	violations, stale := check(files, designRules(), knownExceptions())
	for _, v := range violations {
		t.Errorf("%s imports %s: %s (DESIGN.md §2)", v.file, v.imp.path, v.says)
	}
	for _, e := range stale {
		t.Errorf("known exception no longer needed, delete it from knownExceptions: %s imports %s",
			e.file, e.imports)
	}
}

// TestCheck specifies the checker on small made-up trees, so a bug in it cannot make
// TestDesignArrows pass vacuously.
func TestCheck(t *testing.T) {
	const mod = "example.org/m"
	src := func(imports ...string) *fstest.MapFile {
		var b bytes.Buffer
		b.WriteString("package p\n\nimport (\n")
		for _, imp := range imports {
			fmt.Fprintf(&b, "\t%q\n", imp)
		}
		b.WriteString(")\n")
		return &fstest.MapFile{Data: b.Bytes()}
	}
	tests := []struct {
		name       string
		tree       fstest.MapFS
		exceptions []exception
		violations []string // "file imports path"
		stale      []string
	}{
		{
			// The arrows the design draws are allowed.
			name: "allowed arrows",
			tree: fstest.MapFS{
				"go.mod":             {Data: []byte("module " + mod + "\n")},
				"cmd/crowd/main.go":  src(mod+"/pasture", mod+"/flood/record", "fmt"),
				"pasture/origins.go": src(mod+"/inbox", "github.com/go-chi/chi/v5"),
				"flood/engine.go":    src(mod+"/signing", mod+"/actors"),
			},
		},
		{
			// A new forbidden arrow is reported with its file and import path.
			name: "new forbidden arrows",
			tree: fstest.MapFS{
				"cmd/crowd/main.go": src(mod + "/inbox"),
				"flood/engine.go":   src(mod + "/audience"),
				"inbox/routes.go":   src("github.com/go-chi/chi/v5"),
				"actors/world.go":   src(mod + "/webfinger"),
			},
			violations: []string{
				"actors/world.go imports " + mod + "/webfinger",
				"cmd/crowd/main.go imports " + mod + "/inbox",
				"flood/engine.go imports " + mod + "/audience",
				"inbox/routes.go imports github.com/go-chi/chi/v5",
			},
		},
		{
			// The environment does not know who measures it; the audience reads records.
			name: "pasture and audience",
			tree: fstest.MapFS{
				"pasture/pasture.go": src(mod + "/audience"),
				"audience/probe.go":  src(mod + "/flood/record"),
			},
			violations: []string{"pasture/pasture.go imports " + mod + "/audience"},
		},
		{
			// A listed exception silences exactly its own file and import.
			name: "exception covers only its file",
			tree: fstest.MapFS{
				"cmd/crowd/run.go":  src(mod + "/inbox"),
				"cmd/crowd/tail.go": src(mod + "/inbox"),
			},
			exceptions: []exception{{"cmd/crowd/run.go", "inbox"}},
			violations: []string{"cmd/crowd/tail.go imports " + mod + "/inbox"},
		},
		{
			// An exception whose import is gone must be deleted: the list only shrinks.
			name: "stale exception",
			tree: fstest.MapFS{
				"cmd/crowd/run.go": src(mod + "/pasture"),
			},
			exceptions: []exception{{"cmd/crowd/run.go", "inbox"}},
			stale:      []string{"cmd/crowd/run.go imports inbox"},
		},
		{
			// Test files, testdata and node_modules are not part of the dependency graph.
			name: "ignored files",
			tree: fstest.MapFS{
				"cmd/crowd/run_test.go":             src(mod + "/inbox"),
				"flood/testdata/x.go":               src(mod + "/inbox"),
				"testpeers/node_modules/a/b.go":     src(mod + "/inbox"),
				"flood/.hidden/x.go":                src(mod + "/inbox"),
				"flood/engine.go":                   src("net/http"),
				"inbox/inbox.go":                    src(mod + "/actors"),
				"webfinger/webfinger.go":            src(mod + "/actors"),
				"signing/signer.go":                 src(mod + "/internal/atomicfile"),
				"internal/atomicfile/atomicfile.go": src("os"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := scan(tt.tree, mod)
			if err != nil {
				t.Fatal(err)
			}
			violations, stale := check(files, designRules(), tt.exceptions)
			var gotV, gotS []string
			for _, v := range violations {
				gotV = append(gotV, v.file+" imports "+v.imp.path)
			}
			for _, e := range stale {
				gotS = append(gotS, e.file+" imports "+e.imports)
			}
			if !slices.Equal(gotV, tt.violations) {
				t.Errorf("violations\n got %q\nwant %q", gotV, tt.violations)
			}
			if !slices.Equal(gotS, tt.stale) {
				t.Errorf("stale exceptions\n got %q\nwant %q", gotS, tt.stale)
			}
		})
	}
}

// goFile is one parsed non-test Go file.
type goFile struct {
	path    string // slash path inside the module
	room    string
	imports []imported
}

// violation is one import a rule forbids.
type violation struct {
	file string
	imp  imported
	says string
}

// check applies the rules to the files and returns the violations no exception covers (one per
// import, under the first rule it breaks), and the exceptions that covered nothing.
func check(files []goFile, rules []rule, exceptions []exception) (violations []violation, stale []exception) {
	used := make(map[exception]bool)
	for _, f := range files {
		for _, imp := range f.imports {
			for _, r := range rules {
				if !r.from(f.room) || !r.to(imp) {
					continue
				}
				if e := (exception{f.path, imp.rel}); slices.Contains(exceptions, e) {
					used[e] = true
					continue
				}
				violations = append(violations, violation{file: f.path, imp: imp, says: r.says})
				break // one report per import, under the first rule it breaks
			}
		}
	}
	for _, e := range exceptions {
		if !used[e] {
			stale = append(stale, e)
		}
	}
	return violations, stale
}

// scan parses the imports of every non-test Go file under fsys, in lexical order. It skips
// what the go tool skips (testdata, directories starting with . or _) and node_modules.
func scan(fsys fs.FS, module string) ([]goFile, error) {
	var files []goFile
	fset := token.NewFileSet()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (name == "testdata" || name == "node_modules" || name == "vendor" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ast, err := parser.ParseFile(fset, p, data, parser.ImportsOnly)
		if err != nil {
			return err
		}
		f := goFile{path: p, room: path.Dir(p)}
		for _, spec := range ast.Imports {
			ip, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %w", p, spec.Path.Value, err)
			}
			imp := imported{path: ip}
			if rel, ok := strings.CutPrefix(ip, module+"/"); ok {
				imp.rel, imp.room = rel, rel
			}
			f.imports = append(f.imports, imp)
		}
		files = append(files, f)
		return nil
	})
	return files, err
}

// under accepts the rooms named and their subpackages.
func under(rooms ...string) func(string) bool {
	return func(room string) bool {
		for _, r := range rooms {
			if room == r || strings.HasPrefix(room, r+"/") {
				return true
			}
		}
		return false
	}
}

// exactly accepts the room named and not its subpackages.
func exactly(r string) func(string) bool {
	return func(room string) bool { return room == r }
}

// not negates a room predicate.
func not(f func(string) bool) func(string) bool {
	return func(room string) bool { return !f(room) }
}

// inModule lifts a room predicate to imports: packages outside the module never match.
func inModule(f func(string) bool) func(imported) bool {
	return func(imp imported) bool { return imp.rel != "" && f(imp.room) }
}

// findModule walks up from the working directory to go.mod and returns its directory and
// module path.
func findModule() (root, module string, err error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(data)) {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s/go.mod names no module", dir)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
