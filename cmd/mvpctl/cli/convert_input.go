package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/manifest"
)

// convertInput is one file (or standard input) of mvpctl convert, split
// into documents.
type convertInput struct {
	// name is the file as given, or <stdin>.
	name string
	// arg is the -f argument the file was found under (the file itself, or
	// a directory): the tree --in-place may write in.
	arg  string
	docs []*convertDoc
}

// convertDoc is one document of an input: its text as read, its objects,
// and what conversion made of them.
type convertDoc struct {
	manifest.Document
	// objs are the objects as decoded (a List is one object); none for a
	// document of comments.
	objs []map[string]any
	// out are the objects to write: converted, or as decoded where they
	// need no change or failed.
	out []map[string]any
	// changed says whether out differs from objs.
	changed bool
}

// source names the document in messages: file:line.
func (d *convertDoc) source(in *convertInput) string {
	return fmt.Sprintf("%s:%d", in.name, d.Line)
}

// isJSON says whether the document is written as JSON.
func (d *convertDoc) isJSON() bool {
	t := bytes.TrimSpace(d.Text)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// readInputs reads the files, directories (their *.yaml, *.yml and *.json
// files, one level deep or with recursive the whole tree) and standard
// input that -f names, and decodes every document. unique reads a file
// named twice once.
func readInputs(stdin io.Reader, names []string, recursive, unique bool) ([]*convertInput, error) {
	var inputs []*convertInput
	seen := map[string]bool{}
	for _, name := range names {
		if name == "-" {
			in, err := readInput("<stdin>", stdin)
			if err != nil {
				return nil, err
			}
			inputs = append(inputs, in)
			continue
		}
		_, err := manifest.Walk(name, manifest.WalkOptions{Recursive: recursive}, func(path string, err error) error {
			if err != nil {
				return err
			}
			if abs, err := filepath.Abs(path); unique && err == nil {
				if seen[abs] {
					return nil
				}
				seen[abs] = true
			}
			in, err := readFile(path)
			if err != nil {
				return err
			}
			in.arg = name
			inputs = append(inputs, in)
			return nil
		})
		if errors.As(err, new(*manifest.NoFilesError)) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err != nil {
			return nil, err
		}
	}
	return inputs, nil
}

func readFile(name string) (*convertInput, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readInput(name, f)
}

// readInput reads and decodes one stream.
func readInput(name string, r io.Reader) (*convertInput, error) {
	data, err := manifest.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	docs, err := manifest.Split(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	in := &convertInput{name: name}
	for _, d := range docs {
		doc := &convertDoc{Document: d}
		if doc.objs, err = engine.DecodeDocument(d.Text); err != nil {
			return nil, decodeError(name, &d, err)
		}
		in.docs = append(in.docs, doc)
	}
	return in, nil
}

// yamlLineRE finds the line yaml.v2 and v3 put in their errors.
var yamlLineRE = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+): `)

// decodeError names the file and line of a document that does not decode:
// the line of a YAML syntax error, counted from the start of the file.
func decodeError(name string, d *manifest.Document, err error) error {
	line := d.Line
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		line, msg = d.Start+n-1, "yaml: "+msg[m[1]:]
	}
	var notObject *engine.NotObjectError
	if errors.As(err, &notObject) {
		msg = "the document is " + msg
	}
	return fmt.Errorf("%s:%d: %s", name, line, msg)
}

// objectCount is the number of objects of the inputs.
func objectCount(inputs []*convertInput) int {
	n := 0
	for _, in := range inputs {
		for _, d := range in.docs {
			n += len(d.objs)
		}
	}
	return n
}

// writeDocsYAML writes the documents of the inputs as YAML separated by
// ---: a document that needs no change as it was read (text and comments),
// a converted one as YAML after the comments above it.
func writeDocsYAML(w io.Writer, inputs []*convertInput) error {
	var b bytes.Buffer
	for _, in := range inputs {
		for _, d := range in.docs {
			if len(d.objs) == 0 {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("---\n")
			}
			if !d.changed && !d.isJSON() {
				b.Write(d.Text)
				if !bytes.HasSuffix(d.Text, []byte("\n")) {
					b.WriteByte('\n')
				}
				continue
			}
			if !d.isJSON() {
				b.Write(d.Head())
			}
			if err := writeYAML(&b, d.out); err != nil {
				return err
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// outObjects lists the objects to write, in order.
func outObjects(inputs []*convertInput) []map[string]any {
	var out []map[string]any
	for _, in := range inputs {
		for _, d := range in.docs {
			out = append(out, d.out...)
		}
	}
	return out
}
