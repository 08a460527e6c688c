package jsonvalue

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// An Encoder encodes values as encoding/json's Marshal does: compact, map
// keys sorted, strings HTML-escaped. It reuses its scratch space; it is not
// safe for concurrent use.
type Encoder struct {
	members []member // the sorted members of the maps being encoded, a stack
}

// member is a map entry, so that encoding a map sorts its entries rather
// than sorting its keys and then looking each up.
type member struct {
	k string
	v any
}

// Append appends v's encoding to dst.
func (e *Encoder) Append(dst []byte, v any) ([]byte, error) {
	return e.value(dst, v, 0)
}

func (e *Encoder) value(dst []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case string:
		return appendString(dst, v), nil
	case Raw:
		return append(dst, v...), nil
	case json.Number:
		if v == "" {
			return append(dst, '0'), nil
		}
		if !validNumber(string(v)) {
			return dst, fmt.Errorf("json: invalid number literal %q", string(v))
		}
		return append(dst, v...), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case float64:
		return appendFloat(dst, v)
	case *big.Int:
		if v == nil {
			return append(dst, "null"...), nil
		}
		return v.Append(dst, 10), nil
	case map[string]any:
		if depth++; depth > maxDepth {
			return dst, fmt.Errorf("json: exceeded max depth")
		}
		return e.object(dst, v, depth)
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		if depth++; depth > maxDepth {
			return dst, fmt.Errorf("json: exceeded max depth")
		}
		dst = append(dst, '[')
		for i, x := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = e.value(dst, x, depth); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	b, err := json.Marshal(v) // a type jq values do not have
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

func (e *Encoder) object(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	base := len(e.members)
	for k, v := range m {
		e.members = append(e.members, member{k, v})
	}
	members := e.members[base:]
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.k, b.k) })
	dst = append(dst, '{')
	var err error
	for i, mb := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, mb.k), ':')
		if dst, err = e.value(dst, mb.v, depth); err != nil {
			break
		}
	}
	clear(members) // hold no references to the values
	e.members = e.members[:base]
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendFloat formats f as encoding/json does.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// validNumber reports whether s is a JSON number.
func validNumber(s string) bool {
	end, bad := scanNumber(s, 0)
	return bad == "" && end == len(s)
}

const hex = "0123456789abcdef"

// appendString appends s quoted as encoding/json does with HTML escaping:
// <, > and & as \u003c, \u003e and \u0026, U+2028 and U+2029 escaped,
// invalid UTF-8 as U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			x := wordString(s, i)
			if x&msb|hasControl(x)|hasByte(x, '"')|hasByte(x, '\\')|hasByte(x, '<')|hasByte(x, '>')|hasByte(x, '&') == 0 {
				i += 8
				continue
			}
		}
		if c := s[i]; c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// safe marks the ASCII bytes a string holds unescaped: printable, and not
// ", \, <, > or &.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()
