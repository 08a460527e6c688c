package builtin

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mvpctl/mvpctl/rules"
)

// The annotations of a built-in rules document: the releases that deprecated
// and removed its rule's fromVersion, as the lifecycle table says. A version
// Kubernetes never deprecated (autoscaling/v1) has neither.
const (
	DeprecatedInAnnotation = "mvp.k8s.io/deprecated-in"
	RemovedInAnnotation    = "mvp.k8s.io/removed-in"
)

// files are the built-in rules: one file per API group, named after the group
// of the rules' toVersion (extensions/v1beta1 Ingress is in
// networking.k8s.io.yaml), one document per migration rule.
//
//go:embed *.yaml
var files embed.FS

// SourcePrefix is how the names of the embedded files start in positions and
// errors: builtin/policy.yaml.
const SourcePrefix = "builtin/"

// Sources returns the embedded rules files, sorted by name.
func Sources() []rules.Source {
	names, _ := fs.Glob(files, "*.yaml") // the pattern is valid
	out := make([]rules.Source, 0, len(names))
	for _, n := range names {
		data, _ := files.ReadFile(n) // listed just above
		out = append(out, rules.Source{Name: SourcePrefix + n, Data: data})
	}
	return out
}

// Load decodes and validates the built-in rules as one rule set. The files
// are parsed once per process and their jq expressions compile on first use
// (the package's tests compile every one), so a command that converts one
// manifest does not pay for the whole library. The documents are shared:
// callers must not change them.
func Load() (*rules.RuleSet, error) {
	rs, err := loadOnce()
	if err != nil {
		return nil, err
	}
	return &rules.RuleSet{Documents: slices.Clip(rs.Documents)}, nil
}

var loadOnce = sync.OnceValues(func() (*rules.RuleSet, error) {
	return rules.ParseOptions{SkipJQCompile: true}.ParseAll(Sources()...)
})

// Rule is one built-in migration rule and what Kubernetes says about its old
// version.
type Rule struct {
	// Name is the name of the rule's document; File the embedded file it is
	// in (builtin/policy.yaml).
	Name, File string
	// ID is the rule's ID (poddisruptionbudgets.policy/v1beta1->v1).
	ID string
	// From is the kind in the rule's fromVersion; To in its toVersion.
	From, To schema.GroupVersionKind
	// Resource is the rule's resource (plural).
	Resource string
	// Deprecated and Removed are the releases the document's annotations
	// name for From's version; zero when it has none.
	Deprecated, Removed Release
}

// Rules lists the built-in migration rules in file order. The embedded files
// are checked by the package's tests, so an error here means a broken build.
func Rules() ([]Rule, error) { return loadRules() }

var loadRules = sync.OnceValues(func() ([]Rule, error) {
	rs, err := Load()
	if err != nil {
		return nil, err
	}
	var out []Rule
	for _, ref := range rs.MigrationRules() {
		r, err := ruleOf(ref)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
})

func ruleOf(ref rules.RuleRef) (Rule, error) {
	m, doc := ref.Rule, ref.Doc
	r := Rule{
		Name:     doc.Rules.Metadata.Name,
		File:     doc.File,
		ID:       m.ID(),
		From:     schema.GroupVersionKind{Group: m.APIGroup, Version: m.FromVersion, Kind: m.Kind},
		To:       schema.GroupVersionKind{Group: m.TargetGroup(), Version: m.ToVersion, Kind: m.Kind},
		Resource: m.Resource,
	}
	for key, into := range map[string]*Release{DeprecatedInAnnotation: &r.Deprecated, RemovedInAnnotation: &r.Removed} {
		v, ok := doc.Rules.Metadata.Annotations[key]
		if !ok {
			continue
		}
		rel, err := ParseRelease(v)
		if err != nil {
			return Rule{}, fmt.Errorf("%s: %s: %s: %w", doc.File, r.Name, key, err)
		}
		*into = rel
	}
	return r, nil
}

// Converts says whether a built-in rule converts objects of gvk: gvk is
// one side of some rule.
func Converts(gvk schema.GroupVersionKind) bool {
	rs, err := Rules()
	if err != nil {
		return false
	}
	for _, r := range rs {
		if r.From == gvk || r.To == gvk {
			return true
		}
	}
	return false
}
