// Package crd builds the CustomResourceDefinition of TransformationRules
// (transformationrules.mvp.k8s.io) from the Go types of package rules, so
// that rules files and cluster objects share one schema: the fields, their
// documentation, and the checks that the schema can express (enums, patterns,
// required fields, size bounds). What only [rules.RuleSet.Validate] can check
// (paths, jq syntax, which fields an action uses) is reported by the proxies
// in the object's Ready condition.
//
// The manifest in deploy/crd is generated with `go generate ./rules/crd`; a
// test fails when it is out of date.
package crd

//go:generate go run ./gen -types .. -o ../../deploy/crd/transformationrules.mvp.k8s.io.yaml

import (
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mvpctl/mvpctl/rules"
)

// Names of the resource.
const (
	Plural   = "transformationrules"
	Singular = "transformationrule"
	Version  = "v1"
	// Name is the CustomResourceDefinition's name.
	Name = Plural + "." + rules.GroupName
)

// The API approval annotation that groups under k8s.io need.
const (
	APIApprovalAnnotation = "api-approved.kubernetes.io"
	APIApprovalValue      = "unapproved, mvp.k8s.io is the group of mvpctl's TransformationRules format, not an API of the Kubernetes project"
)

// GroupVersionResource is the resource of TransformationRules objects.
var GroupVersionResource = schema.GroupVersionResource{Group: rules.GroupName, Version: Version, Resource: Plural}

// Size bounds. An object must fit etcd's request limit (1.5 MiB by default)
// and, when applied with client-side kubectl apply, the 256 KiB that all
// annotations of an object may hold together; these bounds reject the
// runaway cases (a pasted file as a jq expression, generated rules without
// end) with a field path instead of an opaque storage error.
const (
	MaxMigrationRules   = 128
	MaxTransformations  = 128
	MaxRoutingRules     = 128
	MaxValueMapEntries  = 128
	MaxPathLength       = 512
	MaxExpressionLength = 8192
	MaxDescription      = 1024
)

// Docs maps "Type.Field" (Go names) and "Type" to doc comments.
type Docs map[string]string

// LoadDocs reads the doc comments of the types and fields declared in the
// non-test Go files of a directory (package rules).
func LoadDocs(dir string) (Docs, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	docs := Docs{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range af.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				text := ts.Doc.Text()
				if text == "" {
					text = gd.Doc.Text()
				}
				docs[ts.Name.Name] = text
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					for _, n := range fld.Names {
						docs[ts.Name.Name+"."+n.Name] = fld.Doc.Text()
					}
				}
			}
		}
	}
	return docs, nil
}

// description turns a Go doc comment into a schema description: one
// paragraph per blank-line-separated block, Go doc links unbracketed.
func description(text string) string {
	var p comment.Parser
	d := p.Parse(text)
	var pr comment.Printer
	pr.TextWidth = -1 // no wrapping
	out := strings.TrimSpace(string(pr.Text(d)))
	return out
}

// fieldSchema holds what the Go types cannot say about a field: the
// markers of a kubebuilder project, kept in one table.
type fieldSchema struct {
	required  bool
	pattern   string
	minLength *int64
	maxLength *int64
	maxItems  *int64
	format    string
}

func ptr[T any](v T) *T { return &v }

