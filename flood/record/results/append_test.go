package results

import (
	"bytes"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// encoded is l as the Writer's Encoder writes it.
func encoded(t testing.TB, l *SendLine) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestAppendSendLine: a send line appended is the Encoder's, byte for
// byte, for each kind of line a flood writes; one with a rate-limit
// reset time is left to the Encoder.
func TestAppendSendLine(t *testing.T) {
	us := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		l    SendLine
	}{
		// An answered send, every time known.
		{"answered", SendLine{Line: LineSend, Run: 2, Type: "Create", Measured: true, Outcome: OutcomeAnswered, Class: "202", Status: 202,
			Written: true, IntendedUS: us(1_000_000), PickedUS: us(1_000_050), SentUS: us(1_000_010), DoneUS: us(1_000_400),
			Sender: "https://flood1.test/users/u1", Origin: "flood1.test", Inbox: "http://127.0.0.1:8080/inbox",
			RequestBytes: 1234, ResponseBytes: 8, Signature: "cavage", Attempts: 1}},
		// A dropped send: no times but the intended one.
		{"dropped", SendLine{Line: LineSend, Type: "Like", Outcome: OutcomeDropped, IntendedUS: us(-5)}},
		// Unsent: almost nothing.
		{"unsent", SendLine{Line: LineSend, Outcome: OutcomeUnsent}},
		// A 429 with the server's limits, a fallback, a forgery.
		{"rate limited", SendLine{Line: LineSend, Type: "Follow", Outcome: OutcomeAnswered, Class: "429", Status: 429, FellBack: true, Attempts: 2,
			Forged: "digest", RetryAfter: true, RateLimitLimit: us(300), RateLimitRemaining: us(0), RateLimitWindowUS: us(300_000_000),
			RateLimitResetUS: us(29_000_000), RateLimitIETF: true}},
		// Strings JSON must escape, and bytes that are no UTF-8.
		{"escapes", SendLine{Line: LineSend, Sender: "a\"b\\c\n\r\t\b\f\x00\x1f\x7f<&>", Origin: "é\u2028\u2029😀", Inbox: "\xff\xfe ok \xc3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := appendSendLine([]byte("kept"), &c.l)
			if want := append([]byte("kept"), encoded(t, &c.l)...); !ok || !bytes.Equal(got, want) {
				t.Errorf("appended (%v)\n%s\nwant\n%s", ok, got, want)
			}
		})
	}
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	if got, ok := appendSendLine([]byte("kept"), &SendLine{RateLimitResetAt: &at}); ok || string(got) != "kept" {
		t.Errorf("a line with a reset time appended %q (%v), want it left to the Encoder", got, ok)
	}
}

// FuzzAppendSendLine: whatever its strings and numbers, a send line
// appended is the Encoder's, byte for byte.
func FuzzAppendSendLine(f *testing.F) {
	f.Add("Create", "https://flood1.test/users/u1", "http://127.0.0.1:1/inbox", int64(12), int64(-3), 202, uint8(0xff), true)
	f.Add("a\"\\\n\x00", "\xff\u2028", "<&>", int64(-1<<63), int64(1<<63-1), -1, uint8(0), false)
	f.Fuzz(func(t *testing.T, typ, sender, inbox string, a, b int64, status int, present uint8, flag bool) {
		opt := func(bit uint8, v int64) *int64 {
			if present&bit == 0 {
				return nil
			}
			return &v
		}
		l := SendLine{Line: LineSend, Run: status / 3, Type: typ, Measured: flag, Outcome: typ + sender, Class: inbox, Status: status,
			Starved: !flag, Written: flag, IntendedUS: opt(1, a), PickedUS: opt(2, b), SentUS: opt(4, a^b), DoneUS: opt(8, a+b),
			Sender: sender, Origin: inbox + typ, Inbox: inbox, RequestBytes: a, ResponseBytes: b, Signature: sender + inbox,
			FellBack: flag, Attempts: status, Forged: typ, RetryAfter: !flag, RateLimitLimit: opt(16, b), RateLimitRemaining: opt(32, a),
			RateLimitWindowUS: opt(64, -a), RateLimitResetUS: opt(128, -b), RateLimitIETF: flag, NoAnswer: sender + typ}
		got, ok := appendSendLine(nil, &l)
		if want := encoded(t, &l); !ok || !bytes.Equal(got, want) {
			t.Fatalf("appended (%v)\n%q\nwant\n%q", ok, got, want)
		}
	})
}

// BenchmarkSendLine: a flood's send line, appended and encoded.
func BenchmarkSendLine(b *testing.B) {
	us := func(v int64) *int64 { return &v }
	l := SendLine{Line: LineSend, Run: 0, Type: "Create", Measured: true, Outcome: OutcomeAnswered, Class: "202", Status: 202,
		Written: true, IntendedUS: us(1_000_000), PickedUS: us(1_000_050), SentUS: us(1_000_010), DoneUS: us(1_000_400),
		Sender: "https://flood1.test/users/u1", Origin: "flood1.test", Inbox: "http://127.0.0.1:8080/inbox",
		RequestBytes: 1234, ResponseBytes: 8, Signature: "cavage", Attempts: 1}
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = appendSendLine(buf[:0], &l)
		}
	})
	b.Run("encoder", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(&l)
		}
	})
}

// TestSendLineAllocatesNothing: making and appending a send's line
// allocates nothing once the writer has seen its target, also when the
// sends' targets are equal URLs parsed apart (one per actor).
func TestSendLineAllocatesNothing(t *testing.T) {
	var sends [2]send
	for i := range sends {
		u, err := url.Parse("http://127.0.0.1:8080/inbox")
		if err != nil {
			t.Fatal(err)
		}
		sends[i] = send{sent: true, who: Sender{Actor: "https://flood1.test/users/u1", Origin: "flood1.test", Signature: "cavage"},
			d: record.Delivery{Type: "Create", URL: u, Intended: time.Second, Picked: time.Second, Actual: time.Second, Done: 2 * time.Second,
				Class: record.Class202, Status: 202, Attempts: 1, SentBytes: 1000,
				RateLimit: record.RateLimitSample{Said: record.SaidLimit | record.SaidRemaining | record.SaidWindow, Limit: 300, Remaining: 2, Window: time.Minute}}}
	}
	var sc lineScratch
	var buf []byte
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		n++
		var ok bool
		if buf, ok = appendSendLine(buf[:0], sc.line(&sends[n%2])); !ok {
			t.Fatal("not appended")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a line, want none", allocs)
	}
	if want := encoded(t, sc.line(&sends[0])); !bytes.Equal(buf, want) {
		t.Errorf("appended\n%s\nwant\n%s", buf, want)
	}
}
