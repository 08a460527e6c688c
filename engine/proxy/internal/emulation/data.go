package emulation

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
func (e *Emulator) conversionDataIgnored(bad *engine.ConversionDataError) {
	e.dataIgnored.WithLabelValues(bad.GVK.Group, bad.GVK.Version, bad.Resource).Inc()
	key := bad.GVK.String() + "|" + bad.Resource + "|" + bad.Namespace + "/" + bad.Name + "|" + bad.ResourceVersion
	if _, seen := e.dataWarn.seen.Get(key); seen {
		return
	}
	e.dataWarn.seen.Add(key, nil)
	if !e.dataWarn.lines.Allow() {
		return
	}
	reason := bad.Err.Error()
	if len(reason) > maxReasonBytes {
		reason = strings.ToValidUTF8(reason[:maxReasonBytes], "") + "..."
	}
	e.log.Warn("version emulation: ignoring an object's round-trip annotation; it is converted as if it had none",
		"group", bad.GVK.Group, "version", bad.GVK.Version, "resource", bad.Resource,
		"namespace", bad.Namespace, "name", bad.Name, "resourceVersion", bad.ResourceVersion, "reason", reason)
}
