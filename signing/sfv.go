package signing

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A minimal RFC 8941 structured-field parser: enough for RFC 9421's
// Signature-Input and Signature dictionaries and RFC 9530's Content-Digest.

type sfKind byte

const (
	sfString sfKind = iota + 1
	sfToken
	sfInteger
	sfDecimal // kept as its text
	sfBytes
	sfBool
)

type sfItem struct {
	kind sfKind
	str  string // string, token, decimal text
	num  int64
	b    []byte
	bo   bool
}

type sfParam struct {
	key string
	val sfItem
}

type sfInner struct {
	item   sfItem
	params []sfParam
}

// sfMember is one dictionary member: an item or an inner list, with parameters.
type sfMember struct {
	key    string
	inner  bool
	item   sfItem
	list   []sfInner
	params []sfParam
	raw    string // the member value exactly as sent (after "key=")
}

type sfParser struct {
	s string
	i int
}

var errSF = errors.New("structured field")

func (p *sfParser) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", errSF, fmt.Sprintf(format, args...), p.i)
}

func (p *sfParser) sp() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) ows() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// parseSFDictionary parses an sf-dictionary. A repeated key replaces the
// earlier value, as RFC 8941 says.
func parseSFDictionary(s string) ([]sfMember, error) {
	p := &sfParser{s: strings.Trim(s, " \t")}
	var out []sfMember
	for p.i < len(p.s) {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		m := sfMember{key: key}
		start := p.i
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			start = p.i
			if p.i < len(p.s) && p.s[p.i] == '(' {
				m.inner = true
				m.list, err = p.innerList()
			} else {
				m.item, err = p.bareItem()
			}
			if err != nil {
				return nil, err
			}
		} else {
			m.item = sfItem{kind: sfBool, bo: true}
		}
		if m.params, err = p.parameters(); err != nil {
			return nil, err
		}
		m.raw = p.s[start:p.i]
		replaced := false
		for j := range out {
			if out[j].key == key {
				out[j], replaced = m, true
			}
		}
		if !replaced {
			out = append(out, m)
		}
		p.ows()
		if p.i >= len(p.s) {
			break
		}
		if p.s[p.i] != ',' {
			return nil, p.fail("expected ','")
		}
		p.i++
		p.ows()
		if p.i >= len(p.s) {
			return nil, p.fail("trailing ','")
		}
	}
	return out, nil
}

func (p *sfParser) key() (string, error) {
	start := p.i
	if p.i >= len(p.s) || !(p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] == '*') {
		return "", p.fail("expected a key")
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*' {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i], nil
}

func (p *sfParser) innerList() ([]sfInner, error) {
	p.i++ // '('
	var out []sfInner
	for {
		p.sp()
		if p.i >= len(p.s) {
			return nil, p.fail("unterminated inner list")
		}
		if p.s[p.i] == ')' {
			p.i++
			return out, nil
		}
		it, err := p.bareItem()
		if err != nil {
			return nil, err
		}
		params, err := p.parameters()
		if err != nil {
			return nil, err
		}
		out = append(out, sfInner{item: it, params: params})
		if p.i < len(p.s) && p.s[p.i] != ' ' && p.s[p.i] != ')' {
			return nil, p.fail("expected ' ' or ')' in inner list")
		}
	}
}

func (p *sfParser) parameters() ([]sfParam, error) {
	var out []sfParam
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		p.sp()
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		v := sfItem{kind: sfBool, bo: true}
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			if v, err = p.bareItem(); err != nil {
				return nil, err
			}
		}
		replaced := false
		for j := range out {
			if out[j].key == k {
				out[j].val, replaced = v, true
			}
		}
		if !replaced {
			out = append(out, sfParam{key: k, val: v})
		}
	}
	return out, nil
}

