package cli

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules/builtin"
)

// convertPlan says what mvpctl convert converts each object to: one
// group/version (--output-version), or for a Kubernetes release
// (--kubernetes-version) the replacement of every version that release
// removes.
type convertPlan = engine.Plan

func newConvertPlan(opts convertOptions) (convertPlan, error) {
	switch {
	case opts.OutputVersion != "" && opts.KubernetesVersion != "":
		return convertPlan{}, usageErrorf("--output-version and --kubernetes-version: give one of them")
	case opts.IncludeDeprecated && opts.KubernetesVersion == "":
		return convertPlan{}, usageErrorf("--include-deprecated needs --kubernetes-version")
	case opts.KubernetesVersion != "":
		rel, err := builtin.ParseRelease(opts.KubernetesVersion)
		if err != nil {
			return convertPlan{}, usageErrorf("--kubernetes-version: %v", err)
		}
		return convertPlan{Release: rel, Deprecated: opts.IncludeDeprecated}, nil
	case opts.OutputVersion == "":
		return convertPlan{}, usageErrorf("give --output-version GROUP/VERSION (e.g. networking.k8s.io/v1) or --kubernetes-version vX.Y (e.g. %s)", builtin.Newest)
	}
	to, err := schema.ParseGroupVersion(opts.OutputVersion)
	if err != nil || to.Version == "" {
		return convertPlan{}, usageErrorf("--output-version %q: want GROUP/VERSION or VERSION for the core group", opts.OutputVersion)
	}
	return convertPlan{To: to}, nil
}
