package inbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/internal/jsonquote"
)

func TestParseActivity(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    Activity // Embedded is not compared
		wantErr string   // substring of the error; "" means success
	}{
		// The usual shape: everything a string.
		{"like", `{"id":"https://a.test/l/1","type":"Like","actor":"https://a.test/u/x","object":"https://b.test/n/1"}`,
			Activity{ID: "https://a.test/l/1", Type: "Like", Actor: "https://a.test/u/x", Objects: []Ref{{ID: "https://b.test/n/1"}}}, ""},
		// Mastodon's Undo embeds the Follow: its actor and object are extracted.
		{"undo embedded follow", `{"id":"https://a.test/u/1","type":"Undo","actor":"https://a.test/u/x","object":{"id":"https://a.test/f/1","type":"Follow","actor":"https://a.test/u/x","object":"https://c.test/users/alice"}}`,
			Activity{ID: "https://a.test/u/1", Type: "Undo", Actor: "https://a.test/u/x",
				Objects: []Ref{{ID: "https://a.test/f/1", Type: "Follow", Actor: "https://a.test/u/x", Object: "https://c.test/users/alice"}}}, ""},
		// JSON-LD lets type be an array and actor an object: first wins.
		{"type array, actor object", `{"id":"https://a.test/1","type":["Create","Extra"],"actor":{"id":"https://a.test/u/x","type":"Person"},"object":{"id":"https://a.test/n/1","type":"Note"}}`,
			Activity{ID: "https://a.test/1", Type: "Create", Actor: "https://a.test/u/x", Objects: []Ref{{ID: "https://a.test/n/1", Type: "Note"}}}, ""},
		// An object array keeps every element.
		{"object array", `{"id":"https://a.test/1","type":"Delete","actor":"https://a.test/u/x","object":["https://a.test/n/1",{"id":"https://a.test/n/2","type":"Tombstone"}]}`,
			Activity{ID: "https://a.test/1", Type: "Delete", Actor: "https://a.test/u/x", Objects: []Ref{{ID: "https://a.test/n/1"}, {ID: "https://a.test/n/2", Type: "Tombstone"}}}, ""},
		// An actor array: the first usable id.
		{"actor array", `{"id":"https://a.test/1","type":"Announce","actor":[null,"https://a.test/u/x"],"object":"https://b.test/n/1"}`,
			Activity{ID: "https://a.test/1", Type: "Announce", Actor: "https://a.test/u/x", Objects: []Ref{{ID: "https://b.test/n/1"}}}, ""},
		// No object at all is fine for the parser.
		{"no object", `{"id":"https://a.test/1","type":"Update","actor":"https://a.test/u/x"}`,
			Activity{ID: "https://a.test/1", Type: "Update", Actor: "https://a.test/u/x"}, ""},
		// Garbage.
		{"not json", `this is not json`, Activity{}, "not a JSON object"},
		// An array at the top level.
		{"array", `[{"id":"x"}]`, Activity{}, "not a JSON object"},
		// Truncated JSON.
		{"truncated", `{"id":"https://a.test/1","type":"Li`, Activity{}, "invalid JSON"},
		// The required fields, one missing at a time.
		{"no id", `{"type":"Like","actor":"https://a.test/u/x","object":"https://b.test/n/1"}`, Activity{}, "no id"},
		{"no type", `{"id":"https://a.test/1","actor":"https://a.test/u/x"}`, Activity{}, "no type"},
		{"no actor", `{"id":"https://a.test/1","type":"Like"}`, Activity{}, "no actor"},
		// Wrong kinds of values.
		{"id number", `{"id":5,"type":"Like","actor":"https://a.test/u/x"}`, Activity{}, "id is not a string"},
		{"type object", `{"id":"https://a.test/1","type":{"x":1},"actor":"https://a.test/u/x"}`, Activity{}, "type is neither"},
		{"actor number", `{"id":"https://a.test/1","type":"Like","actor":7}`, Activity{}, "actor is neither"},
		{"object number", `{"id":"https://a.test/1","type":"Like","actor":"https://a.test/u/x","object":7}`, Activity{}, "object is neither"},
		// Relative or non-http ids are refused.
		{"relative actor", `{"id":"https://a.test/1","type":"Like","actor":"/u/x"}`, Activity{}, "not an absolute"},
		{"urn id", `{"id":"urn:uuid:1","type":"Like","actor":"https://a.test/u/x"}`, Activity{}, "not an absolute"},
		// Empty body.
		{"empty", ``, Activity{}, "empty body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseActivity([]byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrMalformed containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range got.Objects {
				got.Objects[i].Embedded = nil
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Errorf("got  %s\nwant %s", gj, wj)
			}
		})
	}
}

