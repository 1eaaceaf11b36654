// Package jsonquote quotes strings as encoding/json does without HTML
// escaping, eight plain bytes at a time, for the hand-written JSON writers
// on the crowd's hot paths (the inbox's activity log, the flood's results
// lines), and lends the word tricks it skips them with to the inbox's
// scanner of received JSON.
package jsonquote

import (
	"math/bits"
	"unicode/utf8"
)

// needsQuoting flags, as QuoteEscapeOrControl does, each of the eight
// bytes of x that AppendString does not copy as it is: '"', '\\', a
// control character, or a byte of a multi-byte UTF-8 sequence (which it
// decodes).
func needsQuoting(x uint64) uint64 {
	return x&0x8080808080808080 | QuoteEscapeOrControl(x)
}

// stringWord is s[i:i+8] as a little-endian word (the compiler makes it
// one load).
func stringWord(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// AppendString quotes s as encoding/json does without HTML escaping:
// ", \ and control characters escaped (\b \f \n \r \t by name, the others
// as \u00XX), each invalid UTF-8 byte as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029, everything else as it is.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Headers and ids are plain ASCII: skip it eight bytes at a time,
		// to the first byte that is not.
		for i+8 <= len(s) {
			if m := needsQuoting(stringWord(s, i)); m != 0 {
				i += FirstFlagged(m)
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// QuoteEscapeOrControl flags, in the high bit of each of the eight bytes
// of x (little-endian), whether it is '"', '\\' or below 0x20, by the
// "has a zero byte" and "has a byte less than n" word tricks. It is not
// zero exactly when one is, and its lowest flag is exact: a borrow can
// only wrongly flag a byte above one that is flagged rightly. A byte of
// UTF-8 (0x80 and up) is never flagged.
func QuoteEscapeOrControl(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, escape := x^(ones*'"'), x^(ones*'\\')
	return ((x-ones*0x20)&^x | (quote-ones)&^quote | (escape-ones)&^escape) & highs
}

// FirstFlagged is the offset in its word of the lowest byte a non-zero
// flag mask flags.
func FirstFlagged(mask uint64) int { return bits.TrailingZeros64(mask) >> 3 }
