// Package jsonvalue decodes and encodes the JSON values that jq programs
// work on (map[string]any, []any, string, json.Number, bool, nil) exactly
// as encoding/json does with UseNumber and Marshal, at a fraction of the
// allocations: the proxy converts every object of an emulated LIST or watch,
// and building and collecting those values is most of its cost.
//
// Equality with encoding/json is the contract; FuzzDecode and FuzzEncode
// check it on arbitrary input. Whatever is rare (escaped strings, invalid
// UTF-8, unusual value types) is handed to encoding/json itself.
package jsonvalue

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// Interning: member names and short strings repeat across the objects of
// a stream (apiVersion, kind, field names, managers), so a Decoder keeps
// the strings it made in a small direct-mapped cache and reuses them
// instead of allocating each again. A miss costs a hash and a compare, and
// a string that never repeats (a name, a uid) only displaces another.
const (
	cacheSlots    = 1024 // a power of two
	maxInternSize = 32   // longest value (not name) string cached, in bytes
	maxNameSize   = 64   // longest object member name cached, in bytes
)

// A Decoder decodes JSON values. It keeps strings it has made for reuse;
// it is not safe for concurrent use.
type Decoder struct {
	data  []byte
	i     int
	depth int
	seed  maphash.Seed
	cache *[cacheSlots]string
	keep  []string // while DecodeKeeping: the path of the member to keep
	open  []byte   // skip's stack of open brackets, reused
}

// Decode decodes one JSON value that fills data (white space aside), as
// encoding/json's Unmarshal into an any with UseNumber does.
func (d *Decoder) Decode(data []byte) (any, error) {
	if d.cache == nil {
		d.cache, d.seed = new([cacheSlots]string), maphash.MakeSeed()
	}
	d.data, d.i, d.depth = data, 0, 0
	defer func() { d.data = nil }() // keep no reference to the input
	d.space()
	level := -1
	if d.keep != nil {
		level = 0
	}
	v, err := d.value(level)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i < len(d.data) {
		return nil, d.syntax("after top-level value")
	}
	return v, nil
}

// SyntaxError is a JSON syntax error at a byte offset of the input.
type SyntaxError struct {
	msg    string
	Offset int64
}

func (e *SyntaxError) Error() string { return e.msg }

func (d *Decoder) syntax(context string) error {
	if d.i >= len(d.data) {
		return &SyntaxError{msg: "unexpected end of JSON input", Offset: int64(d.i)}
	}
	return &SyntaxError{msg: fmt.Sprintf("invalid character %s %s", quoteChar(d.data[d.i]), context), Offset: int64(d.i)}
}

// quoteChar formats c as encoding/json's errors do.
func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c < utf8.RuneSelf:
		s := fmt.Sprintf("%q", rune(c))
		return "'" + s[1:len(s)-1] + "'"
	}
	return fmt.Sprintf("%q", rune(c))
}

