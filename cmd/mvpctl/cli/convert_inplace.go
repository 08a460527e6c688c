package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	json "github.com/goccy/go-json"
)

// rewriteInputs writes back every file that has a converted document: its
// other documents (and separators) as they were, in order, a converted one
// as YAML (or JSON, if it was JSON) under the comments above it. Every new
// file is written beside the old one before any is renamed over it, so a
// failure leaves each file whole, and if it happens while writing, every
// file as it was. Files without a converted document are not touched.
func rewriteInputs(stdout io.Writer, inputs []*convertInput) error {
	var staged []*stagedFile
	var names []*convertInput
	committed := 0
	defer func() {
		for _, s := range staged[committed:] {
			s.abort()
		}
	}()
	for _, in := range inputs {
		if changedDocs(in) == 0 {
			continue
		}
		s, err := stageInput(in)
		if err != nil {
			return fmt.Errorf("%s: %w; no file rewritten", in.name, err)
		}
		staged, names = append(staged, s), append(names, in)
	}
	for i, s := range staged {
		committed = i + 1 // commit removes the temporary file if it fails
		if err := s.commit(); err != nil {
			return fmt.Errorf("%s: %w", names[i].name, err)
		}
		fmt.Fprintf(stdout, "%s: %d of %d documents converted\n", names[i].name, changedDocs(names[i]), objectDocs(names[i]))
	}
	return nil
}

// stageInput writes the new content of an input file beside it, with the
// file's mode; a symbolic link stays a link to the rewritten file.
func stageInput(in *convertInput) (*stagedFile, error) {
	data, err := renderInput(in)
	if err != nil {
		return nil, err
	}
	path, err := filepath.EvalSymlinks(in.name)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	return stageFile(path, data, info.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky))
}

// renderInput is the new content of an input file.
func renderInput(in *convertInput) ([]byte, error) {
	var b bytes.Buffer
	for _, d := range in.docs {
		b.Write(d.Separator)
		if !d.changed {
			b.Write(d.Text)
			continue
		}
		b.Write(d.Head())
		var body bytes.Buffer
		if err := renderDoc(&body, d); err != nil {
			return nil, err
		}
		out := body.Bytes()
		if bytes.Contains(d.Text, []byte("\r\n")) {
			out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
		}
		b.Write(out)
	}
	return b.Bytes(), nil
}

// renderDoc writes a converted document's objects in the document's syntax:
// YAML, or indented JSON as kubectl writes it.
func renderDoc(w *bytes.Buffer, d *convertDoc) error {
	if !d.isJSON() {
		return writeYAML(w, d.out)
	}
	for _, o := range d.out {
		js, err := json.MarshalIndent(o, "", "    ")
		if err != nil {
			return err
		}
		w.Write(append(js, '\n'))
	}
	return nil
}

func changedDocs(in *convertInput) int {
	n := 0
	for _, d := range in.docs {
		if d.changed {
			n++
		}
	}
	return n
}

// objectDocs counts the documents that hold objects.
func objectDocs(in *convertInput) int {
	n := 0
	for _, d := range in.docs {
		if len(d.objs) > 0 {
			n++
		}
	}
	return n
}
