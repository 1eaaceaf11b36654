package inbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crowdfed/crowd/adminapi"
)

// The admin API gives entries in the journal's JSON: the stream's data
// line is the journal's line, byte for byte, and /api/activities (which
// indents its answer) reads back to the body as it was received.
func TestAdminAPIGivesTheJournalsJSON(t *testing.T) {
	f := newFixture(t, false)
	admin := adminServer(t, f)
	body := bytes.Replace(likeJSON(remoteID("bob")), []byte(`"type":"Like"`), []byte(`"type":"Like","content":"<p>a & b</p>"`), 1)
	if code, msg := f.deliver("/users/alice/inbox", "bob", body); code != http.StatusAccepted {
		t.Fatalf("delivery answered %d %s", code, msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin.URL+adminapi.RouteStream.Path()+"?backlog=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	sc := bufio.NewScanner(resp.Body)
	for i := 0; i < 10 && data == nil && sc.Scan(); i++ {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			data = append(d, '\n')
		}
	}
	cancel()
	resp.Body.Close()
	resp, err = http.Get(admin.URL + adminapi.RouteActivities.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []Entry
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Body != string(body) {
		t.Errorf("/api/activities gives %+v, want the body %s", list, body)
	}
	if err := f.in.Shutdown(context.Background()); err != nil { // flushes the journal
		t.Fatal(err)
	}
	journal, err := os.ReadFile(filepath.Join(f.state, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, journal) || !bytes.Contains(data, append([]byte(`"body":`), body...)) {
		t.Errorf("the stream gives\n%s\nthe journal holds\n%s", data, journal)
	}
}
