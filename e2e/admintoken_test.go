package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

// TestAdminTokenOffLoopback runs `crowd serve --admin 0.0.0.0:9180` in a
// network namespace of its own (the wildcard reaches nothing but the
// namespace): the binary makes its token into --state, keeps the probes
// open, refuses the rest without the token (nothing done), lets the CLI
// in with the token file, and logs a login link that works once.
func TestAdminTokenOffLoopback(t *testing.T) {
	t.Parallel()
	ns, bin, state, serve := startOffLoopbackCrowd(t)
	const admin = "http://127.0.0.1:9180"
	plain := ns.HTTPClient(nil, nil)
	status := func(c *http.Client, method, url, token string) (int, string) {
		t.Helper()
		return adminStatus(t, c, method, url, token)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/ca.pem"} {
		if code, body := status(plain, "GET", admin+path, ""); code != 200 {
			t.Errorf("%s without a token: %d %s, want 200 (an open route)", path, code, body)
		}
	}
	if code, _ := status(plain, "PUT", admin+"/api/weather", ""); code != http.StatusUnauthorized {
		t.Errorf("PUT /api/weather without a token: %d, want 401", code)
	}

	// The CLI with a --state that holds no token: the clear error, and the weather unchanged.
	out, err := ns.Command(context.Background(), bin, "weather", "set", "down=flood2.test", "--admin", "127.0.0.1:9180", "--state", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--admin-token") || !strings.Contains(string(out), "CROWD_ADMIN_TOKEN") {
		t.Errorf("crowd weather set without the token: %v\n%s\nwant a failure naming --admin-token and CROWD_ADMIN_TOKEN", err, out)
	}
	// With the crowd's --state, the token file is read: the weather changes.
	ns.Run(t, bin, "weather", "set", "down=flood2.test", "--admin", "127.0.0.1:9180", "--state", state)
	token := strings.TrimSpace(ns.Run(t, "cat", state+"/admin-token"))
	if code, body := status(plain, "GET", admin+"/api/weather", token); code != 200 || !strings.Contains(body, "flood2.test") {
		t.Errorf("the weather after crowd weather set with the token file: %d %s", code, body)
	}

	link := loginLink(t, serve.Output())
	jar, _ := cookiejar.New(nil)
	browser := ns.HTTPClient(nil, nil)
	browser.Jar = jar
	if code, body := status(browser, "GET", link, ""); code != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("the login link %s: %d, want the admin page", link, code)
	}
	if code, body := status(browser, "GET", admin+"/api/world", ""); code != 200 {
		t.Errorf("the page's read with its cookie: %d %s", code, body)
	}
	if code, _ := status(plain, "GET", link, ""); code != http.StatusUnauthorized {
		t.Errorf("the login link a second time: %d, want 401", code)
	}
}

// startOffLoopbackCrowd runs `crowd serve --admin 0.0.0.0:9180` in a
// namespace of its own, ready once it logged its admin page link.
func startOffLoopbackCrowd(t *testing.T) (ns *Netns, bin, state string, serve *Process) {
	t.Helper()
	ns = NewNetns(t)
	bin = BuildCrowd(t)
	state = t.TempDir()
	serve = StartProcess(t, ns.Command(context.Background(), bin, "serve", "--state", state, "--origins", "2", "--actors", "2",
		"--https", "", "--http", "127.0.0.1:8080", "--dns", "", "--admin", "0.0.0.0:9180", "--log-format", "json"),
		ReadyOutput(`admin page: `))
	return ns, bin, state, serve
}

// adminStatus calls url with method (a weather spec as body) and token
// ("": none) and returns the status and the body's start.
func adminStatus(t *testing.T, c *http.Client, method, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(`{"spec":"down=flood2.test"}`))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}

// TestAdminPageLoginLink: the login link `crowd serve` logs, opened in
// Chromium, shows the admin page with the world it fetched through its
// cookie; the link then works no more.
func TestAdminPageLoginLink(t *testing.T) {
	t.Parallel()
	RequireTools(t, "chromium")
	ns, _, _, serve := startOffLoopbackCrowd(t)
	link := loginLink(t, serve.Output())
	page := startChromiumIn(t, ns).open(t, link)
	page.waitUntil(t, `document.body.dataset.loaded === "yes" && document.body.dataset.state === "live" &&
		document.body.textContent.includes("flood2.test")`)
	if code, _ := adminStatus(t, ns.HTTPClient(nil, nil), "GET", link, ""); code != http.StatusUnauthorized {
		t.Errorf("the login link after the browser used it: %d, want 401", code)
	}
}

// loginLink is the admin page's link that `crowd serve` logged.
func loginLink(t *testing.T, log string) string {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		var e struct{ Msg string }
		if json.Unmarshal([]byte(line), &e) == nil && strings.HasPrefix(e.Msg, "admin page: ") {
			link := strings.TrimPrefix(e.Msg, "admin page: ")
			if !strings.Contains(link, "/login?once=") {
				t.Fatalf("the logged link %q is no login link", link)
			}
			return link
		}
	}
	t.Fatalf("crowd serve logged no admin page link:\n%s", log)
	return ""
}
