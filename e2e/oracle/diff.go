package oracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// Change is one difference between two JSON documents.
type Change struct {
	Op   byte // '-' lost, '+' added, '~' changed
	Path string
	Old  any
	New  any
}

// jsonDiff compares a and b as encoding/json encodes them. null and [] count
// as absent ({} does not: an empty object can mean something, e.g. an
// empty label selector or behavior.scaleUp).
func jsonDiff(a, b any) ([]Change, error) {
	av, err := toGeneric(a)
	if err != nil {
		return nil, err
	}
	bv, err := toGeneric(b)
	if err != nil {
		return nil, err
	}
	var out []Change
	walk("", prune(av), prune(bv), &out)
	return out, nil
}

func toGeneric(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var g any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&g); err != nil {
		return nil, err
	}
	return g, nil
}

// prune drops null and [] values (recursively) and returns nil if v itself
// is one of those.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if p := prune(x); p == nil {
				delete(t, k)
			} else {
				t[k] = p
			}
		}
		return t
	case []any:
		if len(t) == 0 {
			return nil
		}
		for i, x := range t {
			t[i] = prune(x)
		}
		return t
	default:
		return v
	}
}

var plainKey = func(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func child(path, key string) string {
	if plainKey(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func walk(path string, a, b any, out *[]Change) {
	switch {
	case a == nil && b == nil:
		return
	case a == nil:
		*out = append(*out, Change{Op: '+', Path: path, New: b})
		return
	case b == nil:
		*out = append(*out, Change{Op: '-', Path: path, Old: a})
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			walk(child(path, k), am[k], bm[k], out)
		}
		return
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			walk(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i], out)
		}
		return
	}
	if !jsonEqual(a, b) {
		*out = append(*out, Change{Op: '~', Path: path, Old: a, New: b})
	}
}

func jsonEqual(a, b any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

func writeDiffs(w *bytes.Buffer, diffs []Change) {
	if len(diffs) == 0 {
		fmt.Fprintf(w, "No change.\n")
		return
	}
	for _, d := range diffs {
		switch d.Op {
		case '-':
			fmt.Fprintf(w, "- `- %s` (was `%s`)\n", d.Path, short(d.Old))
		case '+':
			fmt.Fprintf(w, "- `+ %s` = `%s`\n", d.Path, short(d.New))
		default:
			fmt.Fprintf(w, "- `~ %s`: `%s` → `%s`\n", d.Path, short(d.Old), short(d.New))
		}
	}
}
