// Package doccheck finds the relative links of Markdown pages that lead nowhere: a file that
// does not exist, or an anchor no heading of the target page makes. Documentation split over
// many pages rots at its links first, and GitHub renders a dead one without a word.
package doccheck

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Problem is one link that does not resolve: the page and line it is on, the link as written
// and why it leads nowhere.
type Problem struct {
	File   string // slash-separated, relative to the root the check was given
	Line   int
	Link   string
	Reason string
}

// String is the problem as file:line: link: reason, the form editors jump to.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Link, p.Reason)
}

// Link is a relative link found in a page: its target as written and the line it is on.
type Link struct {
	Target string
	Line   int
}

// Slug is the anchor GitHub gives a heading's text: lower case, every character but letters,
// digits, spaces, hyphens and underscores dropped, each space made a hyphen. Inline code
// keeps its text, and a link in a heading its label.
func Slug(heading string) string {
	heading = inlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// Anchors are the anchors a page makes: one per heading outside fenced code, a repeated slug
// numbered as GitHub numbers it (-1, -2 …), and those of HTML `<a name>`/`<a id>` tags.
func Anchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	eachLine(page, func(line string, _ int) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// Links are the relative links of a page (inline links and images, a label wrapped over lines
// included), outside fenced code and code spans; links with a scheme (https:, mailto:) or to
// another host are not the repo's. A link's line is the line its label starts on.
func Links(page string) []Link {
	prose := make([]string, strings.Count(page, "\n")+1) // fenced lines stay empty
	eachLine(page, func(line string, n int) {
		prose[n-1] = codeSpan.ReplaceAllString(line, "")
	})
	text := strings.Join(prose, "\n")
	var links []Link
	for _, m := range inlineLink.FindAllStringSubmatchIndex(text, -1) {
		if target := strings.Trim(text[m[4]:m[5]], "<>"); relative(target) {
			links = append(links, Link{Target: target, Line: strings.Count(text[:m[0]], "\n") + 1})
		}
	}
	return links
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

func relative(target string) bool {
	return target != "" && !scheme.MatchString(target) && !strings.HasPrefix(target, "//")
}

// eachLine calls fn with every line outside fenced code blocks (``` or ~~~) and its number.
func eachLine(page string, fn func(line string, n int)) {
	var fence string
	for i, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		fn(line, i+1)
	}
}

// Check reads the pages (slash-separated paths relative to root) and returns every link of
// theirs that does not resolve under root. A page that cannot be read is an error.
func Check(root string, pages []string) ([]Problem, error) {
	var problems []Problem
	anchors := map[string]map[string]bool{}
	for _, p := range pages {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		for _, l := range Links(string(text)) {
			if reason := resolve(root, p, l.Target, anchors); reason != "" {
				problems = append(problems, Problem{File: p, Line: l.Line, Link: l.Target, Reason: reason})
			}
		}
	}
	return problems, nil
}

// resolve says why target, linked from page, leads nowhere ("" when it resolves). anchors
// caches the anchors of the pages read so far.
func resolve(root, page, target string, anchors map[string]map[string]bool) string {
	file, anchor, _ := strings.Cut(target, "#")
	file, _, _ = strings.Cut(file, "?")
	dest := page
	if file != "" {
		dest = path.Clean(path.Join(path.Dir(page), file))
	}
	if dest == ".." || strings.HasPrefix(dest, "../") {
		return "leads out of the repository"
	}
	info, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest)))
	switch {
	case err != nil:
		return "no such file " + dest
	case anchor == "":
		return ""
	case info.IsDir() || !strings.HasSuffix(dest, ".md"):
		return "an anchor into " + dest + ", which is not a Markdown page"
	}
	if anchors[dest] == nil {
		text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dest)))
		if err != nil {
			return err.Error()
		}
		anchors[dest] = Anchors(string(text))
	}
	if !anchors[dest][anchor] {
		return "no heading of " + dest + " has the anchor #" + anchor
	}
	return ""
}

// Pages lists the Markdown pages under root the documentation is made of: README.md, and every
// .md file under the given directories (slash-separated, relative to root; absent ones are
// skipped), in walk order.
func Pages(root string, dirs ...string) ([]string, error) {
	pages := []string{"README.md"}
	for _, dir := range dirs {
		base := filepath.Join(root, filepath.FromSlash(dir))
		if _, err := os.Stat(base); os.IsNotExist(err) {
			continue
		}
		err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(p, ".md") {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				pages = append(pages, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return pages, nil
}
