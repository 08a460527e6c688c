package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/manifest"
)

// CheckInput is what [Check] proves the rules against.
type CheckInput struct {
	CRDs    []*apiextensionsv1.CustomResourceDefinition
	Objects []engine.Document
}

// Finding is one thing the rules get wrong.
type Finding struct {
	// CRD is the CRD's name; Object says which object, empty for the CRD
	// as a whole.
	CRD, Object string
	Message     string
}

func (f Finding) String() string {
	if f.Object == "" {
		return f.CRD + ": " + f.Message
	}
	return f.CRD + ": " + f.Object + ": " + f.Message
}

// CheckResult is what [Check] found, and what it covered.
type CheckResult struct {
	Findings []Finding
	// CRDs and Objects count what was checked.
	CRDs, Objects int
}

// Check proves, without a cluster, what --manage-crds's self-test proves
// and more: for each CRD, that the rules reach every version from every
// other, and that a sample object and each given object of its kind
// converts to every version and back exactly, within the contract, as the
// webhook would convert them.
func Check(ctx context.Context, conv *engine.Converter, in CheckInput) CheckResult {
	var res CheckResult
	convert := inProcess(conv)
	claimed := make([]bool, len(in.Objects))
	for _, crd := range in.CRDs {
		res.CRDs++
		versions := CRDVersions(crd)
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		objs := []map[string]any{}
		var sources []string
		for _, v := range versions {
			objs, sources = append(objs, sampleObject(crd, v)), append(sources, "sample object at "+v)
		}
		for i, d := range in.Objects {
			if gvk, err := objectGVK(d.Object); err == nil && gvk.GroupKind() == gk {
				claimed[i] = true
				objs, sources = append(objs, d.Object), append(sources, d.Source)
				res.Objects++
			}
		}
		if err := Reachable(conv, gk, versions); err != nil {
			res.Findings = append(res.Findings, Finding{CRD: crd.Name, Message: fmt.Sprintf("the rules do not convert between all its versions %v: %v", versions, err)})
			continue
		}
		for i, obj := range objs {
			for _, err := range checkRoundTrips(ctx, convert, crd.Spec.Group, versions, []map[string]any{obj}) {
				res.Findings = append(res.Findings, Finding{CRD: crd.Name, Object: sources[i], Message: err.Error()})
			}
		}
	}
	for i, d := range in.Objects {
		if !claimed[i] {
			res.Findings = append(res.Findings, Finding{CRD: "-", Object: d.Source, Message: "no CRD given for this object's kind"})
		}
	}
	return res
}

// ReadCheckFiles reads CRDs (apiextensions.k8s.io/v1) and objects from
// manifest files and directories (as kubectl's -f reads them); everything
// not a CRD is an object to check.
func ReadCheckFiles(paths []string) (CheckInput, error) {
	var in CheckInput
	for _, root := range paths {
		_, err := manifest.Walk(root, manifest.WalkOptions{}, func(p string, err error) error {
			if err != nil {
				return err
			}
			return in.read(p)
		})
		if err != nil {
			return in, err
		}
	}
	return in, nil
}

// read adds the CRDs and objects of one file.
func (in *CheckInput) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	docs, err := engine.ReadDocuments(path, f)
	f.Close()
	if err != nil {
		return err
	}
	for _, d := range docs {
		switch d.Object["kind"] {
		case "TransformationRules":
			continue // rules beside the CRD; --rules names them
		case "CustomResourceDefinition":
		default:
			in.Objects = append(in.Objects, d)
			continue
		}
		crd, err := decodeCRD(d.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Source, err)
		}
		in.CRDs = append(in.CRDs, crd)
	}
	return nil
}

func decodeCRD(obj map[string]any) (*apiextensionsv1.CustomResourceDefinition, error) {
	if av := obj["apiVersion"]; av != "apiextensions.k8s.io/v1" {
		return nil, fmt.Errorf("a CustomResourceDefinition of %v: want apiextensions.k8s.io/v1", av)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(data, &crd); err != nil {
		return nil, err
	}
	if crd.Spec.Group == "" || crd.Spec.Names.Kind == "" || len(crd.Spec.Versions) == 0 {
		return nil, fmt.Errorf("CustomResourceDefinition %s has no group, kind or versions", crd.Name)
	}
	return &crd, nil
}

// ReadLiveCheck reads a CRD and its stored objects from a cluster, listed
// in the storage version (no conversion needed to read them) with all
// their metadata, a page at a time.
func ReadLiveCheck(ctx context.Context, cfg *rest.Config, name string) (CheckInput, error) {
	var in CheckInput
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return in, err
	}
	crd, err := crds.CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return in, err
	}
	in.CRDs = []*apiextensionsv1.CustomResourceDefinition{crd}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return in, err
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Storage })
	if i < 0 {
		return in, fmt.Errorf("CustomResourceDefinition %s has no storage version", name)
	}
	storage := crd.Spec.Versions[i].Name
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: storage, Resource: crd.Spec.Names.Plural}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := dyn.Resource(gvr).List(ctx, opts)
		if err != nil {
			return in, err
		}
		for _, item := range list.Items {
			obj, err := exactJSON(item.Object)
			if err != nil {
				return in, err
			}
			in.Objects = append(in.Objects, engine.Document{Source: objectRef(item.GetNamespace(), item.GetName()), Object: obj})
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return in, nil
		}
	}
}

// exactJSON re-decodes an unstructured object as the webhook decodes a
// review's objects (json.Number), so that the check converts what the
// webhook would.
func exactJSON(obj map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return engine.DecodeObject(raw)
}
