package h1

import (
	"strings"
	"testing"
)

// signatureValue is a Signature header's value as the crowd sends one: printable ASCII,
// most of a signed request's head.
func signatureValue() string {
	return `keyId="https://flood1.test/users/alice#main-key",algorithm="rsa-sha256",headers="(request-target) host date digest",signature="` + strings.Repeat("QUJD", 86) + `"`
}

// validValue answers as validBytes, its byte-by-byte definition, wherever
// the byte that decides falls among the eight tested at once.
func TestValidValue(t *testing.T) {
	sig := signatureValue()
	for _, c := range []struct {
		name  string
		value string
		want  bool
	}{
		// The empty value.
		{"empty", "", true},
		// A Signature header as the crowd sends it: printable ASCII only.
		{"signature", sig, true},
		// Tabs are allowed, inside a block of eight and in the tail.
		{"tab in a block", "abc\tdefgh", true},
		{"tab in the tail", "abcdefgh\t", true},
		// Bytes above DEL (obs-text) are allowed.
		{"obs-text", "caf\xc3\xa9 \xff\x80\x80\x80\x80\x80\x80\x80", true},
		// A CR or LF would split the head, in any position of a block.
		{"CR first of a block", "\rabcdefg", false},
		{"LF last of a block", "abcdefg\n", false},
		{"LF in the tail", sig + "\n", false},
		{"CRLF mid-signature", sig[:100] + "\r\n" + sig[100:], false},
		// NUL and every other control byte.
		{"NUL", "abcd\x00efg", false},
		{"unit separator", "abcdefghij\x1f", false},
		// DEL, in a block and in the tail.
		{"DEL in a block", "abc\x7fdefgh", false},
		{"DEL in the tail", "abcdefgh\x7f", false},
		// A byte just above a control byte's range, beside a tab: still allowed.
		{"space beside tab", "\t \t \t \t ", true},
		// A DEL after a byte with the high bit set (no borrow into it).
		{"DEL after 0x80", "\x80\x7fabcdef", false},
	} {
		if got := validValue(c.value); got != c.want || validBytes(c.value) != c.want {
			t.Errorf("%s: validValue %v, validBytes %v, want %v", c.name, got, validBytes(c.value), c.want)
		}
	}
}

// FuzzValidValue holds the eight-at-a-time test to the byte-by-byte one.
func FuzzValidValue(f *testing.F) {
	for _, s := range []string{"", "abc\tdefgh", "abcdefg\n", "\x80\x7fabcdef", "\x20\x20\x20\x20\x20\x20\x20\x1f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validValue(s), validBytes(s); got != want {
			t.Fatalf("validValue(%q) = %v, validBytes %v", s, got, want)
		}
	})
}

// BenchmarkValidValue: a Signature header's value, eight bytes at a time
// and one by one.
func BenchmarkValidValue(b *testing.B) {
	sig := signatureValue()
	for _, c := range []struct {
		name string
		fn   func(string) bool
	}{{"words", validValue[string]}, {"bytes", validBytes[string]}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if !c.fn(sig) {
					b.Fatal("refused")
				}
			}
		})
	}
}