func (d *Decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// value decodes the next value. level is how many steps of d.keep's path
// lead to it, or -1 when it is off that path.
func (d *Decoder) value(level int) (any, error) {
	if d.i >= len(d.data) {
		return nil, d.syntax("")
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(level)
	case c == '[':
		return d.array()
	case c == '"':
		return d.string(maxInternSize)
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return nil, d.syntax("looking for beginning of value")
}

func (d *Decoder) literal(s string) error {
	for k := 0; k < len(s); k++ {
		if d.i >= len(d.data) || d.data[d.i] != s[k] {
			return d.syntax("in literal " + s + " (expecting " + quoteChar(s[k]) + ")")
		}
		d.i++
	}
	return nil
}

// number reads a number as json.Number, after checking its syntax.
func (d *Decoder) number() (any, error) {
	start := d.i
	end, bad := scanNumber(d.data, start)
	d.i = end
	if bad != "" {
		return nil, d.syntax(bad)
	}
	return json.Number(d.intern(d.data[start:end], maxInternSize)), nil
}

// scanNumber finds the end of the number that starts at b[i]: where it
// ends, or where its syntax breaks and how.
func scanNumber[T string | []byte](b T, i int) (end int, bad string) {
	digit := func(i int) bool { return i < len(b) && '0' <= b[i] && b[i] <= '9' }
	digits := func(i int) int {
		for digit(i) {
			i++
		}
		return i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case !digit(i):
		return i, "in numeric literal"
	case b[i] == '0':
		i++
	default:
		i = digits(i)
	}
	if i < len(b) && b[i] == '.' {
		if i++; !digit(i) {
			return i, "after decimal point in numeric literal"
		}
		i = digits(i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digit(i) {
			return i, "in exponent of numeric literal"
		}
		i = digits(i)
	}
	return i, ""
}

// string reads a string; those up to internMax bytes are interned.
func (d *Decoder) string(internMax int) (string, error) {
	b := d.data
	start := d.i + 1
	i, nonASCII := plainRun(b, start)
	ascii := !nonASCII
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			if !ascii && !utf8.Valid(b[start:i]) {
				return d.unquote(start-1, i+1) // encoding/json's replacement of bad UTF-8
			}
			return d.intern(b[start:i], internMax), nil
		case c == '\\':
			return d.escaped(start - 1)
		case c < 0x20:
			d.i = i
			return "", d.syntax("in string literal")
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	d.i = len(b)
	return "", d.syntax("")
}

// escaped reads a string with escapes, from its opening quote at start:
// its end is found here, its value by encoding/json.
func (d *Decoder) escaped(start int) (string, error) {
	b := d.data
	for i := start + 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '\\':
			i++
		case c == '"':
			d.i = i + 1
			return d.unquote(start, i+1)
		case c < 0x20:
			d.i = i
			return "", d.syntax("in string literal")
		}
	}
	d.i = len(b)
	return "", d.syntax("")
}

func (d *Decoder) unquote(start, end int) (string, error) {
	var s string
	if err := json.Unmarshal(d.data[start:end], &s); err != nil {
		if se, ok := err.(*json.SyntaxError); ok {
			return "", &SyntaxError{msg: se.Error(), Offset: int64(start) + se.Offset - 1}
		}
		return "", err
	}
	return s, nil
}

// intern returns b as a string, the same string each time for short ones
// that repeat.
func (d *Decoder) intern(b []byte, max int) string {
	if len(b) > max || d.cache == nil {
		return string(b)
	}
	slot := &d.cache[maphash.Bytes(d.seed, b)&(cacheSlots-1)]
	if *slot == string(b) { // no allocation for the comparison
		return *slot
	}
	*slot = string(b)
	return *slot
}

func (d *Decoder) object(level int) (any, error) {
	if d.depth++; d.depth > maxDepth {
		return nil, &SyntaxError{msg: "exceeded max depth", Offset: int64(d.i)}
	}
	d.i++ // {
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		d.depth--
		return map[string]any{}, nil
	}
	m := make(map[string]any)

	for {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, d.syntax("looking for beginning of object key string")
		}
		k, err := d.string(maxNameSize)
		if err != nil {
			return nil, err
		}
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, d.syntax("after object key")
		}
		d.i++
		d.space()
		if err := d.member(m, k, level); err != nil {
			return nil, err
		}
		d.space()
		if d.i >= len(d.data) {
			return nil, d.syntax("")
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			d.depth--
			return m, nil
		default:
			return nil, d.syntax("after object key:value pair")
		}
	}
}

// member decodes the value of m's member k into m, or keeps it as Raw
// when it is at the end of d.keep.
func (d *Decoder) member(m map[string]any, k string, level int) error {
	child := -1
	if level >= 0 && k == d.keep[level] {
		if child = level + 1; child == len(d.keep) {
			if raw, ok := d.keepRaw(); ok {
				m[k] = raw
				return nil
			}
			child = -1
		}
	}
	v, err := d.value(child)
	if err != nil {
		return err
	}
	m[k] = v
	return nil
}

func (d *Decoder) array() (any, error) {
	if d.depth++; d.depth > maxDepth {
		return nil, &SyntaxError{msg: "exceeded max depth", Offset: int64(d.i)}
	}
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		d.depth--
		return a, nil
	}
	for {
		v, err := d.value(-1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.data) {
			return nil, d.syntax("")
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.space()
		case ']':
			d.i++
			d.depth--
			return a, nil
		default:
			return nil, d.syntax("after array element")
		}
	}
}