// TestParseActivityObjectLimit: a huge object array is cut at maxObjects.
func TestParseActivityObjectLimit(t *testing.T) {
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = `"https://a.test/n/x"`
	}
	body := `{"id":"https://a.test/1","type":"Delete","actor":"https://a.test/u/x","object":[` + strings.Join(ids, ",") + `]}`
	a, err := ParseActivity([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Objects) != maxObjects {
		t.Errorf("%d objects, want %d", len(a.Objects), maxObjects)
	}
}

func FuzzParseActivity(f *testing.F) {
	for _, s := range []string{
		`{"id":"https://a.test/1","type":"Like","actor":"https://a.test/u/x","object":"https://b.test/n/1"}`,
		`{"id":"https://a.test/u/1","type":"Undo","actor":"https://a.test/u/x","object":{"id":"https://a.test/f/1","type":"Follow","actor":"https://a.test/u/x","object":"https://c.test/users/alice"}}`,
		`{"id":"https://a.test/1","type":["Create"],"actor":[{"id":"https://a.test/u/x"}],"object":[{"id":"https://a.test/n/1","type":["Note"]},"https://x.test/2",null]}`,
		`{"id":"https://a.test/1","type":"Accept","actor":"https://a.test/u/x","object":{"type":"Follow","actor":{"id":"https://b.test/u"},"object":["https://a.test/u/x"]}}`,
		`{"id":null,"type":null,"actor":null,"object":null}`,
		`[]`, `{`, `"x"`, ``, `{"id":"\u0000","type":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := ParseActivity(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if a.ID == "" || a.Type == "" || a.Actor == "" {
			t.Fatalf("accepted an activity without id, type or actor: %+v", a)
		}
		if len(a.Objects) > maxObjects {
			t.Fatalf("%d objects", len(a.Objects))
		}
		for _, o := range a.Objects {
			if o.Embedded != nil && !json.Valid(o.Embedded) {
				t.Fatalf("embedded object is not valid JSON: %q", o.Embedded)
			}
		}
		// Parsing is deterministic.
		b, err := ParseActivity(body)
		if err != nil || b.ID != a.ID || b.Type != a.Type || b.Actor != a.Actor || len(b.Objects) != len(a.Objects) {
			t.Fatalf("second parse differs: %+v vs %+v (%v)", a, b, err)
		}
	})
}

// FuzzQuickString: the fast path decodes exactly as encoding/json does.
func FuzzQuickString(f *testing.F) {
	for _, s := range []string{`"https://a.test/x"`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", `""`, `"`, `"tab	"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := quickString(raw)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("quickString accepted %q, which encoding/json refuses: %v", raw, err)
		}
		if got != want {
			t.Fatalf("quickString(%q) = %q, encoding/json says %q", raw, got, want)
		}
	})
}

