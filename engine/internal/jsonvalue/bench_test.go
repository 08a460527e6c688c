package jsonvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchObject is a ~1.1 KB custom resource, as the proxy's emulation
// benchmarks list and watch it.
var benchObject = []byte(fmt.Sprintf(`{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"o-00001","namespace":"list","uid":"0b0e4a2c-1c0e-4f6b-9d7e-6d1b0d3f2a11","resourceVersion":"1001","generation":1,"creationTimestamp":"2026-11-29T18:55:07Z","managedFields":[{"manager":"e2e","operation":"Update","apiVersion":"myapps.example.com/v1beta1","time":"2026-11-29T18:55:07Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:config":{".":{},"f:requestTimeoutSeconds":{},"f:retries":{}},"f:payload":{},"f:replicas":{},"f:stateManagement":{}}}}]},"spec":{"config":{"requestTimeoutSeconds":30,"retries":3},"payload":%q,"replicas":1,"stateManagement":"stateless"}}`,
	strings.Repeat("0123456789abcdef", 500/16)))

// BenchmarkDecode decodes benchObject; encoding/json (UseNumber) is the
// baseline.
func BenchmarkDecode(b *testing.B) {
	b.Run("jsonvalue", func(b *testing.B) {
		var d Decoder
		b.SetBytes(int64(len(benchObject)))
		for b.Loop() {
			if _, err := d.Decode(benchObject); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchObject)))
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(benchObject))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncode encodes benchObject's value; encoding/json's Marshal is
// the baseline.
func BenchmarkEncode(b *testing.B) {
	var d Decoder
	v, err := d.Decode(benchObject)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("jsonvalue", func(b *testing.B) {
		var e Encoder
		var buf []byte
		b.SetBytes(int64(len(benchObject)))
		for b.Loop() {
			if buf, err = e.Append(buf[:0], v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchObject)))
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
