package engine_test

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	gojson "github.com/goccy/go-json"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
)

// The conversion benchmarks convert a ~5 KB Deployment-like object with a
// ten-step rule (testdata/bench), end to end: decode, convert, encode. Two
// floors give them meaning on any machine: encoding/json decode+encode of
// the same bytes (with UseNumber), and the same with goccy/go-json, the
// codec mvpctl uses. BENCHMARKS.md records the ratios.

var (
	benchFrom = schema.GroupVersion{Group: "apps.example.com", Version: "v1beta1"}
	benchTo   = schema.GroupVersion{Group: "apps.example.com", Version: "v1"}
)

type benchInput struct {
	old, new []byte
	conv     map[engine.Executor]*engine.Converter
	// proxy is the native converter as mvpctl proxy runs it: a bad
	// round-trip annotation is ignored, which costs a copy of each object
	// that carries one.
	proxy *engine.Converter
}

func loadBench(tb testing.TB) *benchInput {
	tb.Helper()
	old, err := os.ReadFile("../testdata/bench/deployment.json")
	if err != nil {
		tb.Fatal(err)
	}
	in := &benchInput{old: old, conv: map[engine.Executor]*engine.Converter{}}
	for _, ex := range []engine.Executor{engine.Native, engine.JQ} {
		c, err := engine.Load(engine.Options{Executor: ex}, "../testdata/bench/deployment-rules.yaml")
		if err != nil {
			tb.Fatal(err)
		}
		in.conv[ex] = c
	}
	o := in.conv[engine.Native].Options()
	o.InvalidConversionData = func(*engine.ConversionDataError) {}
	in.proxy = in.conv[engine.Native].WithOptions(o)
	obj, err := engine.DecodeObject(old)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := in.conv[engine.Native].Convert(context.Background(), obj, benchTo)
	if err != nil {
		tb.Fatal(err)
	}
	if in.new, err = engine.EncodeObject(out); err != nil {
		tb.Fatal(err)
	}
	return in
}

// convertBytes is the end-to-end job: bytes in, converted bytes out.
func convertBytes(c *engine.Converter, data []byte, to schema.GroupVersion) ([]byte, error) {
	obj, err := engine.DecodeObject(data)
	if err != nil {
		return nil, err
	}
	out, err := c.Convert(context.Background(), obj, to)
	if err != nil {
		return nil, err
	}
	return engine.EncodeObject(out)
}

func stdlibRoundTrip(data []byte) ([]byte, error) {
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return stdjson.Marshal(v)
}

// goccyRoundTrip is the fastest floor: goccy/go-json's Unmarshal with
// numbers kept exact, and Marshal, as engine.DecodeObject/EncodeObject do.
func goccyRoundTrip(data []byte) ([]byte, error) {
	var v map[string]any
	if err := gojson.UnmarshalWithOption(data, &v, func(o *gojson.DecodeOption) { o.Flags |= 1 << 3 }); err != nil {
		return nil, err
	}
	return gojson.Marshal(v)
}

// benchVariants are the measured jobs, by name.
func benchVariants(in *benchInput) []struct {
	name string
	run  func() error
} {
	conv := func(ex engine.Executor, data []byte, to schema.GroupVersion) func() error {
		return func() error { _, err := convertBytes(in.conv[ex], data, to); return err }
	}
	proxy := func(data []byte, to schema.GroupVersion) func() error {
		return func() error { _, err := convertBytes(in.proxy, data, to); return err }
	}
	return []struct {
		name string
		run  func() error
	}{
		{"floor/encoding-json", func() error { _, err := stdlibRoundTrip(in.old); return err }},
		{"floor/goccy-go-json", func() error { _, err := goccyRoundTrip(in.old); return err }},
		{"convert/forward/native", conv(engine.Native, in.old, benchTo)},
		{"convert/reverse/native", conv(engine.Native, in.new, benchFrom)},
		{"convert/reverse/native-proxy", proxy(in.new, benchFrom)},
		{"convert/forward/jq", conv(engine.JQ, in.old, benchTo)},
		{"convert/reverse/jq", conv(engine.JQ, in.new, benchFrom)},
	}
}

func BenchmarkConvert(b *testing.B) {
	in := loadBench(b)
	for _, v := range benchVariants(in) {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.old)))
			for i := 0; i < b.N; i++ {
				if err := v.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConvertRatios measures every variant in interleaved rounds, one
// round per iteration (make bench runs 9), and reports each one's median
// cost as a ratio to the two floors measured in the same run: the metrics
// <variant>/x-encoding-json and <variant>/x-goccy, beside <variant>/cpu-us
// and <variant>/allocs per operation. Cost is process CPU time per
// operation (getrusage, GC included), which a machine shared with other
// work disturbs far less than wall time. The table is also logged.
func BenchmarkConvertRatios(b *testing.B) {
	in := loadBench(b)
	variants := benchVariants(in)
	samples := map[string][]float64{}
	allocs := map[string]float64{}
	rounds := 0
	for b.Loop() {
		rounds++
		for _, v := range variants {
			cpu, mallocs, err := measure(v.run, opsPerRound(v.name))
			if err != nil {
				b.Fatal(err)
			}
			samples[v.name] = append(samples[v.name], cpu)
			allocs[v.name] = mallocs
		}
	}
	std, fast := median(samples["floor/encoding-json"]), median(samples["floor/goccy-go-json"])
	var table strings.Builder
	fmt.Fprintf(&table, "%d-byte object, %d interleaved rounds, median CPU time per operation:\n", len(in.old), rounds)
	fmt.Fprintf(&table, "%-26s %12s %8s %12s %14s\n", "variant", "CPU µs/op", "allocs", "× enc/json", "× goccy floor")
	for _, v := range variants {
		m := median(samples[v.name])
		fmt.Fprintf(&table, "%-26s %12.1f %8.0f %12.2f %14.2f\n", v.name, m/1e3, allocs[v.name], m/std, m/fast)
		b.ReportMetric(m/1e3, v.name+"/cpu-us")
		b.ReportMetric(allocs[v.name], v.name+"/allocs")
		if !strings.HasPrefix(v.name, "floor/") {
			b.ReportMetric(m/std, v.name+"/x-encoding-json")
			b.ReportMetric(m/fast, v.name+"/x-goccy")
		}
	}
	b.ReportMetric(0, "ns/op") // a round's wall time means nothing here
	b.Log(strings.TrimSuffix(table.String(), "\n"))
}

// opsPerRound is how many operations of a variant one round measures: the
// jq variants cost about ten times the others.
func opsPerRound(name string) int {
	if strings.HasSuffix(name, "/jq") {
		return 60
	}
	return 400
}

// measure runs op n times and returns the process CPU time (ns) and the
// allocations per operation.
func measure(op func() error, n int) (cpu, mallocs float64, err error) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	for range n {
		if err := op(); err != nil {
			return 0, 0, err
		}
	}
	c1 := cpuTime()
	runtime.ReadMemStats(&m1)
	return float64(c1-c0) / float64(n), float64(m1.Mallocs-m0.Mallocs) / float64(n), nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
