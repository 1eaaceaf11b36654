package signing

import "strings"

// RFC 8941 structured fields (Signature-Input, Signature, Content-Digest) are
// parsed by github.com/dunglas/httpsfv. What it does not keep is a member's
// text as sent, which memberText recovers for the verifier's fallback.

// memberText is the value of dictionary member key (after "key=", with its
// parameters) as the sender wrote it in the field lines, for a field httpsfv
// has parsed: a sender that serialised its signature parameters
// non-canonically most likely signed its own text. A repeated key gives its
// last value, as the parsed dictionary does. FuzzMemberText holds it to
// httpsfv's reading.
func memberText(lines []string, key string) string {
	s := strings.Join(lines, ", ")
	var text string
	for s != "" {
		var m string
		m, s = cutMember(s)
		if k, v, ok := strings.Cut(strings.TrimLeft(m, " \t"), "="); ok && k == key {
			text = v
		}
	}
	return strings.TrimSpace(text)
}

// cutMember splits a dictionary at its first comma outside a string: the
// only place a valid dictionary can hold a comma or a quote is a string
// (a display string, %"...", has no backslash escapes).
func cutMember(s string) (member, rest string) {
	quoted, display := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && !display && c == '\\':
			i++
		case c == '"':
			quoted, display = !quoted, !quoted && i > 0 && s[i-1] == '%'
		case c == ',' && !quoted:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}
