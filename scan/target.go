package scan

import (
	"fmt"
	"slices"
	"strings"
)

// What a target release requires beyond conversion.
//
// Kubernetes converts apiextensions.k8s.io/v1beta1 CRDs and
// admissionregistration.k8s.io/v1beta1 webhook configurations to v1 without
// a word, but a v1 server's validation refuses what v1beta1 allowed: a CRD
// without a structural schema or with spec.preserveUnknownFields true, a
// webhook whose sideEffects is Unknown or Some. MeetTarget makes the
// changes that are mechanical and lose nothing; what needs a decision is
// returned as [Undecided] for the user to settle with [Decisions].

// SideEffectsChoices are the sideEffects that admissionregistration.k8s.io/v1
// allows.
var SideEffectsChoices = []string{"None", "NoneOnDryRun"}

// SideEffectsFlag is the mvpctl convert flag that decides a webhook's
// sideEffects.
const SideEffectsFlag = "--set-webhook-side-effects"

// Decisions answer what a target release requires and no conversion can
// decide. The zero value decides nothing.
type Decisions struct {
	// WebhookSideEffects replaces a webhook's sideEffects that v1 does not
	// allow (Unknown, Some, or unset, which v1beta1 defaulted to Unknown):
	// one of SideEffectsChoices. Empty: such webhooks are undecided.
	WebhookSideEffects string
}

// Fix is one change MeetTarget made: the field and what was done and why.
type Fix struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (f Fix) String() string { return f.Path + ": " + f.Message }

// Undecided is a field whose value the target refuses and that only the
// user can choose: the value it has and the choices.
type Undecided struct {
	Path    string   `json:"path"`
	Value   string   `json:"value"`
	Choices []string `json:"choices"`
	// Flag is the mvpctl convert flag that decides it.
	Flag string `json:"flag"`
}

func (u Undecided) String() string {
	return fmt.Sprintf("%s: %s is not allowed by v1; decide with %s=%s", u.Path, u.Value, u.Flag, strings.Join(u.Choices, "|"))
}

// MeetTarget changes obj, an object converted to the version a target
// release serves, where that version's validation requires it and the
// change is mechanical or decided by d; orig is the object before
// conversion. It returns the fixes made, and the fields that need a
// decision (left as they are).
func MeetTarget(obj, orig map[string]any, d Decisions) ([]Fix, []Undecided) {
	switch obj["apiVersion"] {
	case "apiextensions.k8s.io/v1":
		if obj["kind"] == "CustomResourceDefinition" {
			return meetCRD(obj), nil
		}
	case "admissionregistration.k8s.io/v1":
		if k := obj["kind"]; k == "ValidatingWebhookConfiguration" || k == "MutatingWebhookConfiguration" {
			return meetWebhooks(obj, orig, d)
		}
	}
	return nil, nil
}

// WebhookDecisions returns the webhooks of a ValidatingWebhookConfiguration
// or MutatingWebhookConfiguration, of any version, whose sideEffects v1 does
// not allow: what converting it needs decided.
func WebhookDecisions(obj map[string]any) []Undecided {
	if k := obj["kind"]; k != "ValidatingWebhookConfiguration" && k != "MutatingWebhookConfiguration" {
		return nil
	}
	var out []Undecided
	for i, w := range objectsOf(obj["webhooks"]) {
		if u, ok := sideEffects(w, i); ok {
			out = append(out, u)
		}
	}
	return out
}

func sideEffects(w map[string]any, i int) (Undecided, bool) {
	v, _ := w["sideEffects"].(string)
	if slices.Contains(SideEffectsChoices, v) {
		return Undecided{}, false
	}
	if v == "" {
		v = "unset (v1beta1: Unknown)"
	}
	return Undecided{Path: fmt.Sprintf("webhooks[%d].sideEffects", i), Value: v, Choices: SideEffectsChoices, Flag: SideEffectsFlag}, true
}

