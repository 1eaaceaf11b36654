package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// vocabEntry is one line of the Fedify SUT's log of what its listeners of
// the vocabulary verified and fetched (testpeers/README.md, GET /vocab).
type vocabEntry struct {
	Type, ID, Actor, Object, ObjectType, Kind, Updated string
	AttributedTo                                       string
	Fetched, Local, SameActor, SameOrigin              bool
	FetchStatus                                        *int // a Delete's object as Fedify fetched it while handling the Delete
	Parents                                            []struct {
		ID             string
		Fetched, Local bool
		Error          *string
	}
	Images []struct {
		URL              string
		Status, Bytes    int
		Width, Height    int
		PNG, SizeMatches bool
	}
	Tags []string
}

// TestVocabularyRealFedify sends every verb of the vocabulary to a real
// Fedify 1.5.9 through a running crowd: each is verified and accepted (none
// rejected, the crowd's 202s are Fedify's verified counts type by type), and
// Fedify's own log shows what each made it do: fetch a boosted note it had
// not seen, walk a reply's thread of crowd notes up to its root, download
// the images at the size they claim, take Undos of what their actor did,
// Deletes of notes and of never-met accounts, Updates of notes and
// profiles. Then the crowd answers the deleted notes and accounts with 410
// and a Tombstone, and an edited note with its latest version.
func TestVocabularyRealFedify(t *testing.T) {
	t.Parallel()
	f := startFederation(t, 3)
	// JIT signing drafts each send when it is due, so Undos, Updates and
	// Deletes find what the run sent a moment before (a pipeline drafts a
	// buffer ahead). An Undo draws at random from what the SUT has
	// answered by then, which depends on its pace: an Undo drawn with
	// nothing answered left to undo goes out as an Announce, which a later
	// Undo may draw in turn. On a busy machine Fedify once answered nothing for the run's
	// first 5 s or so: 18 of 40 Undos went out as Announces, and the other
	// 22 drew from 43 Announces, 15 Likes and 12 Follows, none a Follow.
	// The run is long enough that each kind is drawn even after such a
	// start: 20 s leaves about 50 Undos after it, where 12 s left 22.
	rec, _ := f.flood(t, "vocab", "--rate", "15", "--seconds", "20", "--timeout", "60s",
		"--signing", "jit", "--seed", "14", "--mix", "create=1,like=2,follow=2,announce=2,undo=4,delete=2,update=2,reply=2,media=1",
		"--reply-depth", "3", "--mentions", "1", "--hashtags", "2", "--media-count", "2", "--media-size", "64x48")
	var stats struct {
		Verified        map[string]int64 `json:"verified"`
		RejectedTotal   int64            `json:"rejectedTotal"`
		GoneSelfDeletes int64            `json:"goneSelfDeletes"`
		FailedTotal     int64            `json:"failedTotal"`
		Rejections      []struct{ Type, Reason string }
	}
	f.call(t, "GET", fedifyCtl+"/stats", nil, &stats)
	var vocab []vocabEntry
	f.call(t, "GET", fedifyCtl+"/vocab", nil, &vocab)
	t.Logf("crowd: %+v; Fedify verified %v, %d log entries", rec.Overall.Counts, stats.Verified, len(vocab))

	if stats.RejectedTotal != 0 || stats.FailedTotal != 0 {
		t.Errorf("Fedify rejected %d and failed %d: %+v", stats.RejectedTotal, stats.FailedTotal, stats.Rejections)
	}
	// Replies and media are Creates on the wire.
	wire := map[string]string{"Reply": "Create", "Media": "Create"}
	fedify := map[string]int64{}
	for typ, r := range rec.Types {
		w := typ
		if wire[typ] != "" {
			w = wire[typ]
		}
		fedify[w] += r.Tally["202"]
		if typ != "all" && r.Tally["202"] == 0 {
			t.Errorf("%s: the crowd tallied no 202", typ)
		}
	}
	for _, typ := range []string{"Create", "Like", "Follow", "Announce", "Undo", "Delete", "Update", "Reply", "Media"} {
		if _, ok := rec.Types[typ]; !ok {
			t.Errorf("no %s sent: %v", typ, rec.Types)
		}
	}
	// A self-Delete of a gone account cannot be verified: Fedify answers it
	// 202 unverified, as Mastodon answers one of an account it does not hold.
	stats.Verified["Delete"] += stats.GoneSelfDeletes
	for typ, n := range fedify {
		if typ != "all" && n != stats.Verified[typ] {
			t.Errorf("%s: the crowd tallied %d × 202, Fedify verified %d", typ, n, stats.Verified[typ])
		}
	}
	// Every Delete's object (note or account) was gone from the moment the
	// Delete was drafted: Fedify, fetching it while it handled the Delete,
	// saw 410 each time.
	deletes := 0
	for _, e := range vocab {
		if e.Type != "Delete" {
			continue
		}
		deletes++
		if e.FetchStatus == nil || *e.FetchStatus != http.StatusGone {
			t.Errorf("Fedify fetched the %s %s while handling its Delete: %s, want 410", e.Kind, e.Object, statusSeen(e.FetchStatus))
		}
	}
	if deletes == 0 {
		t.Error("Fedify logged no Delete")
	}
	// Every attachment has its own URL, and Fedify downloaded each once.
	images := map[string]int{}
	for _, e := range vocab {
		for _, im := range e.Images {
			images[im.URL]++
		}
	}
	if sent := int(rec.Types["Media"].Tally["202"]) * 2; len(images) != sent {
		t.Errorf("%d images sent (2 a media note), Fedify downloaded %d distinct URLs", sent, len(images))
	}
	for u, n := range images {
		if n != 1 {
			t.Errorf("%s downloaded for %d notes", u, n)
		}
	}

	seen, deleted, edited := whatFedifyDid(vocab)
	for _, want := range []string{"a Delete of an account it met", "a Delete of an account it never met", "an unseen boosted note fetched", "a persona's post boosted", "an Undo of its actor's Like",
		"an Undo of its actor's Announce", "an Undo of its actor's Follow", "a Delete of a note", "a Delete of a actor",
		"an Update of a Note", "an Update of a Person", "a reply's thread fetched to its root", "an image downloaded at its size",
		"mentions and hashtags"} {
		if !seen[want] {
			t.Errorf("Fedify's log shows no %s", want)
		}
	}
	// What was deleted answers 410 with a Tombstone; what was edited, its
	// latest version (recorded once the SUT answered the Update 2xx).
	eventually(t, 10*time.Second, "the deleted objects answer 410", func() bool {
		for _, id := range deleted {
			if code, body := f.get(t, id); code != http.StatusGone || !strings.Contains(body, `"Tombstone"`) {
				return false
			}
		}
		return len(deleted) > 0
	})
	for _, id := range edited {
		if slices.Contains(deleted, id) {
			continue // edited, then deleted
		}
		if code, body := f.get(t, id); code != 200 || !strings.Contains(body, `"updated"`) || !strings.Contains(body, "Edit ") {
			t.Errorf("the edited note %s: %d\n%s", id, code, body)
		}
	}
}

