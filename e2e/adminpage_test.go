package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

// TestAdminPage opens the admin page of a real `crowd serve` in headless
// Chromium and checks what its JavaScript made of the admin API: the
// origins and actors, the follow that `crowd send` made, the activities
// with their verdicts (a rejected one coloured apart), an activity that
// arrives while the page is open (the EventSource), and the filter box.
// It also takes a screenshot, which must be a sound PNG of the window.
//
// Chromium is driven over the DevTools protocol (--remote-debugging-pipe)
// rather than with --dump-dom: the page keeps its EventSource open for
// ever, and --virtual-time-budget never runs out while a fetch is
// pending, while without it --dump-dom prints the DOM at the load event,
// before the page's own requests have come back.
func TestAdminPage(t *testing.T) {
	RequireTools(t, "chromium")
	bin := BuildCrowd(t)
	admin, plain := freeLoopbackAddr(t), freeLoopbackAddr(t)
	StartProcess(t, exec.Command(bin, "serve", "--state", t.TempDir(), "--origins", "2", "--actors", "3",
		"--https", "", "--http", plain, "--dns", "", "--admin", admin, "--log-format", "json"),
		readyAdmin(admin))
	crowdCLI := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--admin", admin)...).CombinedOutput()
		if err != nil {
			t.Fatalf("crowd %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// A follow between two crowd actors, through the binary: Follow out and
	// in, then bob's Accept out and in.
	if out := crowdCLI("send", "--from", "alice@flood1.test", "--type", "Follow", "--to", "acct:bob@flood2.test"); !strings.Contains(out, "→ 202 Accepted") {
		t.Fatalf("crowd send: %s", out)
	}
	// A request the crowd rejects: an unsigned Like, over plain HTTP.
	req, _ := http.NewRequest(http.MethodPost, "http://"+plain+"/users/carol/inbox",
		strings.NewReader(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://sut.test/likes/1","type":"Like","actor":"https://sut.test/users/mallory","object":"https://flood1.test/users/carol"}`))
	req.Host = "flood1.test"
	req.Header.Set("Content-Type", "application/activity+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unsigned Like was answered %d, want 401", resp.StatusCode)
	}

	// The page as served holds none of this: whatever the browser shows
	// beyond it, the page's JavaScript fetched and rendered.
	resp, err = http.Get("http://" + admin + "/")
	if err != nil {
		t.Fatal(err)
	}
	static, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range []string{"flood1.test", "flood2.test", "alice@flood1", "Accept(Follow)", "mallory"} {
		if bytes.Contains(static, []byte(s)) {
			t.Fatalf("the static page already contains %q: the test could not tell that the JavaScript ran", s)
		}
	}

	browser := startChromium(t)
	page := browser.open(t, "http://"+admin+"/")
	page.waitUntil(t, `document.body.dataset.loaded === "yes" && document.body.dataset.state === "live" &&
		document.querySelectorAll("tr.act").length >= 5 && document.querySelectorAll("#follows .state-accepted").length >= 2`)

	// Live: an activity sent now reaches the open page through the stream.
	crowdCLI("send", "--from", "bob@flood2.test", "--type", "Create", "--to", "acct:alice@flood1.test")
	page.waitUntil(t, `[...document.querySelectorAll("tr.act td.type")].filter(td => td.textContent === "Create(Note)").length === 2`)

	var view struct {
		Status  string   `json:"status"`
		Counts  string   `json:"counts"`
		Origins []string `json:"origins"`
		Actors  []string `json:"actors"`
		Follows string   `json:"follows"`
		Rows    []struct {
			Class string `json:"class"`
			Text  string `json:"text"`
			Back  string `json:"back"`
		} `json:"rows"`
	}
	page.eval(t, `JSON.stringify({
		status: document.getElementById("status").textContent,
		counts: document.getElementById("counts").textContent,
		origins: [...document.querySelectorAll("#world h3")].map(e => e.textContent),
		actors: [...document.querySelectorAll("#world .actor")].map(e => e.title.split("\n")[0]),
		follows: document.getElementById("follows").innerText,
		rows: [...document.querySelectorAll("tr.act")].map(r => ({class: r.className, text: r.innerText.replace(/\s+/g, " "),
			back: getComputedStyle(r).backgroundColor})),
	})`, &view)

	if view.Status != "live" {
		t.Errorf("status %q, want live", view.Status)
	}
	if strings.Join(view.Origins, " ") != "flood1.test flood2.test" {
		t.Errorf("origins %q", view.Origins)
	}
	if len(view.Actors) != 6 || view.Actors[0] != "alice@flood1.test" || view.Actors[5] != "carol@flood2.test" {
		t.Errorf("actors %q", view.Actors)
	}
	for _, want := range []string{"origins 2", "actors 6", "problems 1"} {
		if !strings.Contains(view.Counts, want) {
			t.Errorf("counts %q lack %q", view.Counts, want)
		}
	}
	for _, want := range []string{"alice@flood1.test", "bob@flood2.test", "accepted"} {
		if !strings.Contains(view.Follows, want) {
			t.Errorf("follows %q lack %q", view.Follows, want)
		}
	}
	var rows []string
	backs := map[string]string{} // verdict class → background colour
	for _, r := range view.Rows {
		rows = append(rows, r.Class+" | "+r.Text)
		backs[strings.Fields(r.Class)[1]] = r.Back
	}
	all := strings.Join(rows, "\n")
	for _, want := range []string{
		"act v-sent | ", "out Follow alice@flood1.test → bob@flood2.test sent 202",
		"act v-accepted | ", "in Follow alice@flood1.test → bob@flood2.test accepted 202",
		"act v-delivered | ", "out Accept(Follow) bob@flood2.test → alice@flood1.test delivered 202",
		"in Accept(Follow) bob@flood2.test → alice@flood1.test accepted 202",
		"act v-rejected problem | ", "in Like mallory@sut.test → carol@flood1.test rejected 401",
		"in Create(Note) bob@flood2.test →",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the activity rows lack %q:\n%s", want, all)
		}
	}
	if backs["v-rejected"] == "" || backs["v-rejected"] == backs["v-accepted"] {
		t.Errorf("a rejected row is not coloured apart: %v", backs)
	}

	dom := page.evalString(t, `document.documentElement.outerHTML`)
	shot := page.screenshot(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "adminpage.html"), []byte(dom), 0o644)
	shotPath := filepath.Join(dir, "adminpage.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() < 800 || img.Bounds().Dy() < 600 {
		t.Errorf("screenshot %s (%d bytes): %v", shotPath, len(shot), err)
	}
	if !strings.Contains(dom, `<h3>flood2.test</h3>`) || !strings.Contains(dom, `data-seq="`) {
		t.Errorf("the DOM lacks the rendered world or rows; see %s", filepath.Join(dir, "adminpage.html"))
	}

	// The filter box: by type, then by actor.
	for _, c := range []struct {
		filter string
		rows   int
	}{
		{"Create", 2},                      // the Create, in and out
		{"mallory", 1},                     // the rejected Like, by its sender
		{"accept(follow) alice@flood1", 2}, // words combine: the Accept to alice, in and out
		{"", 7},                            // everything again
	} {
		n := page.evalString(t, fmt.Sprintf(`(() => { const f = document.getElementById("filter"); f.value = %q;
			f.dispatchEvent(new Event("input")); return String(document.querySelectorAll("tr.act").length); })()`, c.filter))
		if n != fmt.Sprint(c.rows) {
			t.Errorf("filter %q shows %s rows, want %d", c.filter, n, c.rows)
		}
	}
}

// freeLoopbackAddr returns 127.0.0.1:PORT for a port that was free a
// moment ago (bound, then released): `crowd serve` cannot report the
// port it picked for :0.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestAdminPageCountsEveryEntry: the page's header counts every entry the
// activity log holds (its totals, which survive restarts), not only the
// 1 000 the page keeps: 1 200 refused deliveries show as 1 200 problems.
func TestAdminPageCountsEveryEntry(t *testing.T) {
	RequireTools(t, "chromium")
	bin := BuildCrowd(t)
	admin, plain := freeLoopbackAddr(t), freeLoopbackAddr(t)
	StartProcess(t, exec.Command(bin, "serve", "--state", t.TempDir(), "--origins", "1", "--actors", "1",
		"--https", "", "--http", plain, "--dns", "", "--admin", admin, "--log-format", "json"),
		readyAdmin(admin))

	const refused = 1200 // more than the page keeps (MAX in page.html)
	for i := range refused {
		req, _ := http.NewRequest(http.MethodPost, "http://"+plain+"/users/alice/inbox",
			strings.NewReader(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://sut.test/likes/%d","type":"Like","actor":"https://sut.test/users/mallory","object":"https://flood1.test/users/alice"}`, i)))
		req.Host = "flood1.test"
		req.Header.Set("Content-Type", "application/activity+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("an unsigned Like was answered %d, want 401", resp.StatusCode)
		}
	}
	var totals struct{ Entries, Problems uint64 }
	resp, err := http.Get("http://" + admin + "/api/activities/totals")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&totals)
	resp.Body.Close()
	if err != nil || totals.Problems < refused {
		t.Fatalf("totals %+v (%v): want at least %d problems", totals, err, refused)
	}

	page := startChromium(t).open(t, "http://"+admin+"/")
	page.waitUntil(t, `document.body.dataset.loaded === "yes" && document.body.dataset.state === "live"`)
	counts := page.evalString(t, `document.getElementById("counts").textContent`)
	for _, want := range []string{fmt.Sprintf("activities %d", totals.Entries), fmt.Sprintf("problems %d", totals.Problems)} {
		if !strings.Contains(counts, want) {
			t.Errorf("counts %q lack %q", counts, want)
		}
	}
}

// readyAdmin is ready once the crowd's admin API at admin answers /readyz
// with 200 (every listener is up).
func readyAdmin(admin string) ReadyFunc {
	return func(ctx context.Context, p *Process) error {
		resp, err := http.Get("http://" + admin + adminapi.RouteReady.Path())
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: HTTP %d", resp.StatusCode)
		}
		return nil
	}
}
