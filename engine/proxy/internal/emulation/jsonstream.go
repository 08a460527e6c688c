package emulation

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// valueReader reads the JSON values of a stream one at a time, whole and
// bounded, without decoding them: a list's envelope member by member and
// its items one by one, each then decoded in a single pass (goccy/go-json's
// Unmarshal, far cheaper than its stream decoder).
type valueReader struct {
	br    *bufio.Reader
	limit int    // bounds one value
	buf   []byte // the last value read, reused
}

func newValueReader(src io.Reader, limit int) *valueReader {
	return &valueReader{br: bufio.NewReaderSize(src, 64<<10), limit: limit}
}

// errValueTooLarge is a value over the valueReader's limit.
var errValueTooLarge = errors.New("value too large")

// peek skips white space and returns the next byte without reading it.
func (r *valueReader) peek() (byte, error) {
	for {
		c, err := r.br.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, r.br.UnreadByte()
	}
}

// expect reads the delimiter want, after white space.
func (r *valueReader) expect(want byte) error {
	c, err := r.peek()
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("expected %q in the JSON body, found %q", want, c)
	}
	_, err = r.br.ReadByte()
	return err
}

// next reads the delimiter that follows a member or an element: a comma,
// or end. It reports whether it was a comma.
func (r *valueReader) next(end byte) (bool, error) {
	c, err := r.peek()
	if err != nil {
		return false, err
	}
	if c != ',' && c != end {
		return false, fmt.Errorf("expected ',' or %q in the JSON body, found %q", end, c)
	}
	_, err = r.br.ReadByte()
	return c == ',', err
}

// key reads an object member's name and the colon after it.
func (r *valueReader) key() (string, error) {
	raw, err := r.value()
	if err != nil {
		return "", err
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", fmt.Errorf("an object member's name: %w", err)
	}
	return k, r.expect(':')
}

// value reads the next JSON value, after white space. The bytes are valid
// until the next call; they are checked only for the nesting of brackets
// and strings, the decoder (or json.Valid) checks the rest.
func (r *valueReader) value() ([]byte, error) {
	if _, err := r.peek(); err != nil {
		return nil, err
	}
	if cap(r.buf) > 4<<20 {
		r.buf = nil // after a large value: give the memory back
	}
	r.buf = r.buf[:0]
	var sc valueScanner
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if err == io.EOF && sc.literal() {
					return r.buf, nil // a number or literal that ends the stream
				}
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
		chunk, _ := r.br.Peek(r.br.Buffered())
		n, done := sc.scan(chunk)
		if len(r.buf)+n > r.limit {
			return nil, errValueTooLarge
		}
		r.buf = append(r.buf, chunk[:n]...)
		if _, err := r.br.Discard(n); err != nil {
			return nil, err
		}
		if done {
			return r.buf, nil
		}
	}
}

// valueScanner finds where one JSON value ends, across chunks of input.
type valueScanner struct {
	started  bool
	depth    int  // open brackets
	inString bool // inside a string
	escaped  bool // after a backslash in a string
	scalar   bool // a number, true, false or null at the top level
}

func (s *valueScanner) literal() bool { return s.scalar }

// scan consumes the value's bytes at the start of b: it returns how many
// belong to the value, and whether the value ended there.
func (s *valueScanner) scan(b []byte) (int, bool) {
	i := 0
	if !s.started {
		s.started = true
		switch b[0] {
		case '{', '[':
			s.depth = 1
		case '"':
			s.inString = true
		default:
			s.scalar = true
		}
		i = 1
	}
	for i < len(b) {
		if s.scalar {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i, true
			}
			i++
			continue
		}
		if s.inString {
			if s.escaped {
				s.escaped = false
				i++
				continue
			}
			j := bytes.IndexAny(b[i:], `"\`)
			if j < 0 {
				return len(b), false
			}
			i += j
			if b[i] == '\\' {
				s.escaped = true
			} else {
				s.inString = false
				if s.depth == 0 {
					return i + 1, true
				}
			}
			i++
			continue
		}
		switch b[i] {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				return i + 1, true
			}
		}
		i++
	}
	return len(b), false
}