// statusSeen is a status Fedify logged, or "no answer".
func statusSeen(status *int) string {
	if status == nil {
		return "no answer"
	}
	return fmt.Sprint(*status)
}

// whatFedifyDid reads the Fedify SUT's vocabulary log: what it was seen to
// do (each a phrase the test looks for), the ids it saw deleted and the
// notes it saw edited.
func whatFedifyDid(vocab []vocabEntry) (seen map[string]bool, deleted, edited []string) {
	seen = map[string]bool{}
	met := map[string]bool{} // authors of the boosted notes it fetched
	for _, e := range vocab {
		switch {
		case e.Type == "Announce" && e.Fetched && e.SameOrigin:
			seen["an unseen boosted note fetched"] = true
			met[e.AttributedTo] = true
		case e.Type == "Announce" && e.Local:
			seen["a persona's post boosted"] = true
		case e.Type == "Undo" && e.SameActor:
			seen["an Undo of its actor's "+e.ObjectType] = true
		case e.Type == "Delete" && e.SameOrigin:
			seen["a Delete of a "+e.Kind] = true
			deleted = append(deleted, e.Object)
		case e.Type == "Update" && e.SameActor && e.Updated != "":
			seen["an Update of a "+e.ObjectType] = true
			if e.ObjectType == "Note" {
				edited = append(edited, e.Object)
			}
		case e.Type == "Create":
			createSeen(e, seen)
		}
	}
	for _, e := range vocab {
		if e.Type == "Delete" && e.Kind == "actor" {
			if met[e.Object] {
				seen["a Delete of an account it met"] = true
			} else {
				seen["a Delete of an account it never met"] = true
			}
		}
	}
	return seen, deleted, edited
}

