package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stdDecode is the reference: encoding/json's Valid decides what is valid,
// its Decoder with UseNumber what a valid input decodes to.
func stdDecode(data []byte) (any, error) {
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

var seeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-7`, `-12.5E+3`, `""`,
	`{"a":1,"a":2}`, `{"a":[1,{"b":null}],"c":"d"}`,
	`"\u00e9\ud83d\ude00\n\t\"\\\/"`, `"\ud800"`, "\"\xff\xfe\"", `"é ü ✓"`,
	`"<&>"`, "\"\u2028\u2029\"", ` { "x" : [ 1 , 2 ] } `,
	`01`, `1.`, `-`, `1e`, `.5`, `+1`, `{"a"}`, `{"a":}`, `[1,]`, `{,}`, `[`, `{"a":1`,
	`"abc`, "\"a\x01\"", `tru`, `nul`, `{"a":1}x`, `[1] [2]`, "\ufeff{}",
	`{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"o-1","generation":1,"managedFields":[{"fieldsV1":{"f:spec":{".":{}}}}]},"spec":{"replicas":1,"payload":"0123456789abcdef0123456789abcdef0123456789"}}`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
}

func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	var d Decoder // reused, as a stream reuses it: interning must not leak between inputs
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := stdDecode(data)
		got, gerr := d.Decode(data)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("Decode(%q): error %v, encoding/json's %v", data, gerr, werr)
		}
		if werr != nil {
			return
		}
		if !reflect.DeepEqual(want, got) {
			diff := cmp.Diff(want, got)
			t.Fatalf("Decode(%q) differs from encoding/json (-want +got):\n%s", data, diff)
		}
		// What decodes encodes as encoding/json encodes it.
		wantEnc, werr := json.Marshal(want)
		var e Encoder
		gotEnc, gerr := e.Append(nil, got)
		if werr != nil || gerr != nil {
			t.Fatalf("encoding %q: %v, encoding/json: %v", data, gerr, werr)
		}
		if !bytes.Equal(wantEnc, gotEnc) {
			t.Fatalf("encoding %q:\n got %s\nwant %s", data, gotEnc, wantEnc)
		}
	})
}

func FuzzEncodeString(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "\x00\x1f\x7f", "\u2028\u2029", "\xff", "é\xc3", "\t\n\r\b\f\\"} {
		f.Add(s)
	}
	var e Encoder
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		got, err := e.Append(nil, s)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, %v; encoding/json: %s", s, got, err, want)
		}
	})
}

func FuzzEncodeFloat(f *testing.F) {
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-7, 1e-6, 1e20, 1e21, 123456789e30, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1} {
		f.Add(x)
	}
	var e Encoder
	f.Fuzz(func(t *testing.T, x float64) {
		want, werr := json.Marshal(x)
		got, gerr := e.Append(nil, x)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("Append(%v) = %s, %v; encoding/json: %s, %v", x, got, gerr, want, werr)
		}
	})
}

