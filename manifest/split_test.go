package manifest

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		// want is each document as separator|text|start|line.
		want []string
	}{
		{"empty", "", nil},
		{"one", "a: 1\n", []string{"|a: 1\n|1|1"}},
		{"no final newline", "a: 1", []string{"|a: 1|1|1"}},
		{"two", "a: 1\n---\nb: 2\n", []string{"|a: 1\n|1|1", "---\n|b: 2\n|3|3"}},
		{"leading separator", "---\na: 1\n", []string{"---\n|a: 1\n|2|2"}},
		{"trailing separator", "a: 1\n---\n", []string{"|a: 1\n|1|1", "---\n||3|0"}},
		{"comments", "# top\n\n---  # next\n# about b\nb: 2\n", []string{"|# top\n\n|1|0", "---  # next\n|# about b\nb: 2\n|4|5"}},
		{"crlf", "a: 1\r\n---\r\nb: 2\r\n", []string{"|a: 1\r\n|1|1", "---\r\n|b: 2\r\n|3|3"}},
		{"not a separator", "a: |\n  x\n---x\n", []string{"|a: |\n  x\n---x\n|1|1"}},
		{"indented dashes", "a: |\n  ---\n", []string{"|a: |\n  ---\n|1|1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Split([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var all []byte
			for _, d := range docs {
				got = append(got, strings.Join([]string{string(d.Separator), string(d.Text), strconv.Itoa(d.Start), strconv.Itoa(d.Line)}, "|"))
				all = append(append(all, d.Separator...), d.Text...)
			}
			if strings.Join(got, "\n~\n") != strings.Join(tc.want, "\n~\n") {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if !bytes.Equal(all, []byte(tc.in)) {
				t.Errorf("the documents put together are %q, not the input", all)
			}
		})
	}
}

func TestDocument_Head(t *testing.T) {
	docs, err := Split([]byte("a: 1\n---\n# Source: chart/templates/ing.yaml\n\nkind: Ingress\n# inside\n"))
	if err != nil {
		t.Fatal(err)
	}
	if h := string(docs[1].Head()); h != "# Source: chart/templates/ing.yaml\n\n" {
		t.Errorf("Head = %q", h)
	}
	if h := docs[0].Head(); len(h) != 0 {
		t.Errorf("Head of a document without comments = %q", h)
	}
}

func TestSplit_TooLarge(t *testing.T) {
	const max = 2 << 20
	if _, err := split([]byte("b: "+strings.Repeat("x", max-4)+"\n"), max); err != nil {
		t.Errorf("a document of the bound: %v", err)
	}
	_, err := split([]byte("a: 1\n---\nb: "+strings.Repeat("x", max)+"\n"), max)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Line != 3 || err.Error() != "line 3: document larger than 2 MiB" {
		t.Errorf("err = %v", err)
	}
}

func TestRead_TooLarge(t *testing.T) {
	const max = 1 << 20
	if data, err := read(bytes.NewReader(make([]byte, max)), max); err != nil || len(data) != max {
		t.Errorf("a stream of the bound: %d bytes, %v", len(data), err)
	}
	_, err := read(zeros{}, max)
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != "larger than 1 MiB" {
		t.Errorf("an endless stream: %v", err)
	}
}

// zeros is an endless stream.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