func (p *sfParser) bareItem() (sfItem, error) {
	if p.i >= len(p.s) {
		return sfItem{}, p.fail("expected an item")
	}
	c := p.s[p.i]
	switch {
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == '"':
		p.i++
		var b strings.Builder
		for p.i < len(p.s) {
			c := p.s[p.i]
			p.i++
			switch {
			case c == '\\':
				if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
					return sfItem{}, p.fail("bad escape in string")
				}
				b.WriteByte(p.s[p.i])
				p.i++
			case c == '"':
				return sfItem{kind: sfString, str: b.String()}, nil
			case c < 0x20 || c > 0x7e:
				return sfItem{}, p.fail("bad character in string")
			default:
				b.WriteByte(c)
			}
		}
		return sfItem{}, p.fail("unterminated string")
	case c == ':':
		p.i++
		end := strings.IndexByte(p.s[p.i:], ':')
		if end < 0 {
			return sfItem{}, p.fail("unterminated byte sequence")
		}
		b, err := base64.StdEncoding.DecodeString(p.s[p.i : p.i+end])
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(p.s[p.i : p.i+end]); err != nil {
				return sfItem{}, p.fail("bad base64 in byte sequence")
			}
		}
		p.i += end + 1
		return sfItem{kind: sfBytes, b: b}, nil
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			p.i += 2
			return sfItem{kind: sfBool, bo: p.s[p.i-1] == '1'}, nil
		}
		return sfItem{}, p.fail("bad boolean")
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '*':
		start := p.i
		for p.i < len(p.s) && (isTokenChar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		return sfItem{kind: sfToken, str: p.s[start:p.i]}, nil
	}
	return sfItem{}, p.fail("unexpected %q", c)
}

func (p *sfParser) number() (sfItem, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	dot := -1
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= '0' && c <= '9' {
			p.i++
		} else if c == '.' && dot < 0 {
			dot = p.i
			p.i++
		} else {
			break
		}
	}
	text := p.s[start:p.i]
	digits := strings.TrimPrefix(text, "-")
	if digits == "" || digits[0] == '.' {
		return sfItem{}, p.fail("bad number")
	}
	if dot >= 0 {
		if p.i-dot-1 < 1 || p.i-dot-1 > 3 || dot-start > 13 {
			return sfItem{}, p.fail("bad decimal")
		}
		return sfItem{kind: sfDecimal, str: text}, nil
	}
	if len(digits) > 15 {
		return sfItem{}, p.fail("integer too long")
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return sfItem{}, p.fail("bad integer")
	}
	return sfItem{kind: sfInteger, num: n}, nil
}

// serialize writes the canonical RFC 8941 form of an item.
func (it sfItem) serialize(b *strings.Builder) {
	switch it.kind {
	case sfString:
		b.WriteByte('"')
		for i := 0; i < len(it.str); i++ {
			if it.str[i] == '"' || it.str[i] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(it.str[i])
		}
		b.WriteByte('"')
	case sfToken, sfDecimal:
		b.WriteString(it.str)
	case sfInteger:
		b.WriteString(strconv.FormatInt(it.num, 10))
	case sfBytes:
		b.WriteByte(':')
		b.WriteString(base64.StdEncoding.EncodeToString(it.b))
		b.WriteByte(':')
	case sfBool:
		if it.bo {
			b.WriteString("?1")
		} else {
			b.WriteString("?0")
		}
	}
}

func serializeParams(b *strings.Builder, ps []sfParam) {
	for _, p := range ps {
		b.WriteByte(';')
		b.WriteString(p.key)
		if p.val.kind == sfBool && p.val.bo {
			continue
		}
		b.WriteByte('=')
		p.val.serialize(b)
	}
}

// serializeInner writes the canonical form of an inner list with parameters.
func serializeInner(list []sfInner, params []sfParam) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, x := range list {
		if i > 0 {
			b.WriteByte(' ')
		}
		x.item.serialize(&b)
		serializeParams(&b, x.params)
	}
	b.WriteByte(')')
	serializeParams(&b, params)
	return b.String()
}
