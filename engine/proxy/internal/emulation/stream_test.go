package emulation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// seedEmulation is the emulation of v1alpha1 from v1beta1 by the seed
// rules, with maxObject as the emulator's MaxObjectBytes.
func seedEmulation(t testing.TB, maxObject int64) *emulation {
	return &emulation{
		rules: &Rules{e: &Emulator{opts: Options{MaxObjectBytes: maxObject}}, conv: proxytest.SeedConverter(t)},
		t: target{
			requested: schema.GroupVersion{Group: "myapps.example.com", Version: "v1alpha1"},
			served:    schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"},
			resource:  "customresources", kind: "Customresource",
		},
	}
}

// chunkReader returns its chunks in turn (then io.EOF), each in as many
// reads as the reader's buffer takes, and records how many writes the
// recorder had seen before it started each chunk.
type chunkReader struct {
	chunks []string
	dst    *writeRecorder
	atRead []int
	pos    int // in chunks[0]
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		c.atRead = append(c.atRead, len(c.dst.writes))
		return 0, io.EOF
	}
	if c.pos == 0 {
		c.atRead = append(c.atRead, len(c.dst.writes))
	}
	n := copy(p, c.chunks[0][c.pos:])
	if c.pos += n; c.pos == len(c.chunks[0]) {
		c.chunks, c.pos = c.chunks[1:], 0
	}
	return n, nil
}

// writeRecorder keeps every write separately.
type writeRecorder struct{ writes []string }

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// copyWatch copies the emulation's watch of src to dst, one write per read.
func copyWatch(em *emulation, src io.Reader, dst io.Writer) error {
	_, err := io.Copy(dst, em.newWatchBody(context.Background(), io.NopCloser(src)))
	return err
}

func addedEvent(obj string) string { return fmt.Sprintf("{\"type\":\"ADDED\",\"object\":%s}\n", obj) }

// Events the backend sent together are written together, and before the
// backend's stream is read again: a client never waits for the next event
// to see the previous ones.
func TestStreamWatch_WritesWhatWasReadBeforeReadingMore(t *testing.T) {
	em := seedEmulation(t, 64<<20)
	served, client := addedEvent(proxytest.ServedObject), addedEvent(proxytest.ClientObject)
	half := len(served) / 2
	dst := &writeRecorder{}
	src := &chunkReader{dst: dst, chunks: []string{
		served + served + served, // three events in one read
		served[:half],            // an event in two reads
		served[half:] + served,
	}}
	if err := copyWatch(em, src, dst); err != nil {
		t.Fatal(err)
	}
	// Before the reads: nothing; the three events; still the three (half
	// an event is not written); the last two events.
	if want := []int{0, 1, 1, 2}; fmt.Sprint(src.atRead) != fmt.Sprint(want) {
		t.Errorf("writes seen at each read of the backend: %v, want %v", src.atRead, want)
	}
	if len(dst.writes) != 2 {
		t.Fatalf("%d writes, want 2: %q", len(dst.writes), dst.writes)
	}
	for i, n := range []int{3, 2} {
		lines := strings.SplitAfter(dst.writes[i], "\n")
		if lines[len(lines)-1] != "" || len(lines)-1 != n {
			t.Fatalf("write %d: %q, want %d whole events", i, dst.writes[i], n)
		}
		for _, l := range lines[:n] {
			proxytest.SameJSON(t, client, l)
		}
	}
}

// A broken stream ends cleanly after the last whole event.
func TestStreamWatch_BrokenLastEventIsDropped(t *testing.T) {
	em := seedEmulation(t, 64<<20)
	served := addedEvent(proxytest.ServedObject)
	var dst bytes.Buffer
	if err := copyWatch(em, strings.NewReader(served+served[:len(served)/2]), &dst); err != nil {
		t.Fatal(err)
	}
	proxytest.SameJSON(t, addedEvent(proxytest.ClientObject), dst.String())
}

// An event over MaxObjectBytes ends the stream with an ERROR event after
// the events before it, holding no more than the bound.
func TestStreamWatch_EventOverTheBoundIsAnError(t *testing.T) {
	served := addedEvent(proxytest.ServedObject)
	em := seedEmulation(t, int64(len(served)))
	huge := fmt.Sprintf("{\"type\":\"ADDED\",\"object\":{\"pad\":%q}}\n", strings.Repeat("x", 100<<10))
	var dst bytes.Buffer
	if err := copyWatch(em, strings.NewReader(served+huge+served), &dst); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(dst.String(), "\n")
	if len(lines) != 3 || lines[2] != "" {
		t.Fatalf("%q", dst.String())
	}
	proxytest.SameJSON(t, addedEvent(proxytest.ClientObject), lines[0])
	if !strings.HasPrefix(lines[1], `{"type":"ERROR","object":{"kind":"Status"`) || !strings.Contains(lines[1], `"code":500`) || !strings.Contains(lines[1], "larger than") {
		t.Errorf("%s", lines[1])
	}
}

