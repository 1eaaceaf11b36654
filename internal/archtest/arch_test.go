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

// never is one "Never" sentence of DESIGN.md §2 as a predicate: a non-test file in a package
// directory that from accepts may not import a package that to accepts. The nevers hold on top
// of the drawing, whatever its rows allow, and say why.
type never struct {
	says string // the design's sentence, printed with every violation
	from func(dir string) bool
	to   func(imp imported) bool
}

// imported is one import of a file: the path as written, and the path inside the module ("" for
// a package outside it).
type imported struct {
	path string
	rel  string
}

// nevers is DESIGN.md §2's "Never ..." sentences and the rooms' own limits as a table.
func nevers() []never {
	return []never{
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
		// Host routing is the environment's business; one router library, in the router's own
		// package: pasture's concerns (DNS, the CA, fetch-back windows) are plain net/http.
		{
			says: "only pasture imports chi",
			from: not(exactly("pasture")),
			to: func(imp imported) bool {
				return imp.path == "github.com/go-chi/chi" ||
					strings.HasPrefix(imp.path, "github.com/go-chi/chi/")
			},
		},
	}
}

// TestDesignArrows checks every non-test Go file of the module against DESIGN.md §2: its nevers,
// then the drawing's rows. Test files are left out: a test may build any fixture it needs, and
// no binary carries its imports.
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
	violations, stale := check(files, nevers(), drawing(), exceptions())
	for _, v := range violations {
		t.Errorf("%s imports %s: %s (DESIGN.md §2)", v.file, v.imp.path, v.says)
	}
	for _, e := range stale {
		t.Errorf("exception no longer needed, delete it from exceptions(): %s -> %s (%s)", e.from, e.to, e.why)
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
		violations []string // "file imports path: says"
		stale      []string // "from -> to"
	}{
		{
			// The arrows the drawing draws are allowed, and so are imports outside the module.
			name: "drawn arrows",
			tree: fstest.MapFS{
				"go.mod":             {Data: []byte("module " + mod + "\n")},
				"cmd/crowd/main.go":  src(mod+"/pasture", mod+"/flood/record", "fmt"),
				"pasture/origins.go": src(mod+"/inbox", "github.com/go-chi/chi/v5"),
				"flood/engine.go":    src(mod + "/flood/record"),
				"flood/traffic/a.go": src(mod+"/flood", mod+"/signing", mod+"/actors"),
				"audience/probe.go":  src(mod + "/flood/record"),
			},
		},
		{
			// The engine knows requests and answers only: what to send, and the signing and
			// world it takes, are the traffic's, which imports the engine, never the reverse.
			name: "the engine is not the traffic",
			tree: fstest.MapFS{
				"flood/engine.go": src(mod+"/flood/traffic", mod+"/signing"),
			},
			violations: []string{
				"flood/engine.go imports " + mod + "/flood/traffic: not on the drawing: flood -> flood/record, internal",
				"flood/engine.go imports " + mod + "/signing: not on the drawing: flood -> flood/record, internal",
			},
		},
		{
			// A room's sub-package without a row of its own belongs to it: it imports what the
			// room may, and the room imports it.
			name: "sub-packages of a room",
			tree: fstest.MapFS{
				"pasture/panel/panel.go":       src(mod+"/inbox", mod+"/actors"),
				"pasture/pasture.go":           src(mod + "/pasture/panel"),
				"flood/record/recordtest/r.go": src(mod + "/flood/record"),
			},
		},
		{
			// A sub-package with a row of its own is held to that row, not to its parent's.
			name: "sub-package with its own row",
			tree: fstest.MapFS{
				"pasture/nameserver/zone.go": src(mod + "/actors"),
			},
			violations: []string{
				"pasture/nameserver/zone.go imports " + mod + "/actors: not on the drawing: pasture/nameserver -> internal",
			},
		},
		{
			// An arrow no row draws fails with the file that makes it and the row it breaks,
			// even where no never forbids it.
			name: "undrawn arrow",
			tree: fstest.MapFS{
				"webfinger/lookup.go": src(mod + "/signing"),
			},
			violations: []string{
				"webfinger/lookup.go imports " + mod + "/signing: not on the drawing: webfinger -> actors, apclient, internal",
			},
		},
		{
			// A never breaks with its own sentence, which says why; one report per import.
			name: "nevers",
			tree: fstest.MapFS{
				"cmd/crowd/main.go":      src(mod + "/inbox"),
				"flood/engine.go":        src(mod + "/audience"),
				"inbox/routes.go":        src("github.com/go-chi/chi/v5"),
				"actors/world.go":        src(mod + "/webfinger"),
				"pasture/p.go":           src(mod + "/audience"),
				"pasture/fetchback/w.go": src("github.com/go-chi/chi/v5/middleware"),
			},
			violations: []string{
				"actors/world.go imports " + mod + "/webfinger: actors imports only signing",
				"cmd/crowd/main.go imports " + mod + "/inbox: cmd imports only loadrun, pasture, adminapi, flood/record, flood/report, actors, signing, apclient",
				"flood/engine.go imports " + mod + "/audience: flood never imports inbox, pasture or audience",
				"inbox/routes.go imports github.com/go-chi/chi/v5: only pasture imports chi",
				"pasture/fetchback/w.go imports github.com/go-chi/chi/v5/middleware: only pasture imports chi",
				"pasture/p.go imports " + mod + "/audience: pasture never imports audience",
			},
		},
		{
			// A package outside every row, or importing one, is a room the drawing lacks.
			name: "unknown rooms",
			tree: fstest.MapFS{
				"weather/storm.go": src(mod + "/actors"),
				"flood/engine.go":  src(mod + "/weather"),
			},
			violations: []string{
				"flood/engine.go imports " + mod + "/weather: weather is in no room of the drawing",
				"weather/storm.go imports " + mod + "/actors: weather is in no room of the drawing",
			},
		},
		{
			// Test helpers are in rooms no production row names; the bench may use any room.
			name: "test helpers",
			tree: fstest.MapFS{
				"loadrun/run.go":   src(mod + "/internal/crowdtest"),
				"bench/section.go": src(mod+"/internal/crowdtest", mod+"/loadrun", mod+"/inbox"),
			},
			violations: []string{
				"loadrun/run.go imports " + mod + "/internal/crowdtest: not on the drawing: loadrun -> flood, flood/traffic, flood/record, flood/livemetrics, flood/scenario, audience, adminapi, pasture, pasture/fetchback, pasture/weather, actors, signing, internal",
			},
		},
		{
			// An exception passes its arrow, from every file of its room, and nothing else.
			name: "exception",
			tree: fstest.MapFS{
				"webfinger/lookup.go": src(mod + "/signing"),
				"webfinger/jrd.go":    src(mod + "/signing"),
				"webfinger/host.go":   src(mod + "/adminapi"),
			},
			exceptions: []exception{{"webfinger", "signing", "a reason"}},
			violations: []string{
				"webfinger/host.go imports " + mod + "/adminapi: not on the drawing: webfinger -> actors, apclient, internal",
			},
		},
		{
			// An exception whose arrow no file makes, or that the drawing now draws, must be
			// deleted: the list only shrinks.
			name: "stale exceptions",
			tree: fstest.MapFS{
				"webfinger/jrd.go": src(mod + "/actors"),
			},
			exceptions: []exception{{"webfinger", "signing", "gone"}, {"webfinger", "actors", "drawn"}},
			stale:      []string{"webfinger -> signing", "webfinger -> actors"},
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
			violations, stale := check(files, nevers(), drawing(), tt.exceptions)
			var gotV, gotS []string
			for _, v := range violations {
				gotV = append(gotV, v.file+" imports "+v.imp.path+": "+v.says)
			}
			for _, e := range stale {
				gotS = append(gotS, e.from+" -> "+e.to)
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

// TestDrawing checks the table against itself: every room it names has a row, its arrows point
// one way (no circle), no row allows what a never forbids, and every exception names rooms.
func TestDrawing(t *testing.T) {
	rows := drawing()
	byName := make(map[string]room, len(rows))
	for _, r := range rows {
		if _, dup := byName[r.name]; dup {
			t.Errorf("room %s has two rows", r.name)
		}
		byName[r.name] = r
	}
	for _, r := range rows {
		for _, to := range r.imports {
			if _, ok := byName[to]; !ok && to != everyRoom {
				t.Errorf("row %s names %s, which has no row", r.name, to)
			}
			for _, n := range nevers() {
				if to != everyRoom && n.from(r.name) && n.to(imported{path: "m/" + to, rel: to}) {
					t.Errorf("row %s allows %s, which a never forbids: %s", r.name, to, n.says)
				}
			}
		}
	}
	if c := circle(rows); c != nil {
		t.Errorf("the drawing's arrows make a circle: %s", strings.Join(c, " -> "))
	}
	for _, e := range exceptions() {
		if _, ok := byName[e.from]; !ok {
			t.Errorf("exception %s -> %s: %s has no row", e.from, e.to, e.from)
		}
		if _, ok := byName[e.to]; !ok {
			t.Errorf("exception %s -> %s: %s has no row", e.from, e.to, e.to)
		}
		if e.why == "" {
			t.Errorf("exception %s -> %s gives no reason", e.from, e.to)
		}
	}
}

// goFile is one parsed non-test Go file.
type goFile struct {
	path    string // slash path inside the module
	dir     string // its package directory
	imports []imported
}

// violation is one import the design forbids, with the sentence or row it breaks.
type violation struct {
	file string
	imp  imported
	says string
}

// check applies the nevers and then the drawing to the files. It returns one violation per
// import no row or exception allows (under the first never it breaks, if any), and the
// exceptions whose arrow no file needed.
func check(files []goFile, nevers []never, rows []room, exceptions []exception) (violations []violation, stale []exception) {
	used := make(map[exception]bool)
	for _, f := range files {
		for _, imp := range f.imports {
			if says := brokenNever(nevers, f.dir, imp); says != "" {
				violations = append(violations, violation{f.path, imp, says})
				continue
			}
			if imp.rel == "" {
				continue // outside the module; only the nevers speak of it
			}
			from, to := roomOf(rows, f.dir), roomOf(rows, imp.rel)
			switch {
			case from == nil:
				violations = append(violations, violation{f.path, imp, f.dir + " is in no room of the drawing"})
			case to == nil:
				violations = append(violations, violation{f.path, imp, imp.rel + " is in no room of the drawing"})
			case from.name == to.name || slices.Contains(from.imports, to.name) ||
				slices.Contains(from.imports, everyRoom):
			default:
				i := slices.IndexFunc(exceptions, func(e exception) bool { return e.from == from.name && e.to == to.name })
				if i >= 0 {
					used[exceptions[i]] = true
					continue
				}
				violations = append(violations, violation{f.path, imp,
					"not on the drawing: " + from.name + " -> " + strings.Join(from.imports, ", ")})
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

// brokenNever returns the sentence of the first never the import breaks, or "".
func brokenNever(nevers []never, dir string, imp imported) string {
	for _, n := range nevers {
		if n.from(dir) && n.to(imp) {
			return n.says
		}
	}
	return ""
}

// roomOf returns the row a package directory belongs to: the longest row name that is the
// directory or one of its parents; nil when none is.
func roomOf(rows []room, dir string) *room {
	var best *room
	for i, r := range rows {
		if (dir == r.name || strings.HasPrefix(dir, r.name+"/")) && (best == nil || len(r.name) > len(best.name)) {
			best = &rows[i]
		}
	}
	return best
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
		f := goFile{path: p, dir: path.Dir(p)}
		for _, spec := range ast.Imports {
			ip, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %w", p, spec.Path.Value, err)
			}
			imp := imported{path: ip}
			if rel, ok := strings.CutPrefix(ip, module+"/"); ok {
				imp.rel = rel
			}
			f.imports = append(f.imports, imp)
		}
		files = append(files, f)
		return nil
	})
	return files, err
}

// under accepts the directories named and their subpackages.
func under(dirs ...string) func(string) bool {
	return func(dir string) bool {
		for _, d := range dirs {
			if dir == d || strings.HasPrefix(dir, d+"/") {
				return true
			}
		}
		return false
	}
}

// exactly accepts the directory named and not its subpackages.
func exactly(d string) func(string) bool {
	return func(dir string) bool { return dir == d }
}

// not negates a directory predicate.
func not(f func(string) bool) func(string) bool {
	return func(dir string) bool { return !f(dir) }
}

// inModule lifts a directory predicate to imports: packages outside the module never match.
func inModule(f func(string) bool) func(imported) bool {
	return func(imp imported) bool { return imp.rel != "" && f(imp.rel) }
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
