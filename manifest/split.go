package manifest

import (
	"bytes"
	"fmt"
	"io"
)

// MaxDocument bounds one YAML or JSON document (a List of many objects is
// one document).
const MaxDocument = 64 << 20

// MaxFile bounds what Read reads from one file or stream.
const MaxFile = 256 << 20

// Document is one document of a stream, as written.
type Document struct {
	// Separator is the "---" line before the document, with its comment
	// and line ending; empty for a stream's first document.
	Separator []byte
	// Text is the document up to the next separator line.
	Text []byte
	// Start is the line Text starts on (1-based), and Line the first line
	// that is neither blank nor a comment: where the object starts. Line
	// is zero for a document of blank lines and comments only.
	Start, Line int
}

// Blank says whether the document holds nothing but blank lines and
// comments.
func (d *Document) Blank() bool { return d.Line == 0 }

// Head is the blank lines and comments above the document's content: a
// description, or the "# Source: chart/templates/x.yaml" line Helm writes.
func (d *Document) Head() []byte {
	if d.Blank() {
		return d.Text
	}
	rest, n := d.Text, 0
	for l := d.Start; l < d.Line; l++ {
		i := bytes.IndexByte(rest, '\n')
		n += i + 1
		rest = rest[i+1:]
	}
	return d.Text[:n]
}

// TooLargeError is a document or stream over its bound.
type TooLargeError struct {
	// Line is where the document starts; zero for a whole stream.
	Line int
	Max  int
}

func (e *TooLargeError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("larger than %d MiB", e.Max>>20)
	}
	return fmt.Sprintf("line %d: document larger than %d MiB", e.Line, e.Max>>20)
}

// Read reads a whole stream, up to MaxFile bytes.
func Read(r io.Reader) ([]byte, error) { return read(r, MaxFile) }

func read(r io.Reader, max int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return nil, &TooLargeError{Max: max}
	}
	return data, nil
}

// Split cuts a stream into documents at separator lines ("---" alone or
// followed by a comment), as apimachinery's YAMLReader and kubectl do.
// Concatenating the Separator and Text of every document gives data back.
// A document over MaxDocument is a *TooLargeError.
func Split(data []byte) ([]Document, error) { return split(data, MaxDocument) }

func split(data []byte, max int) ([]Document, error) {
	var docs []Document
	cur := Document{Start: 1}
	begin := 0 // where cur.Text begins in data
	line := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n') + off + 1
		if end == off { // no newline: the last line
			end = len(data)
		}
		line++
		if isSeparator(data[off:end]) {
			cur.Text = data[begin:off]
			docs = append(docs, cur)
			cur = Document{Separator: data[off:end], Start: line + 1}
			begin = end
		} else if cur.Line == 0 && !isBlankOrComment(data[off:end]) {
			cur.Line = line
		}
		if end-begin > max {
			return nil, &TooLargeError{Line: cur.Start, Max: max}
		}
		off = end
	}
	cur.Text = data[begin:]
	docs = append(docs, cur)
	if len(docs) > 0 && len(docs[0].Separator) == 0 && len(docs[0].Text) == 0 {
		docs = docs[1:] // the stream starts with a separator
	}
	return docs, nil
}

// isSeparator matches "---" alone on a line or followed by a comment.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

func isBlankOrComment(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) == 0 || t[0] == '#'
}
