package emulation

import (
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/mvpctl/mvpctl/engine"
)

func TestDiffJSONPatch(t *testing.T) {
	for _, tc := range []struct{ name, a, b, want string }{
		{"equal", `{"a":1,"b":[1,2],"c":{"d":null}}`, `{"a":1,"b":[1,2],"c":{"d":null}}`, `[]`},
		{"member added, removed, replaced", `{"a":1,"b":2}`, `{"b":3,"c":4}`,
			`[{"op":"remove","path":"/a"},{"op":"replace","path":"/b","value":3},{"op":"add","path":"/c","value":4}]`},
		{"nested objects member by member", `{"m":{"x":{"y":1,"z":2}}}`, `{"m":{"x":{"y":1,"z":3}}}`, `[{"op":"replace","path":"/m/x/z","value":3}]`},
		{"arrays whole", `{"l":[1,2,3]}`, `{"l":[1,3]}`, `[{"op":"replace","path":"/l","value":[1,3]}]`},
		{"object to scalar and null", `{"o":{"a":1},"n":1}`, `{"o":"s","n":null}`,
			`[{"op":"replace","path":"/n","value":null},{"op":"replace","path":"/o","value":"s"}]`},
		{"pointer escapes", `{"metadata":{"annotations":{"mvp.k8s.io/conversion-data":"x","a~b":"1"}}}`, `{"metadata":{"annotations":{}}}`,
			`[{"op":"remove","path":"/metadata/annotations/a~0b"},{"op":"remove","path":"/metadata/annotations/mvp.k8s.io~1conversion-data"}]`},
		{"exact numbers", `{"g":1}`, `{"g":9223372036854775807}`, `[{"op":"replace","path":"/g","value":9223372036854775807}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := engine.DecodeObject([]byte(tc.a))
			if err != nil {
				t.Fatal(err)
			}
			b, err := engine.DecodeObject([]byte(tc.b))
			if err != nil {
				t.Fatal(err)
			}
			got, err := engine.EncodeObject(diffJSONPatch(a, b))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			// The apiserver's json-patch turns a into b with it.
			p, err := jsonpatch.DecodePatch(got)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply([]byte(tc.a))
			if err != nil {
				t.Fatal(err)
			}
			if !jsonpatch.Equal(out, []byte(tc.b)) {
				t.Errorf("applied: %s, want %s", out, tc.b)
			}
		})
	}
}
