package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// manMarkdownEscapes are the characters go-md2man (blackfriday), which turns the man pages'
// Markdown into roff, reads as markup in running text: < opens an HTML tag that swallows the
// text up to a > ('visibility.p95<5s' lost its <5s), & an entity, * and _ emphasis, [ a
// link, \ an escape. A backslash before one makes it the character itself.
const manMarkdownEscapes = `\<&*_[`

// escapeManMarkdown is s, a help text cobra hands go-md2man as Markdown, with
// manMarkdownEscapes backslash-escaped, so that the man page says what the terminal's help
// says. Code spans and code blocks (indented after a blank line, or fenced), where
// blackfriday takes every character as it is, are left alone, as is the Markdown the help
// texts mean: backticks for a command's name, numbered lists.
func escapeManMarkdown(s string) string {
	var b strings.Builder
	fenced, indented, afterBlank := false, false, true
	for _, line := range strings.SplitAfter(s, "\n") {
		text := strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(strings.TrimLeft(text, " "), "```"):
			fenced = !fenced
			b.WriteString(line)
		case fenced:
			b.WriteString(line)
		case (afterBlank || indented) && (strings.HasPrefix(text, "    ") || strings.HasPrefix(text, "\t")):
			indented = true // a code block: the line as it is
			b.WriteString(line)
		default:
			indented = indented && strings.TrimSpace(text) == "" // a blank line does not end a code block
			b.WriteString(escapeManLine(line))
		}
		afterBlank = strings.TrimSpace(text) == ""
	}
	return b.String()
}

// escapeManLine escapes one line of running text, its code spans (a run of backticks up to
// the same run) left as they are.
func escapeManLine(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] == '`' {
			n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
			end := i + n // an unclosed run is backticks as they are
			if j := strings.Index(line[i+n:], line[i:i+n]); j >= 0 {
				end = i + n + j + n
			}
			b.WriteString(line[i:end])
			i = end
			continue
		}
		if strings.IndexByte(manMarkdownEscapes, line[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(line[i])
		i++
	}
	return b.String()
}

