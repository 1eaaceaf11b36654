package audience

import (
	"maps"
	"strings"
	"testing"
)

// TestParseTokens reads tokens files the way people write them.
func TestParseTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]string
		err  string
	}{
		// One a line, comments and blank lines skipped, spaces trimmed.
		{"plain", "# tokens\nload0=abc\n\n  load1 = def  \n", map[string]string{"load0": "abc", "load1": "def"}, ""},
		// An acct or @acct on the left names the same persona.
		{"acct names", "acct:load0@gts.test=abc\n@load1@gts.test=def\n", map[string]string{"load0": "abc", "load1": "def"}, ""},
		// A token may hold '=' (base64 padding): only the first one splits.
		{"padding", "load0=YWJj==\n", map[string]string{"load0": "YWJj=="}, ""},
		// The same token twice is fine.
		{"repeat", "load0=a\nload0=a\n", map[string]string{"load0": "a"}, ""},
		// Two different tokens for one persona: which one is meant?
		{"conflict", "load0=a\nload0=b\n", nil, "line 2: a second, different token for load0"},
		// A line without '=' names its line.
		{"no equals", "load0=a\nload1\n", nil, "line 2: want name=TOKEN"},
		// An empty token.
		{"empty token", "load0=\n", nil, "line 1: want name=TOKEN"},
		// A token with a space inside was pasted wrong.
		{"space in token", "load0=ab cd\n", nil, "line 1: the token has spaces in it"},
		// CRLF files from another system.
		{"crlf", "load0=abc\r\nload1=def\r\n", map[string]string{"load0": "abc", "load1": "def"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTokens(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("ParseTokens = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestTokenSources: the flag beats the file, the file beats the
// environment; a persona nobody names has no token.
func TestTokenSources(t *testing.T) {
	env := map[string]string{"CROWD_TOKEN_LOAD0": "env0", "CROWD_TOKEN_LOAD1": "env1", "CROWD_TOKEN_LOAD2": "env2", "CROWD_TOKEN_LOAD_3": "env3"}
	s := TokenSources{
		Flags: map[string]string{"load0": "flag0"},
		File:  map[string]string{"load0": "file0", "load1": "file1"},
		Env:   func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	for _, tc := range []struct {
		name, token, from string
		ok                bool
	}{
		{"load0", "flag0", "--token", true},            // all three: the flag
		{"load1", "file1", "--tokens-file", true},      // file and env: the file
		{"load2", "env2", "CROWD_TOKEN_LOAD2", true},   // env only
		{"load-3", "env3", "CROWD_TOKEN_LOAD_3", true}, // a dash becomes '_' in the variable
		{"load4", "", "", false},                       // nobody
	} {
		tok, from, ok := s.Token(tc.name)
		if tok != tc.token || from != tc.from || ok != tc.ok {
			t.Errorf("Token(%s) = %q %q %v, want %q %q %v", tc.name, tok, from, ok, tc.token, tc.from, tc.ok)
		}
	}
	if err := MissingTokenError("load4"); !strings.Contains(err.Error(), "--token load4=TOKEN") || !strings.Contains(err.Error(), "CROWD_TOKEN_LOAD4") {
		t.Errorf("MissingTokenError = %v", err)
	}
}

// FuzzParseTokens: a tokens file parses to names and tokens without
// spaces, or fails with a line number; never panics.
func FuzzParseTokens(f *testing.F) {
	f.Add("load0=abc\n# c\nload1=def\n")
	f.Add("acct:x@h=1==\r\n=\n")
	f.Add("a=b\na=c")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseTokens(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.Contains(err.Error(), "token too long") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		for name, tok := range got {
			if name == "" || tok == "" || strings.ContainsAny(tok, " \t\r\n") || strings.ContainsAny(name, "@ \t/") {
				t.Fatalf("bad entry %q=%q", name, tok)
			}
		}
	})
}
