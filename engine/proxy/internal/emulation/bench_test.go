package emulation

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine/proxy/internal/proxytest"
)

// benchItem is the ~1.1 KB object of the LIST and watch benchmarks, as
// the e2e benchmark creates it (with a 500-byte payload).
func benchItem(i int) string {
	return fmt.Sprintf(`{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"o-%05d","namespace":"list","uid":"0b0e4a2c-1c0e-4f6b-9d7e-6d1b0d3f2a11","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-11-29T18:55:07Z","managedFields":[{"manager":"e2e","operation":"Update","apiVersion":"myapps.example.com/v1beta1","time":"2026-11-29T18:55:07Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:config":{".":{},"f:requestTimeoutSeconds":{},"f:retries":{}},"f:payload":{},"f:replicas":{},"f:stateManagement":{}}}}]},"spec":{"config":{"requestTimeoutSeconds":30,"retries":3},"payload":%q,"replicas":1,"stateManagement":"stateless"}}`,
		i, 1000+i, strings.Repeat("0123456789abcdef", 500/16))
}

func benchEmulation(b *testing.B) *emulation {
	return &emulation{rules: &Rules{e: &Emulator{}, conv: proxytest.SeedConverter(b)}, t: target{
		requested: schema.GroupVersion{Group: "myapps.example.com", Version: "v1alpha1"},
		served:    schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"},
		resource:  "customresources", kind: "Customresource",
	}}
}

// BenchmarkEmulation_StreamList converts a LIST of 10,000 ~1 KB objects as
// the emulated LIST path does.
func BenchmarkEmulation_StreamList(b *testing.B) {
	em := benchEmulation(b)
	var buf bytes.Buffer
	buf.WriteString(`{"kind":"CustomresourceList","apiVersion":"myapps.example.com/v1beta1","metadata":{"resourceVersion":"7"},"items":[`)
	for i := range 10000 {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(benchItem(i))
	}
	buf.WriteString(`]}`)
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	cpu := processCPU()
	for b.Loop() {
		if err := em.streamList(context.Background(), bytes.NewReader(data), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkEmulation_Watch converts a watch stream of 10,000 ADDED events
// of ~1 KB objects as the emulated watch path does, read 32 KB at a time as
// the reverse proxy reads it.
func BenchmarkEmulation_Watch(b *testing.B) {
	em := benchEmulation(b)
	var buf bytes.Buffer
	for i := range 10000 {
		fmt.Fprintf(&buf, "{\"type\":\"ADDED\",\"object\":%s}\n", benchItem(i))
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	cpu := processCPU()
	for b.Loop() {
		body := em.newWatchBody(context.Background(), io.NopCloser(bytes.NewReader(data)))
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{body}, make([]byte, 32<<10)); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// processCPU is the process's user and system CPU time in nanoseconds:
// on a machine shared with other work it is far steadier than wall time.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU reports the CPU time per operation since start (garbage
// collection included) as the metric cpu-ms/op.
func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(processCPU()-start)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkEmulation_ConvertObject is the emulated GET's work on a ~5 KB
// object: decode, reverse conversion, encode.
func BenchmarkEmulation_ConvertObject(b *testing.B) {
	conv := proxytest.SeedConverter(b)
	em := &emulation{rules: &Rules{e: &Emulator{}, conv: conv}, t: target{
		requested: schema.GroupVersion{Group: "myapps.example.com", Version: "v1alpha1"},
		served:    schema.GroupVersion{Group: "myapps.example.com", Version: "v1beta1"},
		resource:  "customresources", kind: "Customresource",
	}}
	data := []byte(fmt.Sprintf(`{"apiVersion":"myapps.example.com/v1beta1","kind":"Customresource","metadata":{"name":"o-00001","namespace":"get","uid":"0b0e4a2c-1c0e-4f6b-9d7e-6d1b0d3f2a11","resourceVersion":"1001","generation":1,"creationTimestamp":"2026-11-29T18:55:07Z","managedFields":[{"manager":"e2e","operation":"Update","apiVersion":"myapps.example.com/v1beta1","time":"2026-11-29T18:55:07Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:config":{".":{},"f:requestTimeoutSeconds":{},"f:retries":{}},"f:payload":{},"f:replicas":{},"f:stateManagement":{}}}}]},"spec":{"config":{"requestTimeoutSeconds":30,"retries":3},"payload":%q,"replicas":1,"stateManagement":"stateless"}}`, strings.Repeat("0123456789abcdef", 5000/16)))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, st := em.convertObjectBytes(context.Background(), data); st != nil {
			b.Fatal(st)
		}
	}
}