// createSeen notes what a Create's log entry shows Fedify did: a reply's
// thread fetched to its root (3 levels, the root maybe its own post), an
// image downloaded at its size, mentions and hashtags read.
func createSeen(e vocabEntry, seen map[string]bool) {
	fetched := 0
	for _, p := range e.Parents {
		if p.Fetched {
			fetched++
		}
	}
	if len(e.Parents) == 3 && (fetched == 3 || fetched == 2 && e.Parents[2].Local) {
		seen["a reply's thread fetched to its root"] = true
	}
	for _, im := range e.Images {
		if im.Status == 200 && im.PNG && im.SizeMatches && im.Width == 64 {
			seen["an image downloaded at its size"] = true
		}
	}
	if len(e.Tags) >= 3 {
		seen["mentions and hashtags"] = true
	}
}

// flood runs `crowd flood` attached to the federation's crowd, at its
// personas load0…load2 with args, and reads the record it wrote (labelled
// label); it answers the flood's output too.
func (f *federation) flood(t *testing.T, label string, args ...string) (floodRecord, []byte) {
	t.Helper()
	var rec floodRecord
	_, output := f.floodInto(t, label, &rec, args...)
	return rec, output
}

// floodInto is flood reading the record into rec (any shape of it); it
// answers the record's bytes and the flood's output.
func (f *federation) floodInto(t *testing.T, label string, rec any, args ...string) ([]byte, []byte) {
	t.Helper()
	raw, output, code := f.floodExit(t, label, rec, args...)
	if code != 0 {
		t.Fatalf("crowd flood: exit %d\n%s", code, output)
	}
	return raw, output
}

// floodExit is floodInto answering the flood's exit status instead of
// failing the test on one but 0 (a missed gate exits 1 and still writes
// its record).
func (f *federation) floodExit(t *testing.T, label string, rec any, args ...string) (raw, output []byte, code int) {
	t.Helper()
	out := t.TempDir()
	args = append(append([]string{"flood"}, args...), "--personas", "load%d@sut.test", "--count", "3",
		"--admin", "127.0.0.1:9180", "--state", f.state, "--out", out, "--label", label, "--log-format", "json")
	output, err := f.ns.Command(context.Background(), BuildCrowd(t), args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("crowd flood: %v\n%s", err, output)
	}
	paths, _ := filepath.Glob(filepath.Join(out, "*-"+label+".json"))
	if len(paths) != 1 {
		t.Fatalf("want one record in %s, got %v\n%s", out, paths, output)
	}
	raw, err = os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, rec); err != nil {
		t.Fatal(err)
	}
	return raw, output, code
}

// get fetches a document the crowd serves, over HTTPS by name, on any of
// the default world's 20 origins.
func (f *federation) get(t *testing.T, url string) (int, string) {
	t.Helper()
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(f.state, "tls", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	resolve := map[string]string{}
	for i := 1; i <= 20; i++ {
		resolve[fmt.Sprintf("flood%d.test", i)] = "127.0.0.1"
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/activity+json")
	resp, err := f.ns.HTTPClient(resolve, &tls.Config{RootCAs: pool}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}
