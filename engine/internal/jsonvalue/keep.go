package jsonvalue

import (
	"unicode/utf8"
)

// Raw is a value kept as its JSON text by DecodeKeeping: valid, compact
// JSON, which Append writes as it is. A conversion that never looks at a
// large member (an object's metadata.managedFields) then costs neither its
// decoding nor its encoding, and the member reaches the client as the
// server wrote it, as when a response passes through. The member stays in
// its object, so the object's shape (which members it has, whether it is
// empty) is the same as when it is decoded.
type Raw []byte

// DecodeKeeping decodes data as Decode does, except for the member at path
// (one name per level from the top-level object), which it keeps as Raw if
// its text is valid, compact JSON (and decodes otherwise).
func (d *Decoder) DecodeKeeping(data []byte, path []string) (any, error) {
	if len(path) == 0 {
		return d.Decode(data)
	}
	d.keep = path
	defer func() { d.keep = nil }()
	return d.Decode(data)
}

// keepRaw returns the value at d.i as Raw when it is valid, compact JSON;
// otherwise it leaves d.i where it was, for the value to be decoded.
func (d *Decoder) keepRaw() (Raw, bool) {
	start := d.i
	if !d.skip() {
		d.i = start
		return nil, false
	}
	return Raw(append([]byte(nil), d.data[start:d.i]...)), true
}

// skip moves past one JSON value without decoding it, checking its syntax;
// it reports false for invalid JSON, white space, invalid UTF-8, or
// nesting deeper than encoding/json allows.
func (d *Decoder) skip() bool {
	b := d.data
	open := d.open[:0] // the brackets open around d.i
	defer func() { d.open = open[:0] }()
	for {
		// A value.
		if d.i >= len(b) {
			return false
		}
		switch c := b[d.i]; {
		case c == '{' || c == '[':
			if d.depth+len(open) >= maxDepth {
				return false
			}
			open = append(open, c)
			d.i++
			if d.i < len(b) && b[d.i] == c+2 { // {} or []
				d.i++
				open = open[:len(open)-1]
				break
			}
			if c == '{' && !d.skipKey() {
				return false
			}
			continue
		case c == '"':
			if !d.skipString() {
				return false
			}
		case c == 't':
			if !d.skipLiteral("true") {
				return false
			}
		case c == 'f':
			if !d.skipLiteral("false") {
				return false
			}
		case c == 'n':
			if !d.skipLiteral("null") {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			end, bad := scanNumber(b, d.i)
			if bad != "" {
				return false
			}
			d.i = end
		default:
			return false
		}
		// What follows a value: the ends of the containers it closes, then
		// a comma and the next member or element.
		for {
			if len(open) == 0 {
				return true
			}
			if d.i >= len(b) {
				return false
			}
			inner := open[len(open)-1]
			switch c := b[d.i]; c {
			case inner + 2: // } or ]
				d.i++
				open = open[:len(open)-1]
				continue
			case ',':
				d.i++
				if inner == '{' && !d.skipKey() {
					return false
				}
			default:
				return false
			}
			break
		}
	}
}

// skipKey moves past an object member's name and its colon.
func (d *Decoder) skipKey() bool {
	if d.i >= len(d.data) || d.data[d.i] != '"' || !d.skipString() {
		return false
	}
	if d.i >= len(d.data) || d.data[d.i] != ':' {
		return false
	}
	d.i++
	return true
}

func (d *Decoder) skipLiteral(s string) bool {
	if len(d.data)-d.i < len(s) || string(d.data[d.i:d.i+len(s)]) != s {
		return false
	}
	d.i += len(s)
	return true
}

// skipString moves past a string, checking its escapes and its UTF-8.
func (d *Decoder) skipString() bool {
	b := d.data
	i := d.i + 1
	start := i
	ascii := true
	for {
		var nonASCII bool
		if i, nonASCII = plainRun(b, i); nonASCII {
			ascii = false
		}
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '"':
			d.i = i + 1
			return ascii || utf8.Valid(b[start:i])
		case c == '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return false
				}
				// A lone surrogate is replaced by U+FFFD when decoded; leave
				// such strings to the decoder.
				if c := b[i+2] | 0x20; c == 'd' && (b[i+3]|0x20) >= '8' {
					return false
				}
				i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			i++
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// MarshalJSON makes encoding/json and other encoders write r as it is.
func (r Raw) MarshalJSON() ([]byte, error) { return r, nil }
