package usage

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// benchKeys are n distinct clients with a realistic user agent.
func benchKeys(n int) []Key {
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = Key{Group: "policy", Version: "v1beta1", Resource: "poddisruptionbudgets",
			User: fmt.Sprintf("system:serviceaccount:team-%d:controller", i), UserAgent: "manager/v0.0.0 (linux/amd64) kubernetes/$Format"}
	}
	return keys
}

// BenchmarkTable_Record compares, in one run and in alternating phases, a
// Record of a known client ("hit"), of a new client in a full table,
// which evicts one ("new"), and of one user rotating its user agent at its
// quota ("rotate"), with what every proxied request already pays
// for its metric: an increment of mvpctl_proxy_requests_total's seven
// labels ("baseline").
//
//	go test ./engine/proxy/internal/usage -run '^$' -bench Record -count 3
func BenchmarkTable_Record(b *testing.B) {
	const size = 10000
	tab := New(size)
	keys := benchKeys(2 * size) // cycling through twice the size, every access misses
	for _, k := range keys[:size] {
		tab.Record(Request{Key: k, Verb: "get", At: time.Now()})
	}
	// One user rotating its user agent: at its quota, each request
	// replaces one of its own entries.
	rotating := make([]Key, 2*DefaultPerUser)
	for i := range rotating {
		rotating[i] = keys[0]
		rotating[i].UserAgent = fmt.Sprintf("rotating/%d", i)
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests_total"},
		[]string{"backend", "group", "version", "resource", "verb", "code", "decision"})
	at := time.Now()
	phases := []struct {
		name string
		run  func(i int)
	}{
		{"baseline", func(int) {
			requests.WithLabelValues("server-1", "policy", "v1beta1", "poddisruptionbudgets", "get", "200", "emulated").Inc()
		}},
		{"hit", func(i int) { tab.Record(Request{Key: keys[i%100], Verb: "get", Emulated: true, At: at}) }},
		{"new", func(i int) { tab.Record(Request{Key: keys[i%len(keys)], Verb: "list", At: at}) }},
		{"rotate", func(i int) { tab.Record(Request{Key: rotating[i%len(rotating)], Verb: "list", At: at}) }},
	}
	spent := make([]time.Duration, len(phases))
	const rounds = 5
	per := max(b.N/rounds, 1)
	b.ResetTimer()
	for r := range rounds {
		for p, ph := range phases {
			start := time.Now()
			for i := range per {
				ph.run(r*per + i)
			}
			spent[p] += time.Since(start)
		}
	}
	b.StopTimer()
	n := float64(rounds * per)
	base := float64(spent[0]) / n
	for p, ph := range phases {
		b.ReportMetric(float64(spent[p])/n, ph.name+"-ns/op")
		if p > 0 {
			b.ReportMetric(float64(spent[p])/n/base, ph.name+"/baseline")
		}
	}
}

// BenchmarkTable_Memory reports the heap a full table holds per entry when
// every user name and user agent is as long as the table keeps them.
func BenchmarkTable_Memory(b *testing.B) {
	const size = 10000
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		keys := make([]Key, size)
		for i := range keys {
			keys[i] = Key{Group: "policy", Version: "v1beta1", Resource: "poddisruptionbudgets",
				User:      fmt.Sprintf("%07d", i) + strings.Repeat("u", MaxUserBytes-7),
				UserAgent: strings.Repeat("a", MaxUserAgentBytes)}
		}
		tab := New(size)
		for _, k := range keys {
			tab.Record(Request{Key: k, Verb: "get", At: time.Now()})
		}
		keys = nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/size, "heap-bytes/entry")
		runtime.KeepAlive(tab)
	}
}