// A list item over MaxObjectBytes breaks the list instead of being read
// whole.
func TestStreamList_ItemOverTheBoundBreaksTheList(t *testing.T) {
	em := seedEmulation(t, int64(len(proxytest.ServedObject)))
	list := fmt.Sprintf(`{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{},"items":[%s,{"pad":%q}]}`,
		proxytest.ServedObject, strings.Repeat("x", 100<<10))
	err := em.streamList(context.Background(), strings.NewReader(list), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "items[1] is larger than") {
		t.Fatalf("got %v, want items[1] over the bound", err)
	}
}

// The list's envelope keeps its members, in order, whatever white space
// the backend put between the tokens.
func TestStreamList_Envelope(t *testing.T) {
	em := seedEmulation(t, 64<<20)
	for _, tc := range []struct{ in, want string }{
		{`{}`, "{}\n"},
		{" {\n \"kind\" : \"CustomresourceList\" ,\"apiVersion\":\"myapps.example.com/v1beta1\", \"metadata\" : {\"resourceVersion\":\"7\"}, \"items\" : [ ] } ",
			`{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1alpha1","metadata":{"resourceVersion":"7"},"items":[]}` + "\n"},
		{`{"items":[` + proxytest.ServedObject + ` , ` + proxytest.ServedObject + `],"x\u0041":1}`, ""},
	} {
		var out bytes.Buffer
		if err := em.streamList(context.Background(), strings.NewReader(tc.in), &out); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if tc.want == "" {
			tc.want = fmt.Sprintf(`{"items":[%s,%s],"xA":1}`, proxytest.ClientObject, proxytest.ClientObject)
			proxytest.SameJSON(t, tc.want, out.String())
			continue
		}
		if out.String() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, out.String(), tc.want)
		}
	}
}

// A list that is not JSON, or is cut short, is an error, never a clean end.
func TestStreamList_BadLists(t *testing.T) {
	em := seedEmulation(t, 64<<20)
	for _, in := range []string{
		``, `[]`, `{"items":{}}`, `{"items":[` + proxytest.ServedObject, `{"items":[1]}`, `{"items":[{"a":1} {"a":2}]}`,
		`{"metadata":{"a":}}`, `{"apiVersion":1}`, `{"kind":"x"`, `{"kind" "x"}`, `{kind:1}`,
	} {
		if err := em.streamList(context.Background(), strings.NewReader(in), io.Discard); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

// valueReader reads each value of valid JSON exactly, as an element of an
// array too, and on any input returns without panicking.
func FuzzValueReader(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"}\"]"}]}`, ` "x\\" `, `123 `, `-1e5`, `true`, `null`, `[[[]]]`, `{"a":"\u00e9"}`, `"`, `{`, `00`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := newValueReader(bytes.NewReader(data), 1<<20).value()
		if !json.Valid(data) {
			return
		}
		want := bytes.TrimSpace(data)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q (%v)", data, got, err)
		}
		r := newValueReader(bytes.NewReader(slices.Concat([]byte("["), data, []byte(","), data, []byte("]"))), 1<<20)
		if err := r.expect('['); err != nil {
			t.Fatal(err)
		}
		for i, end := range []bool{false, true} {
			got, err := r.value()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%q: element %d: got %q (%v)", data, i, got, err)
			}
			if more, err := r.next(']'); err != nil || more == end {
				t.Fatalf("%q: after element %d: more %v, %v", data, i, more, err)
			}
		}
	})
}

// A list's items and a watch's objects keep their managedFields as the
// kube-apiserver wrote them (the seed rules never touch them), and convert
// to what the same object converts to read whole (GET).
func TestStream_KeepsManagedFieldsAsServed(t *testing.T) {
	em := seedEmulation(t, 64<<20)
	items := []string{benchItem(1), benchItem(2), proxytest.ServedObject,
		// Not compact: decoded and encoded as usual.
		strings.Replace(benchItem(3), `"managedFields":[{`, `"managedFields":[ {`, 1)}
	served := `[{"manager":"e2e","operation":"Update","apiVersion":"myapps.example.com/v1beta1"`
	var want []any
	for _, it := range items {
		b, st := em.convertObjectBytes(context.Background(), []byte(it))
		if st != nil {
			t.Fatal(st)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}

	var list, watch bytes.Buffer
	list.WriteString(`{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{"resourceVersion":"7"},"items":[` + strings.Join(items, ",") + `]}`)
	for _, it := range items {
		watch.WriteString(addedEvent(it))
	}
	var listOut, watchOut bytes.Buffer
	if err := em.streamList(context.Background(), &list, &listOut); err != nil {
		t.Fatal(err)
	}
	if err := copyWatch(em, &watch, &watchOut); err != nil {
		t.Fatal(err)
	}
	var l struct{ Items []any }
	if err := json.Unmarshal(listOut.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	var events []any
	for line := range strings.Lines(watchOut.String()) {
		var ev struct{ Object any }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		events = append(events, ev.Object)
	}
	for name, got := range map[string][]any{"list": l.Items, "watch": events} {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: objects differ from those converted whole (-want +got):\n%s", name, diff)
		}
	}
	for name, out := range map[string]string{"list": listOut.String(), "watch": watchOut.String()} {
		if n := strings.Count(out, served); n != 2 {
			t.Errorf("%s: managedFields as served appear %d times, want 2 (the compact ones):\n%s", name, n, out)
		}
	}
}