// TestParseActivityCompact: the parse tells the activity log a body is
// compact JSON (sparing the log's writer its own check) only when its scan
// took the body and found no whitespace outside its strings; the log's
// writer embeds such a body as it is (FuzzJournalLine holds that to what
// its check makes).
func TestParseActivityCompact(t *testing.T) {
	const like = `{"id":"https://a.test/1","type":"Like","actor":"https://a.test/u","object":"https://b.test/n"}`
	tests := []struct {
		name    string
		body    string
		want    bool
		wantErr bool // the parse refuses the body
	}{
		// As every server sends: one line, no whitespace between tokens.
		{"compact", like, true, false},
		// Whitespace inside strings is the strings' own.
		{"spaces in strings", `{"id":"https://a.test/1","type":"Like","actor":"https://a.test/u","content":" a\tb \n "}`, true, false},
		// A space after a colon.
		{"space after a colon", `{"id": "https://a.test/1","type":"Like","actor":"https://a.test/u"}`, false, false},
		// A newline between members, deep in a nested object.
		{"newline in a nested object", `{"id":"https://a.test/1","type":"Like","actor":"https://a.test/u","object":{"a":[1,` + "\n" + `2]}}`, false, false},
		// Leading whitespace.
		{"leading space", " " + like, false, false},
		// A trailing newline, as a pretty-printer leaves.
		{"trailing newline", like + "\n", false, false},
		// A tab before a closing bracket.
		{"tab before a bracket", `{"id":"https://a.test/1","type":["Like"` + "\t" + `],"actor":"https://a.test/u"}`, false, false},
		// A name that folds to "id": encoding/json decided, so nothing is known.
		{"encoding/json decided", `{"ID":"https://a.test/1","id":"https://a.test/1","type":"Like","actor":"https://a.test/u"}`, false, false},
		// Compact, but not an activity: the parse fails, and says nothing.
		{"no actor", `{"id":"https://a.test/1","type":"Like"}`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, compact, err := parseActivity([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parse error %v, want one: %v", err, tt.wantErr)
			}
			if compact != tt.want {
				t.Fatalf("compact = %v, want %v", compact, tt.want)
			}
		})
	}
}