// Patterns mirror the checks of rules.Validate that a schema can express;
// TestPatterns_MatchValidate keeps the two in step.
const (
	versionPattern       = `^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`
	kindPattern          = `^[A-Z][A-Za-z0-9]*$`
	groupPattern         = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	resourcePattern      = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	routeResourcePattern = `^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	// serverVersionPattern is the syntax that rules.ParseServerVersionPattern parses.
	serverVersionPattern = rules.ServerVersionRegexp
)

var markers = map[string]fieldSchema{
	"TransformationRules.Spec": {required: true},

	"Spec.APIMigrationRules": {maxItems: ptr[int64](MaxMigrationRules)},
	"Spec.APIRoutingRules":   {maxItems: ptr[int64](MaxRoutingRules)},

	"MigrationRule.APIGroup":        {pattern: groupPattern, maxLength: ptr[int64](253)},
	"MigrationRule.ToAPIGroup":      {pattern: groupPattern, maxLength: ptr[int64](253)},
	"MigrationRule.Resource":        {required: true, pattern: resourcePattern, minLength: ptr[int64](1), maxLength: ptr[int64](63)},
	"MigrationRule.Kind":            {pattern: kindPattern, maxLength: ptr[int64](63)},
	"MigrationRule.FromVersion":     {required: true, pattern: versionPattern, maxLength: ptr[int64](63)},
	"MigrationRule.ToVersion":       {required: true, pattern: versionPattern, maxLength: ptr[int64](63)},
	"MigrationRule.Transformations": {maxItems: ptr[int64](MaxTransformations)},

	"Transformation.Path":        {maxLength: ptr[int64](MaxPathLength)},
	"Transformation.Action":      {required: true},
	"Transformation.TargetPath":  {maxLength: ptr[int64](MaxPathLength)},
	"Transformation.ValueMap":    {maxItems: ptr[int64](MaxValueMapEntries)},
	"Transformation.Forward":     {maxLength: ptr[int64](MaxExpressionLength)},
	"Transformation.Reverse":     {maxLength: ptr[int64](MaxExpressionLength)},
	"Transformation.When":        {maxLength: ptr[int64](MaxExpressionLength)},
	"Transformation.Description": {maxLength: ptr[int64](MaxDescription)},

	"ValuePair.From": {required: true},
	"ValuePair.To":   {required: true},

	"RoutingRule.APIGroup":               {pattern: groupPattern, maxLength: ptr[int64](253)},
	"RoutingRule.Resource":               {required: true, pattern: routeResourcePattern, minLength: ptr[int64](1), maxLength: ptr[int64](63)},
	"RoutingRule.ClientVersion":          {pattern: versionPattern, maxLength: ptr[int64](63)},
	"RoutingRule.PreferAPIServerVersion": {required: true, pattern: serverVersionPattern, minLength: ptr[int64](1), maxLength: ptr[int64](rules.MaxServerVersionPatternLength)},

	"TransformationRulesStatus.ObservedGeneration": {format: "int64"},
	"TransformationRulesStatus.MigrationRules":     {format: "int32"},
	"TransformationRulesStatus.RoutingRules":       {format: "int32"},
}

// enums lists the values of the string types that have a fixed set.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[rules.Action]():    names(rules.Actions),
	reflect.TypeFor[rules.ValueType](): names(rules.ValueTypes),
}

func names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

var (
	valueType     = reflect.TypeFor[rules.Value]()
	conditionType = reflect.TypeFor[metav1.Condition]()
)

type generator struct {
	docs Docs
	errs []error
}

// New builds the CustomResourceDefinition from the rules types, with the
// descriptions in docs (see [LoadDocs]; nil leaves them out).
func New(docs Docs) (*apiextensionsv1.CustomResourceDefinition, error) {
	g := &generator{docs: docs}
	root := reflect.TypeFor[rules.TransformationRules]()
	spec, _ := root.FieldByName("Spec")
	specSchema := g.schemaFor(spec.Type)
	// Validate requires one kind of rule at least.
	specSchema.XValidations = apiextensionsv1.ValidationRules{{
		Rule:    "(has(self.apiMigrationRules) && size(self.apiMigrationRules) > 0) || (has(self.apiRoutingRules) && size(self.apiRoutingRules) > 0)",
		Message: "must have apiMigrationRules or apiRoutingRules",
	}}
	specSchema.Description = g.doc("TransformationRules.Spec")
	status := g.schemaFor(reflect.TypeFor[rules.TransformationRulesStatus]())
	status.Description = g.doc("TransformationRulesStatus")
	// A map keyed by type, as in Kubernetes' own types, so that server-side
	// apply merges conditions by type.
	conds := status.Properties["conditions"]
	conds.XListType = ptr("map")
	conds.XListMapKeys = []string{"type"}
	status.Properties["conditions"] = conds
	top := apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: g.doc("TransformationRules"),
		Required:    []string{"spec"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string", Description: "APIVersion is always " + rules.APIVersion + "."},
			"kind":       {Type: "string", Description: "Kind is always " + rules.KindTransformationRules + "."},
			"metadata":   {Type: "object"},
			"spec":       specSchema,
			"status":     status,
		},
	}
	if len(g.errs) > 0 {
		return nil, fmt.Errorf("generating the TransformationRules schema: %v", g.errs)
	}
	ready := fmt.Sprintf(`.status.conditions[?(@.type=="%s")].status`, rules.ConditionReady)
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   Name,
			Labels: map[string]string{"app.kubernetes.io/name": "mvpctl", "app.kubernetes.io/component": "crd"},
			// Groups under k8s.io are protected: kube-apiserver refuses a CRD
			// without this annotation. A value starting with "unapproved" is
			// accepted and reported in the KubernetesAPIApprovalPolicyConformant
			// condition; the rules format fixes the group to mvp.k8s.io.
			Annotations: map[string]string{APIApprovalAnnotation: APIApprovalValue},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: rules.GroupName,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     Plural,
				Singular:   Singular,
				Kind:       rules.KindTransformationRules,
				ListKind:   rules.KindTransformationRules + "List",
				ShortNames: []string{"trules"},
				Categories: []string{"mvp"},
			},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    Version,
				Served:  true,
				Storage: true,
				Schema:  &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &top},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Rules", Type: "integer", JSONPath: ".status.migrationRules", Description: "apiMigrationRules of the observed generation"},
					{Name: "Routes", Type: "integer", JSONPath: ".status.routingRules", Description: "apiRoutingRules of the observed generation"},
					{Name: "Ready", Type: "string", JSONPath: ready, Description: "whether the current generation is in use"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			}},
		},
	}, nil
}

func (g *generator) doc(key string) string {
	if g.docs == nil {
		return ""
	}
	return description(g.docs[key])
}

// schemaFor maps a Go type to a structural schema. Structs list their JSON
// fields and nothing else, so unknown fields are rejected by strict field
// validation (kubectl's default) and pruned otherwise.
func (g *generator) schemaFor(t reflect.Type) apiextensionsv1.JSONSchemaProps {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case valueType:
		// Any JSON value: the only free-form part of the schema.
		return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}
	case conditionType:
		return conditionSchema()
	}
	if vals, ok := enums[t]; ok {
		s := apiextensionsv1.JSONSchemaProps{Type: "string"}
		for _, v := range vals {
			s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", v))})
		}
		return s
	}
	switch t.Kind() {
	case reflect.String:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case reflect.Int32, reflect.Int64:
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Minimum: ptr[float64](0)}
	case reflect.Slice:
		items := g.schemaFor(t.Elem())
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		elem := g.schemaFor(t.Elem())
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &elem}}
	case reflect.Struct:
		s := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := t.Name() + "." + f.Name
			fs := g.schemaFor(f.Type)
			fs.Description = g.doc(key)
			m := markers[key]
			if m.required {
				s.Required = append(s.Required, name)
			}
			fs.Pattern, fs.MinLength, fs.MaxLength, fs.MaxItems = m.pattern, m.minLength, m.maxLength, m.maxItems
			if m.format != "" {
				fs.Format = m.format
			}
			s.Properties[name] = fs
		}
		return s
	}
	g.errs = append(g.errs, fmt.Errorf("no schema for Go type %s", t))
	return apiextensionsv1.JSONSchemaProps{}
}

// conditionSchema is metav1.Condition's schema, with the validations of its
// kubebuilder markers in k8s.io/apimachinery.
func conditionSchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "Condition contains details for one aspect of the current state of this API Resource.",
		Required:    []string{"type", "status", "lastTransitionTime", "reason", "message"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"type": {Type: "string", MaxLength: ptr[int64](316),
				Pattern:     `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`,
				Description: "type of condition in CamelCase or in foo.example.com/CamelCase."},
			"status": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"True"`)}, {Raw: []byte(`"False"`)}, {Raw: []byte(`"Unknown"`)}},
				Description: "status of the condition, one of True, False, Unknown."},
			"observedGeneration": {Type: "integer", Format: "int64", Minimum: ptr[float64](0),
				Description: "observedGeneration represents the .metadata.generation that the condition was set based upon."},
			"lastTransitionTime": {Type: "string", Format: "date-time",
				Description: "lastTransitionTime is the last time the condition transitioned from one status to another."},
			"reason": {Type: "string", MinLength: ptr[int64](1), MaxLength: ptr[int64](1024),
				Pattern:     `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`,
				Description: "reason contains a programmatic identifier indicating the reason for the condition's last transition."},
			"message": {Type: "string", MaxLength: ptr[int64](32768),
				Description: "message is a human readable message indicating details about the transition."},
		},
	}
}

// YAML renders the CustomResourceDefinition as the generated manifest.
func YAML(docs Docs) ([]byte, error) {
	crd, err := New(docs)
	if err != nil {
		return nil, err
	}
	data, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	// Leave out what only a stored object has.
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	header := "# Code generated by go generate ./rules/crd from rules/types.go. DO NOT EDIT.\n"
	return append([]byte(header), out...), nil
}
