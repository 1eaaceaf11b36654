package pasture

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the admin page is one file, compiled in
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// adminPageHTML is the admin page: one self-contained document (its CSS
// and JavaScript inline, nothing fetched from elsewhere). It is the only
// package-level variable here, because go:embed can fill no other kind;
// nothing writes to it.
//
//go:embed page.html
var adminPageHTML []byte

// adminPage serves the admin page at GET / of the admin listener: the
// origins and actors (/api/world), their weather (/api/weather), the
// follows (/api/follows) and the latest activities with their verdicts (/api/activities), kept live from
// /api/activities/stream. Its Content-Security-Policy allows exactly the
// page's own inline script and style (by hash) and requests to the admin
// API itself, so that whatever an activity carries cannot run or load
// anything in the browser of the person debugging.
type adminPage struct {
	body []byte
	etag string
	csp  string
}

// newAdminPage prepares the page: its ETag and its policy.
func newAdminPage(html []byte) (*adminPage, error) {
	scripts, styles := inlineHashes(html, "script"), inlineHashes(html, "style")
	if len(scripts) == 0 || len(styles) == 0 {
		return nil, fmt.Errorf("pasture: the admin page has no inline script or style")
	}
	sum := sha256.Sum256(html)
	return &adminPage{
		body: html,
		etag: `"` + hex.EncodeToString(sum[:16]) + `"`,
		csp: strings.Join([]string{
			"default-src 'none'",
			"script-src " + strings.Join(scripts, " "),
			"style-src " + strings.Join(styles, " "),
			"connect-src 'self'",
			"img-src data:",
			"base-uri 'none'",
			"form-action 'none'",
			"frame-ancestors 'none'",
		}, "; "),
	}, nil
}

// inlineHashes returns the CSP source ('sha256-…') of each inline
// <tag>…</tag> element's content.
func inlineHashes(html []byte, tag string) []string {
	re := regexp.MustCompile(`(?s)<` + tag + `(?:\s[^>]*)?>(.*?)</` + tag + `>`)
	var out []string
	for _, m := range re.FindAllSubmatch(html, -1) {
		sum := sha256.Sum256(m[1])
		out = append(out, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return out
}

// ServeHTTP answers GET and HEAD with the page; conditional requests get
// 304 (If-None-Match), so a reload costs nothing.
func (p *adminPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", p.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(p.body))
}

// mustAdminPage is newAdminPage for the embedded page, which the tests
// check: a failure here is a broken build, not a runtime condition.
func mustAdminPage() http.Handler {
	p, err := newAdminPage(withLivePanel(adminPageHTML))
	if err != nil {
		panic(err)
	}
	return p
}