// TestScanNode: the one-pass scanner takes the usual activities itself
// and leaves to encoding/json whatever it cannot be sure about; whatever
// it takes, it decodes as json.Unmarshal does (FuzzScanNode checks that
// on any input).
func TestScanNode(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		wantFast bool // scanNode decides (else json.Unmarshal must)
	}{
		// A Create as the flood sends it: nested object, arrays, escapes.
		{"create", `{"@context":"https://www.w3.org/ns/activitystreams","id":"https://a.test/n/1/activity","type":"Create","actor":"https://a.test/u/x","to":["https://www.w3.org/ns/activitystreams#Public"],"object":{"id":"https://a.test/n/1","type":"Note","content":"<p class=\"x\">a\u00e9\n</p>","sensitive":false,"n":-1.5e+3,"z":0,"tag":[]}}`, true},
		// Whitespace everywhere JSON allows it.
		{"whitespace", " \t\r\n{ \"id\" : \"https://a.test/1\" ,\n\"type\":[ \"Like\" ] } \n", true},
		// The empty object.
		{"empty object", `{}`, true},
		// A repeated name: the last value wins, as in json.Unmarshal.
		{"repeated id", `{"id":"https://a.test/1","id":"https://a.test/2"}`, true},
		// A name that only folds to "id": encoding/json's matching decides.
		{"folded name", `{"ID":"https://a.test/1"}`, false},
		// An escaped name: encoding/json unescapes it first.
		{"escaped name", `{"\u0069d":"https://a.test/1"}`, false},
		// A non-ASCII name may fold to an ASCII one ("ſ", "K"): left to encoding/json.
		{"non-ASCII name", `{"ıd":"https://a.test/1"}`, false},
		// Names of nested objects are not matched: they need no care.
		{"nested folded name", `{"object":{"ID":1,"\u0069d":2}}`, true},
		// Invalid JSON, here and below: encoding/json gives the error. Cut short.
		{"truncated", `{"id":"https://a.test/1"`, false},
		// More than one value.
		{"trailing garbage", `{"id":"https://a.test/1"} x`, false},
		// A comma before the closing brace.
		{"trailing comma", `{"id":"https://a.test/1",}`, false},
		// A number with a leading zero.
		{"leading zero", `{"n":01}`, false},
		// A minus without digits.
		{"bare minus", `{"n":-}`, false},
		// A dot without digits after it.
		{"dot without digits", `{"n":1.}`, false},
		// An exponent without digits.
		{"exponent without digits", `{"n":1e}`, false},
		// A raw control character inside a string.
		{"control character in a string", "{\"id\":\"a\tb\"}", false},
		// An escape JSON does not have.
		{"bad escape", `{"id":"\x"}`, false},
		// \u with fewer than four hex digits.
		{"short unicode escape", `{"id":"\u12"}`, false},
		// A misspelt true.
		{"bad literal", `{"b":tru}`, false},
		// Single-quoted names.
		{"single quotes", `{'id':1}`, false},
		// Valid JSON but not an object: an array.
		{"array", `[1]`, false},
		// Or a string.
		{"string", `"x"`, false},
		// Deeper than maxScanDepth: encoding/json decides.
		{"deep", `{"a":` + strings.Repeat("[", maxScanDepth) + strings.Repeat("]", maxScanDepth) + `}`, false},
		// Just within the depth the scanner follows.
		{"depth limit", `{"a":` + strings.Repeat("[", maxScanDepth-1) + strings.Repeat("]", maxScanDepth-1) + `}`, true},
		// Long strings, whose plain runs are skipped eight bytes at a
		// time: escapes and UTF-8 among them (longStrings puts each at
		// every offset of a word).
		{"long strings", `{"id":"` + strings.Repeat("abcdefg", 9) + `\"` + strings.Repeat("é", 11) + `\u00e9x` + strings.Repeat(`ab\n`, 7) + `","content":"` + strings.Repeat("€", 40) + `"}`, true},
		{"escapes at every offset", `{"content":"` + longStrings(`\"`, `\\`, `\n`, `\u00e9`, "é", "€") + `"}`, true},
		// A raw control character deep in a long string.
		{"control character in a long string", `{"id":"` + strings.Repeat("abcdefghi", 5) + "\x01" + strings.Repeat("z", 20) + `"}`, false},
		// A long string never closed.
		{"long string cut short", `{"id":"` + strings.Repeat("abcdefgh", 8), false},
		// A backslash as a long string's last byte.
		{"long string ending in a backslash", `{"id":"` + strings.Repeat("abcdefgh", 8) + `\`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := scanNode([]byte(tt.data))
			if ok != tt.wantFast {
				t.Fatalf("scanNode decided: %v, want %v", ok, tt.wantFast)
			}
			if ok {
				checkLikeUnmarshal(t, []byte(tt.data), got)
			}
		})
	}
}

// TestQuoteEscapeOrControl holds the word test of the string scanner's
// fast path to its bytewise definition: each byte value at each of the
// eight offsets, among plain, UTF-8 and space neighbours, and a second
// special byte above the first (whose flag the first's borrow may set
// wrongly): the word is flagged exactly when one is special, and its
// lowest flag is the first special byte.
func TestQuoteEscapeOrControl(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	for _, fill := range []byte{'a', 0x80, 0xff, ' ', '!', '#', '[', ']'} {
		for at := range 8 {
			for c := range 256 {
				for _, above := range []byte{fill, '"', 0x00, 0x21} {
					word := bytes.Repeat([]byte{fill}, 8)
					word[at] = byte(c)
					if at < 7 {
						word[7] = above
					}
					first := slices.IndexFunc(word, special)
					m := jsonquote.QuoteEscapeOrControl(binary.LittleEndian.Uint64(word))
					if (m != 0) != (first >= 0) || first >= 0 && jsonquote.FirstFlagged(m) != first {
						t.Fatalf("%q: mask %#x, want the first special byte at %d", word, m, first)
					}
				}
			}
		}
	}
}

// longStrings is a JSON string's content holding each of pieces after
// every length of plain run from 0 to 16 bytes, so that each lands at
// every offset of the scanner's eight-byte words.
func longStrings(pieces ...string) string {
	var b strings.Builder
	for _, p := range pieces {
		for n := range 17 {
			b.WriteString(strings.Repeat("x", n) + p)
		}
	}
	return b.String()
}

// checkLikeUnmarshal fails unless json.Unmarshal(data) gives got.
func checkLikeUnmarshal(t *testing.T, data []byte, got node) {
	t.Helper()
	var want node
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("scanNode took %q, which encoding/json refuses: %v", data, err)
	}
	for _, f := range []struct {
		name      string
		got, want json.RawMessage
	}{{"id", got.ID, want.ID}, {"type", got.Type, want.Type}, {"actor", got.Actor, want.Actor}, {"object", got.Object, want.Object}} {
		if string(f.got) != string(f.want) || (f.got == nil) != (f.want == nil) {
			t.Fatalf("%q: %s = %q, encoding/json says %q", data, f.name, f.got, f.want)
		}
	}
}

// FuzzScanNode: whatever the scanner decides, encoding/json agrees with.
func FuzzScanNode(f *testing.F) {
	for _, s := range []string{
		`{"id":"https://a.test/1","type":"Like","actor":"https://a.test/u/x","object":"https://b.test/n/1"}`,
		`{"id":"https://a.test/u/1","type":"Undo","actor":{"id":"x"},"object":{"id":"https://a.test/f/1","type":"Follow","object":["a",1,-0.5E-7,true,false,null,{}]}}`,
		`{"ID":1,"id":2,"Id":3}`, `{"\u0069d":1}`, `{"id":"\ud800"}`, "{\"id\":\"\xff\"}", `{"n":01}`, `{"n":1.}`, `{"n":-}`,
		`{"a":[[[[]]]]}`, `{} {}`, ` {} `, `{"a":"\u00"}`, `{"a":tru}`, `{"a":nul}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := scanNode(data)
		if !ok {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("scanNode took %q, which is not valid JSON", data)
		}
		checkLikeUnmarshal(t, data, got)
	})
}

