package lint

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mvpctl/mvpctl/rules"
)

// The executors agree on every golden case of the engine, so disagreement
// cannot be provoked through rules; compareExecutors is tested directly.
func TestCompareExecutors(t *testing.T) {
	a := map[string]any{"spec": map[string]any{"x": json.Number("1"), "y": "a"}}
	same := map[string]any{"spec": map[string]any{"x": 1.0, "y": "a"}}
	other := map[string]any{"spec": map[string]any{"x": json.Number("1"), "y": "b"}}
	fail := errors.New("boom")
	for _, tc := range []struct {
		name       string
		a, b       map[string]any
		errA, errB error
		wantID     string
		wantPath   string
	}{
		{"equal numbers in different forms", a, same, nil, nil, "", ""},
		{"different value", a, other, nil, nil, IDExecutorMismatch, "spec.y"},
		{"only jq fails", a, nil, nil, fail, IDExecutorMismatch, ""},
		{"only native fails", nil, a, fail, nil, IDExecutorMismatch, ""},
		{"both fail", nil, nil, fail, fail, IDConversionError, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := compareExecutors("forward", tc.a, tc.errA, tc.b, tc.errB)
			switch {
			case tc.wantID == "" && f != nil:
				t.Fatalf("got %+v, want no failure", f)
			case tc.wantID != "" && (f == nil || f.id != tc.wantID || f.path != tc.wantPath):
				t.Fatalf("got %+v, want %s at %q", f, tc.wantID, tc.wantPath)
			}
		})
	}
}

func TestFirstDiff(t *testing.T) {
	for _, tc := range []struct {
		want, got string
		path      string
		detail    string
	}{
		{`{"a":1}`, `{"a":1}`, "", ""},
		{`{"a":{"b":[1,2]}}`, `{"a":{"b":[1,3]}}`, "a.b[1]", "got 3, want 2"},
		{`{"a":1,"z":1}`, `{"z":1}`, "a", "missing, want 1"},
		{`{"a":1}`, `{"a":1,"m":{"annotations":{"k/v":"x"}}}`, "m", `got {"annotations":{"k/v":"x"}}, want no field`},
		{`{"a":[1]}`, `{"a":[1,2]}`, "a", "got [1,2], want [1]"},
	} {
		var w, g any
		_ = json.Unmarshal([]byte(tc.want), &w)
		_ = json.Unmarshal([]byte(tc.got), &g)
		p, d, differ := firstDiff(w, g, nil)
		if differ != (tc.path != "" || tc.detail != "") || p != tc.path || d != tc.detail {
			t.Errorf("firstDiff(%s, %s) = %q, %q, %v; want %q, %q", tc.want, tc.got, p, d, differ, tc.path, tc.detail)
		}
	}
}

func TestModifyLoss(t *testing.T) {
	v := func(x any) *rules.Value { return &rules.Value{V: x} }
	for _, tc := range []struct {
		name string
		t    rules.Transformation
		n    int
	}{
		{"swap is injective", rules.Transformation{ValueMap: []rules.ValuePair{{From: v("a"), To: v("b")}, {From: v("b"), To: v("a")}}}, 0},
		{"single pair passes the target through", rules.Transformation{MatchValue: v("a"), ReplaceValue: v("b")}, 2},
		{"two to one", rules.Transformation{ValueMap: []rules.ValuePair{{From: v("a"), To: v("c")}, {From: v("b"), To: v("c")}, {From: v("c"), To: v("a")}}}, 1},
		{"identity pair", rules.Transformation{MatchValue: v("a"), ReplaceValue: v("a")}, 0},
	} {
		if got := modifyLoss(&tc.t); len(got) != tc.n {
			t.Errorf("%s: got %d findings %q, want %d", tc.name, len(got), got, tc.n)
		}
	}
}
