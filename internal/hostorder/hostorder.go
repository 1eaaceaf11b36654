// Package hostorder orders host names as people count origins, so that
// every list of the crowd's origins (the weather, the record's, the
// reports') reads flood1, flood2 … flood10, not flood1, flood10, flood2.
package hostorder

import (
	"cmp"
	"strings"
)

// Compare orders host names as people count origins: a run of digits
// by its value, so flood2.test comes before flood10.test; the rest by
// byte. Equal values written differently (flood02, flood2) are ordered by
// their text, so the order is total.
func Compare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			ei, ej := digitsEnd(a, i), digitsEnd(b, j)
			na, nb := strings.TrimLeft(a[i:ei], "0"), strings.TrimLeft(b[j:ej], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		if a[i] != b[j] {
			return cmp.Compare(a[i], b[j])
		}
		i++
		j++
	}
	return cmp.Or(cmp.Compare(len(a)-i, len(b)-j), strings.Compare(a, b))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitsEnd is the end of the run of digits in s starting at i.
func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