// meetWebhooks sets the sideEffects decided, and the admissionReviewVersions
// that v1beta1 defaulted to [v1beta1] and v1 requires explicitly.
func meetWebhooks(obj, orig map[string]any, d Decisions) (fixes []Fix, undecided []Undecided) {
	origHooks := objectsOf(orig["webhooks"])
	for i, w := range objectsOf(obj["webhooks"]) {
		path := fmt.Sprintf("webhooks[%d]", i)
		if u, ok := sideEffects(w, i); ok {
			if d.WebhookSideEffects == "" {
				undecided = append(undecided, u)
			} else {
				w["sideEffects"] = d.WebhookSideEffects
				fixes = append(fixes, Fix{u.Path, fmt.Sprintf("%s, which v1 does not allow; set to %s (%s)", u.Value, d.WebhookSideEffects, SideEffectsFlag)})
			}
		}
		had := false
		if i < len(origHooks) {
			v, _ := origHooks[i]["admissionReviewVersions"].([]any)
			had = len(v) > 0
		}
		if v, _ := w["admissionReviewVersions"].([]any); len(v) == 0 {
			w["admissionReviewVersions"] = []any{"v1beta1"}
		}
		if !had {
			fixes = append(fixes, Fix{path + ".admissionReviewVersions", "unset; set to [v1beta1], v1beta1's default, which v1 requires explicitly"})
		}
	}
	return fixes, undecided
}

// anySchema is the schema of a CRD version without one: any fields.
func anySchema() map[string]any {
	return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
}

// meetCRD gives every version a structural schema, as v1 requires, without
// changing what the CRD accepts or keeps:
//   - a version without a schema gets anySchema (v1beta1 without a schema
//     accepted and kept any fields);
//   - spec.preserveUnknownFields true (v1beta1's default: nothing pruned)
//     becomes false, with x-kubernetes-preserve-unknown-fields on the root and
//     on every object of the schema, which keeps unknown fields as before;
//   - a schema object with properties but no type gets type object, with
//     items type array, and the root type object (what v1 requires of it).
func meetCRD(obj map[string]any) []Fix {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	var fixes []Fix
	preserve := spec["preserveUnknownFields"] == true
	if preserve {
		spec["preserveUnknownFields"] = false
		fixes = append(fixes, Fix{"spec.preserveUnknownFields", "true, which v1 does not allow; set to false, with x-kubernetes-preserve-unknown-fields: true on every object of each version's schema (unknown fields are kept as before)"})
	}
	for i, v := range objectsOf(spec["versions"]) {
		path := fmt.Sprintf("spec.versions[%d].schema.openAPIV3Schema", i)
		sch, _ := v["schema"].(map[string]any)
		root, _ := sch["openAPIV3Schema"].(map[string]any)
		if root == nil {
			if sch == nil {
				sch = map[string]any{}
				v["schema"] = sch
			}
			sch["openAPIV3Schema"] = anySchema()
			fixes = append(fixes, Fix{path, "unset, which v1 does not allow; set to {type: object, x-kubernetes-preserve-unknown-fields: true} (any fields, as without a schema)"})
			continue
		}
		var typed []string
		if _, ok := root["type"]; !ok {
			root["type"] = "object"
			typed = append(typed, path)
		}
		walkSchema(root, path, true, func(n map[string]any, p string, isRoot bool) {
			if _, ok := n["type"]; !ok && !isRoot && n["x-kubernetes-int-or-string"] != true {
				switch {
				case n["properties"] != nil:
					n["type"] = "object"
					typed = append(typed, p)
				case n["items"] != nil:
					n["type"] = "array"
					typed = append(typed, p)
				}
			}
			if preserve && n["type"] == "object" && n["additionalProperties"] == nil && n["x-kubernetes-preserve-unknown-fields"] == nil {
				n["x-kubernetes-preserve-unknown-fields"] = true
			}
		})
		if len(typed) > 0 {
			fixes = append(fixes, Fix{path, "type unset where properties or items give it, which v1 does not allow; set (object, array) at " + strings.Join(typed, ", ")})
		}
	}
	return fixes
}

// walkSchema calls fn on each node of a structural schema that may carry a
// type: properties, items and additionalProperties, not the value
// validations (allOf, anyOf, oneOf, not), which v1 forbids to. The root's
// metadata property is skipped: v1 allows only name and generateName there.
func walkSchema(n map[string]any, path string, isRoot bool, fn func(map[string]any, string, bool)) {
	fn(n, path, isRoot)
	if props, ok := n["properties"].(map[string]any); ok {
		for _, k := range sortedKeys(props) {
			if isRoot && k == "metadata" {
				continue
			}
			if c, ok := props[k].(map[string]any); ok {
				walkSchema(c, path+".properties."+k, false, fn)
			}
		}
	}
	if c, ok := n["items"].(map[string]any); ok {
		walkSchema(c, path+".items", false, fn)
	}
	if c, ok := n["additionalProperties"].(map[string]any); ok {
		walkSchema(c, path+".additionalProperties", false, fn)
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// objectsOf returns the objects of a JSON array.
func objectsOf(v any) []map[string]any {
	items, _ := v.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
