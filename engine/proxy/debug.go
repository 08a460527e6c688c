package proxy

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// BackendStatus is one backend in /debug/capabilities.
type BackendStatus struct {
	Name       string     `json:"name"`
	URL        string     `json:"url"`
	Ready      bool       `json:"ready"`
	LastError  string     `json:"lastError,omitempty"`
	Version    string     `json:"version,omitempty"`
	ReadySince *time.Time `json:"readySince,omitempty"`
	// CapabilityAge is the age of the capability map in seconds.
	CapabilityAge float64 `json:"capabilityAgeSeconds,omitempty"`
	// AggregatedDiscovery is false when the map came from legacy discovery.
	AggregatedDiscovery bool  `json:"aggregatedDiscovery"`
	Outstanding         int64 `json:"outstanding"`
	LongRunning         int64 `json:"longRunning"`
	// Serves lists group/version/resource (subresources included).
	Serves []string `json:"serves,omitempty"`
}

// Capabilities is the body of /debug/capabilities.
type Capabilities struct {
	Backends []BackendStatus `json:"backends"`
	// ServedBy maps each group/version/resource to the backends serving it.
	ServedBy map[string][]string `json:"servedBy"`
}

// Capabilities reports which backend serves what.
func (p *Proxy) Capabilities() Capabilities {
	out := Capabilities{ServedBy: map[string][]string{}}
	for _, b := range p.list() {
		st := b.snapshot()
		bs := BackendStatus{
			Name: b.name, URL: b.url.String(), Ready: st.ready, LastError: st.lastError,
			Outstanding: b.outstanding.Load(), LongRunning: b.longRunning.Load(),
		}
		if st.versionInfo != nil {
			bs.Version = st.versionInfo.GitVersion
		}
		if !st.readySince.IsZero() && st.ready {
			t := st.readySince
			bs.ReadySince = &t
		}
		if st.caps != nil {
			bs.CapabilityAge = time.Since(st.caps.fetched).Seconds()
			bs.AggregatedDiscovery = st.caps.aggregated
			for k := range st.caps.served {
				bs.Serves = append(bs.Serves, k.String())
				out.ServedBy[k.String()] = append(out.ServedBy[k.String()], b.name)
			}
			slices.Sort(bs.Serves)
		}
		out.Backends = append(out.Backends, bs)
	}
	return out
}

// DebugHandler serves /debug/capabilities as JSON. Serve it next to the
// metrics, not on the proxy's own port (whose paths belong to the backends).
func (p *Proxy) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(p.Capabilities())
	})
}
