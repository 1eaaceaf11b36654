package pasture

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

func TestAdminPageIsServedAtTheRoot(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	get := func(method, path string, header http.Header) *http.Response {
		req := httptest.NewRequest(method, "http://localhost:9180"+path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		p.admin.ServeHTTP(rec, req)
		return rec.Result()
	}
	first := get("GET", "/", nil)
	etag := first.Header.Get("ETag")
	for _, c := range []struct {
		name   string
		method string
		path   string
		header http.Header
		status int
		body   string // substring; "" means an empty body
	}{
		// The page itself, as a browser asks for it.
		{"GET /", "GET", "/", nil, 200, "<title>crowd</title>"},
		// HEAD answers the headers only.
		{"HEAD /", "HEAD", "/", nil, 200, ""},
		// A reload with the ETag costs nothing.
		{"revalidation", "GET", "/", http.Header{"If-None-Match": {etag}}, 304, ""},
		// Only the root is the page: other paths are not found.
		{"another path", "GET", "/index.html", nil, 404, "serves no GET /index.html"},
		// The page is read-only.
		{"POST /", "POST", "/", http.Header{"Content-Type": {"application/json"}}, 405, ""},
		// The API is still there next to it.
		{"the world", "GET", adminapi.RouteWorld.Path(), nil, 200, `"origins"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := get(c.method, c.path, c.header)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if c.body == "" && c.status != 405 && len(b) != 0 {
				t.Errorf("want an empty body, got %d bytes", len(b))
			}
			if c.body != "" && !strings.Contains(string(b), c.body) {
				t.Errorf("body lacks %q", c.body)
			}
		})
	}
	for _, c := range []struct {
		header, want string
	}{
		{"Content-Type", "text/html; charset=utf-8"}, // a page, in UTF-8
		{"X-Content-Type-Options", "nosniff"},        // never sniffed as something else
		{"Cache-Control", "no-cache"},                // always revalidated: a new crowd version shows at once
		{"Referrer-Policy", "no-referrer"},           // links to a SUT do not leak the admin address
	} {
		if got := first.Header.Get(c.header); got != c.want {
			t.Errorf("%s: %q, want %q", c.header, got, c.want)
		}
	}
	if etag == "" {
		t.Error("no ETag")
	}
}

// TestAdminPagePolicy: the page is self-contained and its policy lets
// exactly its own inline script and style run, and nothing load from
// anywhere but the admin API: what an activity carries (it is written by
// whoever posts to the crowd) can neither run nor call out.
func TestAdminPagePolicy(t *testing.T) {
	page, err := newAdminPage(adminPageHTML)
	if err != nil {
		t.Fatal(err)
	}
	html := string(adminPageHTML)
	hash := func(tag string) string {
		m := regexp.MustCompile(`(?s)<` + tag + `>(.*?)</` + tag + `>`).FindStringSubmatch(html)
		if m == nil {
			t.Fatalf("no <%s> in the page", tag)
		}
		sum := sha256.Sum256([]byte(m[1]))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	for _, c := range []struct {
		name, want string
	}{
		{"nothing by default", "default-src 'none'"},
		{"the page's own script, by hash", "script-src " + hash("script") + ";"},
		{"the page's own style, by hash", "style-src " + hash("style") + ";"},
		{"requests to the admin API only", "connect-src 'self'"},
		{"no framing by another page", "frame-ancestors 'none'"},
	} {
		if !strings.Contains(page.csp+";", c.want) {
			t.Errorf("%s: the policy %q lacks %q", c.name, page.csp, c.want)
		}
	}
	if n := strings.Count(html, "<script"); n != 1 {
		t.Errorf("%d scripts: the policy is computed for one inline script", n)
	}
	for _, c := range []struct {
		name, pattern string
	}{
		// Nothing is loaded from elsewhere: no src or href to a URL …
		{"external src or href", `(?i)(src|href)\s*=\s*"(https?:)?//`},
		// … nor CSS imports or url() other than data:.
		{"CSS import", `(?i)@import`},
		{"CSS url() not data:", `\burl\(\s*['"]?[^'"d]`}, // lower case: CSS, not JS's new URL(…)
		// Activities are shown as text, never parsed as HTML.
		{"innerHTML", `innerHTML|outerHTML\s*=`},
		{"insertAdjacentHTML", `insertAdjacentHTML`},
		{"document.write", `document\.write`},
		{"eval", `\beval\(|new Function\(`},
		// Inline event handlers would be refused by the policy anyway.
		{"inline handler", `(?i)\son[a-z]+\s*=\s*"`},
		// So would style attributes: the page must not depend on them.
		{"style attribute", `(?i)\sstyle\s*=\s*"`},
	} {
		if m := regexp.MustCompile(c.pattern).FindString(html); m != "" {
			t.Errorf("%s: the page has %q", c.name, m)
		}
	}
}

func TestNewAdminPageWantsInlineScriptAndStyle(t *testing.T) {
	for _, c := range []struct {
		name string
		html string
		ok   bool
	}{
		// The shape of page.html.
		{"script and style", "<style>b{}</style><script>1</script>", true},
		// Attributes on the tags are fine.
		{"attributes", `<style media="all">b{}</style><script type="module">1</script>`, true},
		// Without a script the page could show nothing live: a broken build.
		{"no script", "<style>b{}</style>", false},
		// Without a style the policy would have no style source.
		{"no style", "<script>1</script>", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := newAdminPage([]byte(c.html))
			if (err == nil) != c.ok {
				t.Errorf("err %v, want ok=%v", err, c.ok)
			}
		})
	}
}
