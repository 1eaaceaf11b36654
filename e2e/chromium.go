package e2e

// A small driver for headless Chromium over the DevTools protocol on a
// pipe, for tests that open a page and look at what it shows: enough to
// navigate, evaluate JavaScript, wait for a condition and take
// screenshots, and nothing more (no dependency on a CDP library).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// chromium is a headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: commands in on its fd 3, answers out on
// its fd 4, each a JSON message ended by a NUL byte).
type chromium struct {
	in io.Writer

	mu      sync.Mutex
	next    int
	waiting map[int]chan cdpAnswer
	dead    error
}

// cdpAnswer is the answer to one DevTools command.
type cdpAnswer struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// startChromium starts headless Chromium (stopped at cleanup) with a
// profile in the test's temporary folder.
func startChromium(t *testing.T) *chromium {
	t.Helper()
	return startChromiumIn(t, nil)
}

// startChromiumIn is startChromium inside ns (nil: the host's network), for
// pages served in a test's namespace.
func startChromiumIn(t *testing.T, ns *Netns) *chromium {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,900", "--remote-debugging-pipe", "about:blank"}
	cmd := exec.Command("chromium", args...)
	if ns != nil {
		cmd = ns.Command(context.Background(), "chromium", args...)
	}
	cmd.ExtraFiles = []*os.File{cmdR, outW} // fd 3, fd 4
	StartProcess(t, cmd, nil)
	cmdR.Close()
	outW.Close()
	t.Cleanup(func() { cmdW.Close(); outR.Close() })
	c := &chromium{in: cmdW, waiting: map[int]chan cdpAnswer{}}
	go c.read(outR)
	return c
}

// read dispatches answers to their callers; events are ignored.
func (c *chromium) read(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			c.mu.Lock()
			c.dead = fmt.Errorf("chromium closed its DevTools pipe: %v", err)
			for id, ch := range c.waiting {
				close(ch)
				delete(c.waiting, id)
			}
			c.mu.Unlock()
			return
		}
		var a cdpAnswer
		if json.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &a) != nil || a.ID == 0 {
			continue
		}
		c.mu.Lock()
		ch := c.waiting[a.ID]
		delete(c.waiting, a.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// call sends one command (to the browser when session is "", else to
// that page) and decodes its result into result (when not nil).
func (c *chromium) call(t *testing.T, session, method string, params, result any) {
	t.Helper()
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		t.Fatalf("%s: %v", method, c.dead)
	}
	c.next++
	id := c.next
	ch := make(chan cdpAnswer, 1)
	c.waiting[id] = ch
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	_, err := c.in.Write(append(b, 0))
	c.mu.Unlock()
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case a, ok := <-ch:
		switch {
		case !ok:
			t.Fatalf("%s: chromium went away", method)
		case a.Error != nil:
			t.Fatalf("%s: %s", method, a.Error.Message)
		case result != nil:
			if err := json.Unmarshal(a.Result, result); err != nil {
				t.Fatalf("%s: %v in %s", method, err, a.Result)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer from chromium within 30 s", method)
	}
}

// chromiumPage is one tab.
type chromiumPage struct {
	c       *chromium
	session string
}

// open makes a tab, loads url in it, and returns it.
func (c *chromium) open(t *testing.T, url string) *chromiumPage {
	t.Helper()
	var target struct {
		TargetID string `json:"targetId"`
	}
	c.call(t, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	c.call(t, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	p := &chromiumPage{c: c, session: att.SessionID}
	c.call(t, p.session, "Page.enable", map[string]any{}, nil)
	c.call(t, p.session, "Page.navigate", map[string]any{"url": url}, nil)
	return p
}

// eval evaluates a JavaScript expression that yields a JSON string and
// decodes it into v.
func (p *chromiumPage) eval(t *testing.T, expr string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(p.evalString(t, expr)), v); err != nil {
		t.Fatalf("%v", err)
	}
}

// evalString evaluates a JavaScript expression that yields a string.
func (p *chromiumPage) evalString(t *testing.T, expr string) string {
	t.Helper()
	var r struct {
		Result struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	p.c.call(t, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		t.Fatalf("JavaScript threw: %s %s\n%s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description, expr)
	}
	var s string
	if err := json.Unmarshal(r.Result.Value, &s); err != nil {
		t.Fatalf("%s is a %s, not a string: %s", expr, r.Result.Type, r.Result.Value)
	}
	return s
}

// waitUntil polls a JavaScript condition until it holds (a condition
// that throws does not hold), failing after 20 s with what the page shows.
func (p *chromiumPage) waitUntil(t *testing.T, cond string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		// While the page loads, document.body may not be there yet: that is
		// "not yet", not a failure.
		if p.evalString(t, "(() => { try { return String(Boolean("+cond+")); } catch { return 'false'; } })()") == "true" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never got to %s\nit shows:\n%s", cond, p.evalString(t, "document.body.innerText"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshot captures the tab as PNG.
func (p *chromiumPage) screenshot(t *testing.T) []byte {
	t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	p.c.call(t, p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// screenshotFull captures the whole page, beyond the window, as PNG at
// one device pixel per CSS pixel.
func (p *chromiumPage) screenshotFull(t *testing.T) []byte {
	t.Helper()
	var m struct {
		CSSContentSize struct {
			Width  float64 `json:"width"`
			Height float64 `json:"height"`
		} `json:"cssContentSize"`
	}
	p.c.call(t, p.session, "Page.getLayoutMetrics", map[string]any{}, &m)
	var r struct {
		Data string `json:"data"`
	}
	p.c.call(t, p.session, "Page.captureScreenshot", map[string]any{
		"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": math.Ceil(m.CSSContentSize.Width),
			"height": math.Ceil(m.CSSContentSize.Height), "scale": 1},
	}, &r)
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
