package scenario

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// presets are the scenario files the crowd ships. The embedded file system
// is read once into a Catalog (Presets); nothing else is kept at package
// level.
//
//go:embed presets/*.scenario
var presets embed.FS

// Catalog is a set of scenarios by name.
type Catalog struct {
	list []*Scenario // sorted by name
}

// Presets parses the embedded presets. An error is a defect of the crowd
// (the tests parse them all).
func Presets() (*Catalog, error) {
	files, err := fs.Glob(presets, "presets/*.scenario")
	if err != nil {
		return nil, err
	}
	c := &Catalog{}
	for _, f := range files {
		b, err := presets.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s, err := Parse(bytes.NewReader(b), "preset "+path.Base(f))
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(path.Base(f), ".scenario"); s.Name != want {
			return nil, fmt.Errorf("%w: preset %s names itself %q", ErrSyntax, f, s.Name)
		}
		s.Source = "preset"
		c.list = append(c.list, s)
	}
	slices.SortFunc(c.list, func(a, b *Scenario) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

// Names lists the catalog's scenarios, sorted.
func (c *Catalog) Names() []string {
	var out []string
	for _, s := range c.list {
		out = append(out, s.Name)
	}
	return out
}

// Lookup finds a scenario by name.
func (c *Catalog) Lookup(name string) (*Scenario, bool) {
	for _, s := range c.list {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Load is the scenario --scenario names: a preset of c by name, else the
// file at that path. The error names both when neither is found. A file
// without a name = line is named after the file (mine.scenario: mine),
// when that is a name.
func (c *Catalog) Load(nameOrFile string) (*Scenario, error) {
	if s, ok := c.Lookup(nameOrFile); ok {
		return s, nil
	}
	f, err := os.Open(nameOrFile)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%q is neither a preset (%s; --scenario help lists them) nor a file", nameOrFile, strings.Join(c.Names(), ", "))
		}
		return nil, err
	}
	defer f.Close()
	s, err := Parse(f, nameOrFile)
	if err != nil || s.Name != "" {
		return s, err
	}
	base := filepath.Base(nameOrFile)
	if s.Name = strings.ToLower(strings.TrimSuffix(base, filepath.Ext(base))); !validKey(s.Name) {
		return nil, fmt.Errorf("%w: %s: no name = line, and the file's name %q is none (lower-case letters, digits and '-'): add one", ErrSyntax, nameOrFile, base)
	}
	return s, nil
}

// Help lists the catalog's scenarios: each name, what it sends, the
// incident it models and its settings.
func (c *Catalog) Help() string {
	var b strings.Builder
	b.WriteString("Scenarios (--scenario NAME, or --scenario FILE in the same format; flags given on the command line win):\n")
	for _, s := range c.list {
		fmt.Fprintf(&b, "\n%s\n", s.Name)
		wrap(&b, "  ", s.About)
		if s.Incident != "" {
			wrap(&b, "  incident: ", s.Incident)
		}
		var kv []string
		for _, st := range s.Settings {
			kv = append(kv, "--"+st.Key+"="+st.Value)
		}
		wrap(&b, "  sets: ", strings.Join(kv, " "))
	}
	return b.String()
}

// wrap writes text after prefix, wrapped at 100 columns, continuation
// lines indented by two spaces.
func wrap(b *strings.Builder, prefix, text string) {
	line := prefix
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 100 && strings.TrimSpace(line) != strings.TrimSpace(prefix) {
			b.WriteString(line + "\n")
			line = "    "
		}
		if !strings.HasSuffix(line, " ") {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
}
