// Package scenario reads the crowd's load scenarios: named, documented
// sets of `crowd flood` settings (mix, senders, timing, verb options,
// forged requests) that model an incident of real federation. A scenario
// is data, a small text file users can write too; the presets are such
// files, embedded.
//
// The format, one setting a line:
//
//	# a comment (a line whose first non-blank is '#'); blank lines are skipped
//	name = boost-storm          # metadata: the scenario's name (required)
//	about = One post, boosted…  # metadata: what it sends (repeatable: lines join)
//	incident = A viral post…    # metadata: the incident it models (repeatable)
//	mix = announce=7,like=3     # any other key is a flag of crowd flood,
//	origin-zipf = 1.3           # without its dashes, and its value as the
//	expect = errors<1%          # command line takes it (repeatable for lists)
//
// Keys are lower-case letters, digits and '-'; a value runs to the end of
// the line, spaces trimmed ('#' inside a value is kept). What a key means
// is the command's business (Setting): this package only reads the file.
package scenario

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Scenario is one parsed scenario.
type Scenario struct {
	// Name names it (--scenario NAME, and the record's settings.scenario):
	// lower-case letters, digits and '-'. Parse leaves it empty for a
	// file without a name = line; Catalog.Load then names the file after
	// itself.
	Name string
	// About says what it sends; Incident what incident of real federation
	// it models.
	About, Incident string
	// Source is where it was read: "preset" or a file's path.
	Source string
	// Settings are its flag settings, in file order.
	Settings []Setting
}

// Setting is one flag setting of a scenario.
type Setting struct {
	Key, Value string
	Line       int // 1-based line in Source
}

// ErrSyntax is wrapped by every error of Parse.
var ErrSyntax = errors.New("syntax error")

// maxLine bounds a line, so a file that is not a scenario (a binary, a
// log) fails fast instead of being read whole.
const maxLine = 4096

// Parse reads a scenario from r; source names it in errors (a file's
// path, or "preset NAME"). Every error wraps ErrSyntax and names
// source:line. A scenario without a name = line parses with no Name; one
// without any key at all is refused.
func Parse(r io.Reader, source string) (*Scenario, error) {
	s := &Scenario{Source: source}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || !validKey(key) {
			return nil, fmt.Errorf("%w: %s:%d: %q is not key = value (keys: lower-case letters, digits and '-')", ErrSyntax, source, n, line)
		}
		switch key {
		case "name":
			if s.Name != "" {
				return nil, fmt.Errorf("%w: %s:%d: a second name", ErrSyntax, source, n)
			}
			if !validKey(value) {
				return nil, fmt.Errorf("%w: %s:%d: name %q: want lower-case letters, digits and '-'", ErrSyntax, source, n, value)
			}
			s.Name = value
		case "about":
			s.About = join(s.About, value)
		case "incident":
			s.Incident = join(s.Incident, value)
		default:
			s.Settings = append(s.Settings, Setting{Key: key, Value: value, Line: n})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %v", ErrSyntax, source, n+1, err)
	}
	if s.Name == "" && s.About == "" && s.Incident == "" && len(s.Settings) == 0 {
		// An empty file (a truncated copy, the wrong path) would run the
		// command's defaults under the file's name, as if it had said so.
		return nil, fmt.Errorf("%w: %s: no settings, only blank lines and comments (a scenario of the defaults says so with a name = line)", ErrSyntax, source)
	}
	return s, nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// validKey reports a key: lower-case letters, digits and inner '-'.
func validKey(k string) bool {
	if k == "" || k[0] == '-' || k[len(k)-1] == '-' || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
