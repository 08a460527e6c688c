package rules

import (
	"bytes"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupName is the API group of the TransformationRules API.
const GroupName = "mvp.k8s.io"

// APIVersion is the only apiVersion a rules document may carry.
const APIVersion = GroupName + "/v1"

// KindTransformationRules is the kind of a rules document.
const KindTransformationRules = "TransformationRules"

// ConversionDataAnnotation carries what one API version cannot hold while an
// object lives in another, so that a round trip gives back the same object.
const ConversionDataAnnotation = "mvp.k8s.io/conversion-data"

// TransformationRules describes how objects change between API versions
// (apiMigrationRules) and which kube-apiservers should serve which requests
// during a mixed-version control plane (apiRoutingRules).
type TransformationRules struct {
	// APIVersion is always mvp.k8s.io/v1.
	APIVersion string `json:"apiVersion"`
	// Kind is always TransformationRules.
	Kind string `json:"kind"`
	// Metadata names the rules; only name, labels and annotations are used.
	Metadata ObjectMeta `json:"metadata"`
	// Spec holds the rules.
	Spec Spec `json:"spec"`
}

// ObjectMeta is the part of Kubernetes object metadata that rules documents use.
type ObjectMeta struct {
	// Name identifies the rules document; it is required.
	Name string `json:"name"`
	// Labels are free-form and not interpreted.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are free-form and not interpreted.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Spec is the body of a TransformationRules document.
type Spec struct {
	// APIMigrationRules describe, per resource, how an object of FromVersion
	// becomes an object of ToVersion and back.
	APIMigrationRules []MigrationRule `json:"apiMigrationRules,omitempty"`
	// APIRoutingRules say which kube-apiserver versions should be preferred for
	// a group/resource/version during a mixed-version control plane.
	APIRoutingRules []RoutingRule `json:"apiRoutingRules,omitempty"`
}

// MigrationRule converts one resource between two versions of its API group.
// Forward means FromVersion → ToVersion; reverse means ToVersion → FromVersion.
type MigrationRule struct {
	// APIGroup is the API group of the resource; empty for the core group.
	APIGroup string `json:"apiGroup"`
	// ToAPIGroup is the API group of ToVersion when the resource moved to
	// another group (extensions → networking.k8s.io); empty means APIGroup.
	ToAPIGroup string `json:"toApiGroup,omitempty"`
	// Resource is the lower-case plural resource name, e.g. ingresses.
	Resource string `json:"resource"`
	// Kind is the object kind, e.g. Ingress. Empty means it is found through
	// discovery or guessed from Resource.
	Kind string `json:"kind,omitempty"`
	// FromVersion is the older API version, e.g. v1beta1.
	FromVersion string `json:"fromVersion"`
	// ToVersion is the newer API version, e.g. v1.
	ToVersion string `json:"toVersion"`
	// Transformations apply top to bottom forward and bottom to top, each
	// inverted, in reverse.
	Transformations []Transformation `json:"transformations,omitempty"`
}

// Action names what a Transformation does.
type Action string

// The supported actions. Each one has a forward and a reverse meaning; what
// the reverse cannot reconstruct travels in ConversionDataAnnotation.
const (
	// ActionRename moves the value at Path to TargetPath (also to another parent).
	ActionRename Action = "rename"
	// ActionModify replaces MatchValue by ReplaceValue, or maps values by ValueMap.
	ActionModify Action = "modify"
	// ActionEnsureFieldExistence sets DefaultValue where Path is absent.
	ActionEnsureFieldExistence Action = "ensureFieldExistence"
	// ActionRemove drops Path forward: a field that ToVersion does not have.
	ActionRemove Action = "remove"
	// ActionNewField drops Path in reverse: a field that only ToVersion has.
	ActionNewField Action = "newField"
	// ActionSet sets Path to the constant Value forward, creating missing
	// parent objects; reverse removes it and the objects that leaves empty.
	ActionSet Action = "set"
	// ActionConvertType converts the value at Path to Type (forward) and to
	// FromType (reverse).
	ActionConvertType Action = "convertType"
	// ActionJQ runs the Forward and Reverse jq expressions.
	ActionJQ Action = "jq"
)

// Actions lists every supported action, in documentation order.
var Actions = []Action{ActionRename, ActionModify, ActionEnsureFieldExistence, ActionRemove, ActionNewField, ActionSet, ActionConvertType, ActionJQ}

// ValueType is a JSON value type used by type hints and convertType.
type ValueType string

// The supported value types.
const (
	TypeString      ValueType = "string"
	TypeInteger     ValueType = "integer"
	TypeNumber      ValueType = "number"
	TypeBoolean     ValueType = "boolean"
	TypeIntOrString ValueType = "int-or-string"
)

// ValueTypes lists every supported value type.
var ValueTypes = []ValueType{TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeIntOrString}

// Transformation is one step of a MigrationRule. Which fields apply depends on
// Action; Validate reports fields that are required or not allowed.
type Transformation struct {
	// Path selects the field the step works on, e.g. spec.rules[*].host or
	// metadata.annotations["kubernetes.io/ingress.class"]. Optional only for jq,
	// where no path means the whole object.
	Path string `json:"path,omitempty"`
	// Action is what the step does.
	Action Action `json:"action"`
	// TargetPath is where rename moves the value; wildcards bind in order.
	TargetPath string `json:"targetPath,omitempty"`
	// Type is the value's type in ToVersion: convertType converts to it and
	// rename converts the moved value to it.
	Type ValueType `json:"type,omitempty"`
	// FromType is the value's type in FromVersion; convertType converts back to
	// it in reverse. Empty leaves reverse values as they are.
	FromType ValueType `json:"fromType,omitempty"`
	// MatchValue is the FromVersion value that modify replaces.
	MatchValue *Value `json:"matchValue,omitempty"`
	// ReplaceValue is the ToVersion value that modify writes for MatchValue.
	ReplaceValue *Value `json:"replaceValue,omitempty"`
	// ValueMap lists several from → to pairs for modify; the first pair
	// matching a value wins in each direction. A file may also write it as a
	// mapping from string values to their replacements ({S: small}).
	ValueMap []ValuePair `json:"valueMap,omitempty"`
	// DefaultValue is what ensureFieldExistence writes where Path is absent.
	DefaultValue *Value `json:"defaultValue,omitempty"`
	// Value is the constant that set writes.
	Value *Value `json:"value,omitempty"`
	// Forward is the jq expression of the forward direction.
	Forward string `json:"forward,omitempty"`
	// Reverse is the jq expression of the reverse direction.
	Reverse string `json:"reverse,omitempty"`
	// When is a jq boolean evaluated on the whole object before the step runs,
	// in either direction; false skips the step.
	When string `json:"when,omitempty"`
	// Description is free text for people reading the rules.
	Description string `json:"description,omitempty"`
}

// ValuePair is one entry of a modify ValueMap.
type ValuePair struct {
	// From is the FromVersion value.
	From *Value `json:"from"`
	// To is the ToVersion value.
	To *Value `json:"to"`
}

// RoutingRule prefers kube-apiservers of some versions for a group/resource.
type RoutingRule struct {
	// APIGroup is the API group of the resource; empty for the core group.
	APIGroup string `json:"apiGroup"`
	// Resource is the lower-case plural resource name; "*" for every resource
	// of the group.
	Resource string `json:"resource"`
	// ClientVersion is the API version the client asks for; empty for any.
	ClientVersion string `json:"clientVersion,omitempty"`
	// PreferAPIServerVersion selects preferred servers: v1.32.y (also
	// v1.32.x, v1.32.*) and v1.32 select every patch of 1.32, v1.32.4 that
	// patch, >=1.32 (also >=1.32.x) and >=v1.32.4 that version and later ones.
	PreferAPIServerVersion string `json:"preferApiServerVersion"`
}

// TransformationRulesStatus is what the proxies last observed about a
// TransformationRules object in a cluster. It exists only there, written
// through the status subresource; rules files do not carry it.
type TransformationRulesStatus struct {
	// ObservedGeneration is the metadata.generation that Conditions describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// MigrationRules is the number of apiMigrationRules of the observed
	// generation.
	MigrationRules int32 `json:"migrationRules,omitempty"`
	// RoutingRules is the number of apiRoutingRules of the observed generation.
	RoutingRules int32 `json:"routingRules,omitempty"`
	// Conditions are the latest observations of the object's state. Ready is
	// True when the observed generation compiled and is being served, and
	// False, with the field path of each problem in its message, when it was
	// rejected; the previous good generation then keeps serving.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionReady is the condition type that says whether a TransformationRules
// object's current generation is in use.
const ConditionReady = "Ready"

// Value is an arbitrary JSON value in a rules document (a string, number,
// boolean, null, list or object). Numbers are kept as json.Number so that
// int64 values survive exactly.
type Value struct {
	// V is the decoded value: nil, bool, string, json.Number, []any or map[string]any.
	V any
}

// MarshalJSON encodes the value.
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.V) }

// UnmarshalJSON decodes any JSON value, keeping numbers exact.
func (v *Value) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(&v.V)
}

// DeepCopy returns a copy that shares nothing with v.
func (v *Value) DeepCopy() *Value {
	if v == nil {
		return nil
	}
	return &Value{V: DeepCopyJSON(v.V)}
}

// DeepCopyJSON copies a decoded JSON value.
func DeepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = DeepCopyJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = DeepCopyJSON(e)
		}
		return s
	default:
		return v
	}
}
