package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParse covers the format, a row per rule.
func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Setting // nil with err
		err      bool
	}{
		{"minimal", "name = x\n", []Setting{}, false}, // a name alone
		{"settings in order", "name=x\nmix = like=1\nrate= 5\n", []Setting{{"mix", "like=1", 2}, {"rate", "5", 3}}, false},                   // the first '=' splits
		{"comments and blanks", "# c\n\n  # indented\nname = x\nexpect = p95<1s # kept\n", []Setting{{"expect", "p95<1s # kept", 5}}, false}, // '#' in a value is kept
		{"repeated key", "name = x\nexpect = a<1\nexpect = b<1\n", []Setting{{"expect", "a<1", 2}, {"expect", "b<1", 3}}, false},             // lists repeat
		{"crlf", "name = x\r\nrate = 5\r\n", []Setting{{"rate", "5", 2}}, false},                                                             // Windows line ends
		{"no name", "rate = 5\n", []Setting{{"rate", "5", 1}}, false},                                                                        // a file may leave it to its file name (Load)
		{"two names", "name = x\nname = y\n", nil, true},                                                                                     // one name
		{"bad name", "name = X Y\n", nil, true},                                                                                              // names are keys
		{"no equals", "name = x\nrate 5\n", nil, true},                                                                                       // key = value
		{"upper-case key", "name = x\nRate = 5\n", nil, true},                                                                                // keys are lower-case
		{"empty key", "name = x\n = 5\n", nil, true},                                                                                         // a key
		{"dash key", "name = x\n--rate = 5\n", nil, true},                                                                                    // flags without their dashes
		{"empty", "", nil, true}, // nothing is no scenario
		{"only comments", "# a scenario\n\n  # to come\n", nil, true},              // nor are comments alone
		{"long line", "name = x\nabout = " + strings.Repeat("a", 5000), nil, true}, // a line has a bound
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tc.in), "t.scenario")
			if tc.err {
				if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "t.scenario") {
					t.Fatalf("err %v, want ErrSyntax naming the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Settings) != len(tc.want) {
				t.Fatalf("settings %+v, want %+v", s.Settings, tc.want)
			}
			for i := range tc.want {
				if s.Settings[i] != tc.want[i] {
					t.Fatalf("setting %d %+v, want %+v", i, s.Settings[i], tc.want[i])
				}
			}
		})
	}
}

// TestPresets parses every preset: each has a name equal to its file's,
// says what it sends and the incident it models, and sets a mix.
func TestPresets(t *testing.T) {
	c, err := Presets()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"boost-storm", "delete-storm", "edit-storm", "flapping", "forgery", "media", "outage", "steady", "tarpit", "thread"}
	if got := strings.Join(c.Names(), ","); got != strings.Join(want, ",") {
		t.Fatalf("presets %s, want %v", got, want)
	}
	for _, n := range want {
		s, _ := c.Lookup(n)
		if s.About == "" || s.Incident == "" {
			t.Errorf("%s: about %q, incident %q", n, s.About, s.Incident)
		}
		if !slices.ContainsFunc(s.Settings, func(st Setting) bool { return st.Key == "mix" }) {
			t.Errorf("%s sets no mix", n)
		}
	}
	help := c.Help()
	for _, n := range want {
		if !strings.Contains(help, "\n"+n+"\n") {
			t.Errorf("help lacks %s:\n%s", n, help)
		}
	}
	if s, _ := c.Lookup("forgery"); !strings.Contains(help, "--tamper=body,digest-unsigned") || s.Source != "preset" {
		t.Errorf("forgery: source %q; help:\n%s", s.Source, help)
	}
}

// TestLoad finds a preset by name, a file by path, and names both when
// neither exists.
func TestLoad(t *testing.T) {
	c, err := Presets()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.Load("steady"); err != nil || s.Name != "steady" {
		t.Fatalf("steady: %v", err)
	}
	f := filepath.Join(t.TempDir(), "mine.scenario")
	if err := os.WriteFile(f, []byte("name = mine\nrate = 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Load(f); err != nil || s.Source != f {
		t.Fatalf("file: %+v %v", s, err)
	}
	if _, err := c.Load("nope"); err == nil || !strings.Contains(err.Error(), "steady") {
		t.Fatalf("nope: %v", err)
	}
	// Without a name = line, a file is named after itself, if it can be.
	for _, tc := range []struct {
		file, want string // "" want: refused
	}{
		{"Night-Shift.scenario", "night-shift"}, // lower-cased, the extension dropped
		{"plain", "plain"},                      // no extension
		{"two words.scenario", ""},              // a space: no name
	} {
		f := filepath.Join(t.TempDir(), tc.file)
		if err := os.WriteFile(f, []byte("rate = 7\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := c.Load(f)
		switch {
		case tc.want == "" && (!errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "no name = line")):
			t.Errorf("%s: %+v, %v; want ErrSyntax asking for a name", tc.file, s, err)
		case tc.want != "" && (err != nil || s.Name != tc.want):
			t.Errorf("%s: %+v, %v; want named %q", tc.file, s, err, tc.want)
		}
	}
}

// FuzzParse: any input parses or fails with ErrSyntax, never panics, and
// what parses has a valid name, or none (Load names a file after itself),
// and valid keys.
func FuzzParse(f *testing.F) {
	f.Add("name = x\nmix = like=1\n")
	f.Add("# c\nname=a-b\nabout = t\nexpect = p95<1s\n")
	f.Add("name\n=\n")
	f.Add("rate = 5\n") // no name
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in), "fuzz")
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		if s.Name != "" && !validKey(s.Name) {
			t.Fatalf("name %q", s.Name)
		}
		for _, st := range s.Settings {
			if !validKey(st.Key) || st.Line < 1 || strings.ContainsAny(st.Value, "\n") {
				t.Fatalf("setting %+v", st)
			}
		}
	})
}