// TestEncode_JQValues encodes every type a jq program's result holds as
// encoding/json does.
func TestEncode_JQValues(t *testing.T) {
	big1, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	for _, v := range []any{
		nil, true, false, 0, -42, int64(math.MinInt64), 1.25, 3e-9, big1, (*big.Int)(nil),
		json.Number("12"), json.Number(""), "s",
		[]any{}, []any(nil), map[string]any{}, map[string]any(nil),
		map[string]any{"b": []any{1, "x", map[string]any{"z": nil, "a": 2.5}}, "a": json.Number("-1e3"), "<": ">"},
		map[string]string{"other": "types"}, []string{"x"}, float32(1.5), uint8(7),
	} {
		want, werr := json.Marshal(v)
		var e Encoder
		got, gerr := e.Append([]byte("prefix:"), v)
		if werr != nil || gerr != nil {
			t.Errorf("%#v: %v, encoding/json: %v", v, gerr, werr)
			continue
		}
		if string(got) != "prefix:"+string(want) {
			t.Errorf("%#v: got %s, want prefix:%s", v, got, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), json.Number("1x"), map[string]any{"a": []any{math.Inf(-1)}}} {
		var e Encoder
		if _, err := e.Append(nil, v); err == nil {
			t.Errorf("%#v: no error, encoding/json refuses it", v)
		}
	}
}

// TestDecode_Interning shows a Decoder's reuse of strings does not let one
// input's values leak into another's.
func TestDecode_Interning(t *testing.T) {
	var d Decoder
	for i := range 4 * cacheSlots {
		s := strings.Repeat("k", i%50) + string(rune('a'+i%26))
		data, _ := json.Marshal(map[string]any{s: s, "n": json.Number(fmt.Sprint(i % 7))})
		v, err := d.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if m := v.(map[string]any); m[s] != s || m["n"] != json.Number(fmt.Sprint(i%7)) || len(m) != 2 {
			t.Fatalf("Decode(%s) = %v", data, v)
		}
	}
}

func TestDecode_ErrorOffset(t *testing.T) {
	var d Decoder
	_, err := d.Decode([]byte(`{"a": [1, 2 x]}`))
	se, ok := err.(*SyntaxError)
	if !ok || se.Offset != 12 {
		t.Fatalf("error %v (%T), want a SyntaxError at offset 12", err, err)
	}
	if !strings.Contains(err.Error(), `invalid character 'x' after array element`) {
		t.Errorf("error %q does not name the character and the place", err)
	}
}

// FuzzKeeping checks that keeping a member as Raw gives the same JSON, to
// a decoder, as decoding and encoding it, and fails on the same inputs.
func FuzzKeeping(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s), uint8(0))
	}
	for _, s := range []string{
		`{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"k:{\"name\":\"x\"}":{}}}}]},"spec":{}}`,
		`{"metadata":{"managedFields":[],"managedFields":{"a":1}}}`,
		`{"metadata":{"managedFields":{"a":1},"managedFields":[1, 2]}}`,
		`{"metadata":{"managedFields":"\ud800"}}`, "{\"metadata\":{\"managedFields\":\"\xff\"}}",
		`{"metadata":{"managedFields":[{"a":[[{}],[]]},-1.5e3,true,false,null,"\u003c\"\\\/\b\f\n\r\t"]}}`,
		`{"metadata":{"managedFields":[1 x]}}`, `{"metadata":{"managedFields":[{"a":1,}]}}`, `{"metadata":{"managedFields":[}}`,
		`{"metadata":null}`, `{"metadata":[]}`, `{"a":{"b":1}}`,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	paths := [][]string{{"metadata", "managedFields"}, {"a"}, {"metadata", "managedFields", "x"}}
	var d Decoder
	var e Encoder
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		path := paths[int(which)%len(paths)]
		want, werr := d.Decode(data)
		got, gerr := d.DecodeKeeping(data, path)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%q keeping %v: error %v, without keeping %v", data, path, gerr, werr)
		}
		if werr != nil {
			return
		}
		wantEnc, werr := e.Append(nil, want)
		gotEnc, gerr := e.Append(nil, got)
		if werr != nil || gerr != nil {
			t.Fatalf("%q keeping %v: encoding: %v, without keeping: %v", data, path, gerr, werr)
		}
		w, err1 := stdDecode(wantEnc)
		g, err2 := stdDecode(gotEnc)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q keeping %v: %s: %v; %s: %v", data, path, gotEnc, err2, wantEnc, err1)
		}
		if !reflect.DeepEqual(w, g) {
			t.Fatalf("%q keeping %v:\n got %s\nwant %s", data, path, gotEnc, wantEnc)
		}
	})
}

// TestKeeping_ManagedFields keeps an object's managedFields as the server
// wrote them.
func TestKeeping_ManagedFields(t *testing.T) {
	mf := `[{"manager":"m","operation":"Update","fieldsV1":{"f:spec":{"k:{\"name\":\"x\"}":{}}}}]`
	in := `{"kind":"X","metadata":{"name":"a","managedFields":` + mf + `},"spec":{"b":1}}`
	var d Decoder
	path := []string{"metadata", "managedFields"}
	v, err := d.DecodeKeeping([]byte(in), path)
	if err != nil {
		t.Fatal(err)
	}
	meta := v.(map[string]any)["metadata"].(map[string]any)
	if raw, ok := meta["managedFields"].(Raw); !ok || string(raw) != mf || meta["name"] != "a" {
		t.Fatalf("metadata decoded as %v, want managedFields kept as Raw", meta)
	}
	var e Encoder
	out, err := e.Append(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"X","metadata":{"managedFields":` + mf + `,"name":"a"},"spec":{"b":1}}`; string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if js, err := json.Marshal(v); err != nil || !bytes.Equal(js, out) {
		t.Errorf("encoding/json: %s, %v; want %s", js, err, out)
	}
	// Text that is not compact is decoded as usual.
	v, err = d.DecodeKeeping([]byte(`{"metadata":{"managedFields":[ ]}}`), path)
	if err != nil {
		t.Fatal(err)
	}
	if mf, ok := v.(map[string]any)["metadata"].(map[string]any)["managedFields"].([]any); !ok || len(mf) != 0 {
		t.Errorf("managedFields with white space: decoded %v, want it decoded", v)
	}
}
