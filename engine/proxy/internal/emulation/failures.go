package emulation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mvpctl/mvpctl/engine"
)

// A rule step that cannot convert a value the served schema allows (a
// converting rename on an int-or-string field, a jq expression on a field
// that keeps unknown fields) fails every GET, LIST and WATCH that meets the
// object, as a failing conversion webhook fails them in kube-apiserver.
// The object is not dropped (a client must not take a partial list for a
// whole one); the failure names the object, the rule, the step and the
// field path, is counted per emulated resource and logged, so that the
// operator finds the object and the rule (`mvpctl lint --to-schema` flags
// such steps before they are deployed).

// newConversionFailures is mvpctl_proxy_emulation_conversion_failures_total.
// Its labels are the emulated group, version and resource the client asked
// for, which come from the rules, never from a request.
func newConversionFailures() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mvpctl", Subsystem: "proxy", Name: "emulation_conversion_failures_total",
		Help: "Objects of the served version that version emulation could not convert back for a client (a GET, LIST, WATCH or Table failed on them), by the emulated group, version and resource the client asked for.",
	}, []string{"group", "version", "resource"})
}

// maxFailureMessageBytes bounds the message of a failed conversion in a
// Status and in the log: it may quote the value the step failed on, which
// anyone who may write the object wrote. The object, the rule, the step
// and the path come first.
const maxFailureMessageBytes = 4 << 10

// failed counts and logs a failed conversion of obj, an object of the
// served version, and returns the error naming the object: the engine's
// *engine.ConversionError already does (kind, namespace/name, version,
// rule, direction, step, path); any other is prefixed with the object.
func (em *emulation) failed(obj map[string]any, err error) error {
	var ce *engine.ConversionError
	named := errors.As(err, &ce)
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	m, _ := obj["metadata"].(map[string]any)
	ns, _ := m["namespace"].(string)
	name, _ := m["name"].(string)
	rv, _ := m["resourceVersion"].(string)
	if !named && !errors.As(err, new(*engine.UnconvertedError)) {
		ref := name
		if ns != "" {
			ref = ns + "/" + name
		}
		err = fmt.Errorf("converting %s %s (%s) to %s: %w", kind, ref, av, em.t.requested, err)
	}
	e := em.rules.e
	e.convFailures.WithLabelValues(em.t.requested.Group, em.t.requested.Version, em.t.resource).Inc()
	key := av + "|" + kind + "|" + ns + "/" + name + "|" + rv
	if _, seen := e.failWarn.seen.Get(key); seen {
		return err
	}
	e.failWarn.seen.Add(key, nil)
	if !e.failWarn.lines.Allow() {
		return err
	}
	e.log.Warn("version emulation: an object of the served version does not convert to the version the client asked for; requests that meet it fail",
		"group", em.t.requested.Group, "version", em.t.requested.Version, "resource", em.t.resource,
		"served", av, "kind", kind, "namespace", ns, "name", name, "resourceVersion", rv, "err", boundMessage(err.Error()))
	return err
}

// boundMessage cuts a message at maxFailureMessageBytes.
func boundMessage(s string) string {
	if len(s) <= maxFailureMessageBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxFailureMessageBytes], "") + "..."
}