// absoluteURL takes an absolute http(s) URL with a host and refuses the
// rest, whether plainHTTPURL or url.Parse answers.
func TestAbsoluteURL(t *testing.T) {
	for _, tc := range []struct {
		s     string
		plain bool // plainHTTPURL answers without url.Parse
		ok    bool
	}{
		{"https://flood1.test/users/alice", true, true},                        // a crowd actor
		{"https://mastodon.example/users/bob/statuses/1/activity", true, true}, // a Mastodon activity id
		{"http://127.0.0.1:8080/ap/users/1", true, true},                       // a port, plain HTTP
		{"https://gts.example/users/x#main-key", false, true},                  // a fragment: url.Parse's
		{"https://a.example/objects/1?page=2", false, true},                    // a query: url.Parse's
		{"HTTPS://A.EXAMPLE/x", false, true},                                   // upper-case scheme: url.Parse's, which takes it
		{"https://a.example/%7Euser", false, true},                             // an escape: url.Parse's
		{"https://[::1]:8443/u", false, true},                                  // an IPv6 literal: url.Parse's
		{"https://a.example", true, true},                                      // no path
		{"https://a.example:/x", false, true},                                  // an empty port: url.Parse's, which takes it
		{"https:///x", false, false},                                           // no host
		{"ftp://a.example/x", false, false},                                    // another scheme
		{"a.example/x", false, false},                                          // no scheme
		{"https://a.example:80x/", false, false},                               // a port that is not a number
		{"https://a example/", false, false},                                   // a space in the host
		{"https://a.example/\x7f", false, false},                               // a control byte
		{"", false, false},                                                     // nothing
	} {
		if got := plainHTTPURL(tc.s); got != tc.plain {
			t.Errorf("plainHTTPURL(%q) = %v, want %v", tc.s, got, tc.plain)
		}
		if err := absoluteURL("id", tc.s); (err == nil) != tc.ok {
			t.Errorf("absoluteURL(%q) = %v, want ok %v", tc.s, err, tc.ok)
		}
	}
}

// FuzzPlainHTTPURL: every URL the fast path takes, url.Parse reads as an
// absolute http(s) URL with a host, so absoluteURL answers as url.Parse
// alone would.
func FuzzPlainHTTPURL(f *testing.F) {
	for _, s := range []string{"https://a.test/u/x", "http://a.test:80/", "https://a.test:/", "https://a.test/%zz", "https://@a.test/", "https://a.test/x?y#z", "https://-/", "https://a.test//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		parsed := err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
		if plainHTTPURL(s) && !parsed {
			t.Fatalf("plainHTTPURL takes %q, which url.Parse does not read as an absolute http(s) URL (%v)", s, err)
		}
		if ok := absoluteURL("id", s) == nil; ok != parsed {
			t.Fatalf("absoluteURL(%q) ok %v, url.Parse alone %v", s, ok, parsed)
		}
	})
}
