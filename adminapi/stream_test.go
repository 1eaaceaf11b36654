package adminapi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

// TestReadStream: events in order, lost counts summed into the next entry, pings
// and unknown events skipped, multi-line data joined, a last event without its
// blank line delivered; a broken event is an error.
func TestReadStream(t *testing.T) {
	stream := ": ping\n\n" +
		"id: 1\nevent: activity\ndata: {\"seq\":1,\"type\":\"Like\"}\n\n" +
		"event: lost\ndata: {\"lost\":3}\n\n" +
		"event: lost\ndata: {\"lost\":2}\n\n" +
		"event: other\ndata: whatever\n\n" +
		"id: 7\nevent: activity\ndata: {\"seq\":7,\n" + "data: \"type\":\"Follow\"}\n\n" +
		"event: activity\ndata: {\"seq\":8}" // no final blank line: still delivered
	var got []adminapi.Event
	if err := adminapi.ReadStream(strings.NewReader(stream), func(e adminapi.Event) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Entry.Type != "Like" || got[0].Lost != 0 || got[1].Entry.Seq != 7 || got[1].Entry.Type != "Follow" ||
		got[1].Lost != 5 || got[2].Entry.Seq != 8 {
		t.Errorf("events %+v", got)
	}
	err := adminapi.ReadStream(strings.NewReader("event: activity\ndata: {nope\n\n"), func(adminapi.Event) error { return nil })
	if err == nil {
		t.Error("a broken event was accepted")
	} else if !errors.Is(err, adminapi.ErrBadAnswer) {
		t.Errorf("a broken event: %v, want ErrBadAnswer", err)
	}
}

func FuzzReadStream(f *testing.F) {
	f.Add("event: activity\ndata: {\"seq\":1}\n\nevent: lost\ndata: {\"lost\":1}\n\n: ping\n\n")
	f.Add("data: {}\n\ndata\n\nevent\n\n::\n")
	f.Fuzz(func(t *testing.T, s string) {
		adminapi.ReadStream(strings.NewReader(s), func(adminapi.Event) error { return nil })
	})
}
