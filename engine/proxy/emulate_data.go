package proxy

import (
	"strings"

	"golang.org/x/time/rate"
	"k8s.io/utils/lru"

	"github.com/mvpctl/mvpctl/engine"
)

// dataWarnings keeps the log of ignored round-trip annotations short: one
// line per object and resourceVersion, and a few lines a second at most,
// however many such objects a LIST or a watch meets.
type dataWarnings struct {
	seen  *lru.Cache
	lines *rate.Limiter
}

func newDataWarnings() dataWarnings {
	return dataWarnings{seen: lru.New(4096), lines: rate.NewLimiter(5, 50)}
}

// maxReasonBytes bounds the reason logged for an ignored annotation: it
// may quote the annotation, which anyone who may write the object wrote.
const maxReasonBytes = 512

// conversionDataIgnored is the emulation's [engine.Options.InvalidConversionData]:
// the object is converted as if it had no annotation; the metric counts
// it, the log names it.
func (p *Proxy) conversionDataIgnored(e *engine.ConversionDataError) {
	if p.metrics != nil {
		p.metrics.dataIgnored.WithLabelValues(e.GVK.Group, e.GVK.Version, e.Resource).Inc()
	}
	key := e.GVK.String() + "|" + e.Resource + "|" + e.Namespace + "/" + e.Name + "|" + e.ResourceVersion
	if _, seen := p.dataWarn.seen.Get(key); seen {
		return
	}
	p.dataWarn.seen.Add(key, nil)
	if !p.dataWarn.lines.Allow() {
		return
	}
	reason := e.Err.Error()
	if len(reason) > maxReasonBytes {
		reason = strings.ToValidUTF8(reason[:maxReasonBytes], "") + "..."
	}
	p.log.Warn("version emulation: ignoring an object's round-trip annotation; it is converted as if it had none",
		"group", e.GVK.Group, "version", e.GVK.Version, "resource", e.Resource,
		"namespace", e.Namespace, "name", e.Name, "resourceVersion", e.ResourceVersion, "reason", reason)
}
