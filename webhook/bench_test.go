package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mvpctl/mvpctl/engine"
)

// benchObjects are n Widgets at v1alpha1 of about 2 KB each (the object
// size of Kubernetes' CRD scalability target), with managedFields.
func benchObjects(n int) []map[string]any {
	objs := make([]map[string]any, n)
	for i := range objs {
		o := widget("v1alpha1", fmt.Sprintf("widget-%05d", i))
		meta := o["metadata"].(map[string]any)
		meta["annotations"] = map[string]any{"example.com/owner": "team-a", "example.com/description": "a widget of the benchmark, with some text to make it the size of a real object"}
		meta["managedFields"] = []any{map[string]any{"manager": "kubectl", "operation": "Update", "apiVersion": "example.com/v1alpha1",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:size": map[string]any{}, "f:mode": map[string]any{}, "f:items": map[string]any{}}}}}
		spec := o["spec"].(map[string]any)
		items := make([]any, 16)
		for j := range items {
			items[j] = map[string]any{"name": fmt.Sprintf("item-%d", j), "value": json.Number(fmt.Sprint(j * 1000)), "enabled": j%2 == 0, "tag": "abcdefghijklmnopqrstuvwxyz"}
		}
		spec["items"] = items
		objs[i] = o
	}
	return objs
}

// BenchmarkReview answers a review of 1,500 objects of ~2 KB from
// v1alpha1 to v1 (two rules) through the handler, beside a same-run
// baseline: encoding/json decoding the review and encoding it again,
// converting nothing (the floor of any Go webhook). Report the ratio.
func BenchmarkReview(b *testing.B) {
	body := reviewBody(b, reviewV1, "u", "example.com/v1", benchObjects(1500)...)
	b.Run("mvpctl", func(b *testing.B) {
		h := newTestHandler(b, loadConverter(b, widgetRules, engine.Options{}), HandlerOptions{})
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
			if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"status":"Success"`)) {
				b.Fatalf("code %d: %.300s", rec.Code, rec.Body.Bytes())
			}
		}
	})
	b.Run("baseline-json-decode-encode", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var rev map[string]any
			d := json.NewDecoder(bytes.NewReader(body))
			d.UseNumber()
			if err := d.Decode(&rev); err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(rev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