// escapeManTree escapes, for the man pages, the texts cobra's man generator passes to
// go-md2man as Markdown: every command's Short and Long and every flag's usage (a flag
// inherited by many commands is one *pflag.Flag, escaped once). The Examples are fenced code
// already. root is a tree built for the reference alone: its help texts are changed.
func escapeManTree(root *cobra.Command) {
	seen := map[*pflag.Flag]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Short, c.Long = escapeManMarkdown(c.Short), escapeManMarkdown(c.Long)
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if !seen[f] {
					seen[f] = true
					f.Usage = escapeManMarkdown(f.Usage)
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// manRoff is the text of a man page as a reader sees it, near enough to find a help text in:
// requests dropped (a list item's tag kept), font changes and roff's escapes undone,
// whitespace one space.
func manRoff(page string) string {
	unescape := strings.NewReplacer(`\\`, `\`, `\fB`, "", `\fI`, "", `\fR`, "", `\fP`, "", `\&`, "", `\-`, "-",
		`\[la]`, "<", `\[ra]`, ">", `\(aq`, "'")
	listTag := regexp.MustCompile(`^\.IP "\s*([^"]*)"`)
	var words []string
	for _, line := range strings.Split(page, "\n") {
		if m := listTag.FindStringSubmatch(line); m != nil {
			line = m[1]
		} else if strings.HasPrefix(line, ".") {
			continue // a request; a line of text that begins with a dot is \&.
		}
		words = append(words, strings.Fields(unescape.Replace(line))...)
	}
	return strings.Join(words, " ")
}

// oneSpaced is s with its whitespace one space, as manRoff's.
func oneSpaced(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestManPageKeepsHelpText: a help text goes into its man page character for character,
// whatever Markdown would make of it: each row a command's Long (and a flag's usage) and
// what the page must say, which the unescaped page lost or changed.
func TestManPageKeepsHelpText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, long, usage string
		want              []string // in the page, as manRoff reads it
	}{
		// A gate: the < opened an HTML tag that ate '<5s' and the text after it.
		{"gate", "crowd run --expect 'visibility.p95<5s' judges a run's own section.", "a gate, e.g. 'p95<100ms', 'errors<1%'",
			[]string{"crowd run --expect 'visibility.p95<5s' judges a run's own section.", "a gate, e.g. 'p95<100ms', 'errors<1%'"}},
		// A placeholder that reads as a tag, <FLAG>, and one that reads as an autolink.
		{"placeholders", "Every flag can also be set as CROWD_<FLAG>.\n(load0 … load<N-1>), or <the N origins>; KIND", "default https://<the persona's host>",
			[]string{"Every flag can also be set as CROWD_<FLAG>.", "(load0 … load<N-1>), or <the N origins>; KIND", "default https://<the persona's host>"}},
		// A process substitution: <( is no tag, but the same rule.
		{"pipe", "a pipe (<(…)) is read once", "", []string{"a pipe (<(…)) is read once"}},
		// Markdown's other marks, as plain characters: emphasis, an entity, a link, a backslash.
		{"marks", "rate>=0.95*offered, *not emphasis*, _nor this_, a&amp;b, [a](link), a\\<b, never_seen", "",
			[]string{"rate>=0.95*offered, *not emphasis*, _nor this_, a&amp;b, [a](link), a\\<b, never_seen"}},
		// A code span keeps its text, unescaped, in bold as before.
		{"code span", "Ask the running `crowd serve <x>` now, a<b", "", []string{"Ask the running crowd serve <x> now, a<b"}},
		// A numbered list stays a list (its item's tag kept), its text intact.
		{"list", "Steps:\n\n 1. set up, p95<5s\n 2. flood", "", []string{"Steps:", "1. set up, p95<5s", "2. flood"}},
		// An indented code block is literal already: no backslash shows in it.
		{"code block", "Try:\n\n    crowd run --expect 'p95<5s'\n\nthen a<b.", "", []string{"crowd run --expect 'p95<5s'", "then a<b."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := &cobra.Command{Use: "x", Short: "a short text, a<b", Long: c.long, Run: func(*cobra.Command, []string) {}}
			if c.usage != "" {
				cmd.Flags().String("flag", "", c.usage)
			}
			escapeManTree(cmd)
			var page bytes.Buffer
			if err := doc.GenMan(cmd, &doc.GenManHeader{Date: manDate()}, &page); err != nil {
				t.Fatal(err)
			}
			got := manRoff(page.String())
			for _, w := range append(c.want, "a short text, a<b") {
				if !strings.Contains(got, oneSpaced(w)) {
					t.Errorf("the page lacks %q:\n%s", w, page.String())
				}
			}
			if strings.Contains(got, `\<`) && !strings.Contains(c.long, `\<`) {
				t.Errorf("a backslash escape shows in the page:\n%s", page.String())
			}
		})
	}
}

// TestManPagesKeepEveryHelpText: every command's man page says its Short, its Long (its
// code spans' backticks aside) and its flags' usages as the terminal's help does, so that no
// help text loses a character to the Markdown its page goes through.
func TestManPagesKeepEveryHelpText(t *testing.T) {
	t.Parallel()
	eachDocumentedCommand(t, func(dir string, c *cobra.Command) {
		raw, err := os.ReadFile(filepath.Join(dir, "man", strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"))
		if err != nil {
			t.Fatal(err)
		}
		page := manRoff(string(raw))
		texts := []string{c.Short, strings.ReplaceAll(c.Long, "`", "")}
		for _, fs := range []*pflag.FlagSet{c.NonInheritedFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && f.Deprecated == "" {
					texts = append(texts, f.Usage)
				}
			})
		}
		for _, text := range texts {
			if !strings.Contains(page, oneSpaced(text)) {
				t.Errorf("%s: its man page lacks (or changed) %q", c.CommandPath(), oneSpaced(text))
			}
		}
	})
}
