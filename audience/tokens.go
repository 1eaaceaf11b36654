package audience

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// TokenEnvPrefix prefixes the environment variable that holds a persona's
// token: CROWD_TOKEN_LOAD0 for load0 (see TokenEnvName).
const TokenEnvPrefix = "CROWD_TOKEN_"

// TokenEnvName is the environment variable of persona name's token:
// TokenEnvPrefix + the name upper-cased, every character other than a
// letter or digit turned into '_' ("load-0" → CROWD_TOKEN_LOAD_0).
func TokenEnvName(name string) string {
	var b strings.Builder
	b.WriteString(TokenEnvPrefix)
	for _, r := range name {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(unicode.ToUpper(r))
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ParseTokenArg reads one "name=token" (a --token flag). The name is a
// persona's local user name (an "@host" or "acct:" around it is dropped);
// the token is taken as it is, trimmed of spaces.
func ParseTokenArg(s string) (name, token string, err error) {
	name, token, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	token = strings.TrimSpace(token)
	if !ok || name == "" || token == "" {
		return "", "", errors.New("want name=TOKEN")
	}
	name = localName(name)
	if name == "" || strings.ContainsAny(name, " \t/") {
		return "", "", fmt.Errorf("%q is not a persona name", name)
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return "", "", errors.New("the token has spaces in it")
	}
	return name, token, nil
}

// localName is the user name of "acct:name@host", "@name@host" or "name".
func localName(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "acct:"), "@")
	name, _, _ := strings.Cut(s, "@")
	return name
}

// ParseTokens reads a tokens file: one "name=token" a line; blank lines
// and lines starting with '#' are skipped. A line that is not name=token,
// or a name given twice with different tokens, is an error naming its
// line.
func ParseTokens(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, token, err := ParseTokenArg(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if old, ok := out[name]; ok && old != token {
			return nil, fmt.Errorf("line %d: a second, different token for %s", n, name)
		}
		out[name] = token
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// TokenSources are where a persona's token may come from, most specific
// first.
type TokenSources struct {
	Flags map[string]string               // --token name=TOKEN
	File  map[string]string               // --tokens-file
	Env   func(key string) (string, bool) // os.LookupEnv; nil reads no environment
}

// Token returns persona name's token: from the flags, else the file, else
// the environment (TokenEnvName). ok is false when none has one.
func (s TokenSources) Token(name string) (token, from string, ok bool) {
	if t, ok := s.Flags[name]; ok {
		return t, "--token", true
	}
	if t, ok := s.File[name]; ok {
		return t, "--tokens-file", true
	}
	if s.Env != nil {
		if t, ok := s.Env(TokenEnvName(name)); ok && strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t), TokenEnvName(name), true
		}
	}
	return "", "", false
}

// MissingTokenError says how to give persona name a token.
func MissingTokenError(name string) error {
	return fmt.Errorf("no token for persona %s: pass --token %s=TOKEN, a line %s=TOKEN in --tokens-file, or set %s",
		name, name, name, TokenEnvName(name))
}
