package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/mvpctl/mvpctl/engine"
	"github.com/mvpctl/mvpctl/rules"
)

// convertFunc converts objects to a version as one review does.
type convertFunc func(ctx context.Context, desired schema.GroupVersion, objs []any) ([]any, error)

// Reachable checks that the rules lead from each version of a kind to
// each other one, and names every pair they do not.
func Reachable(conv *engine.Converter, gk schema.GroupKind, versions []string) error {
	var missing []string
	for _, from := range versions {
		for _, to := range versions {
			if from == to {
				continue
			}
			if _, _, err := conv.Path(gk.WithVersion(from), schema.GroupVersion{Group: gk.Group, Version: to}); err != nil {
				missing = append(missing, fmt.Sprintf("%s → %s", from, to))
			}
		}
	}
	if missing != nil {
		return fmt.Errorf("no rules lead %s", strings.Join(missing, ", "))
	}
	return nil
}

// checkRoundTrips converts each object (at its own version) to every other
// version and back, and reports every failure and every object that does
// not come back exactly.
func checkRoundTrips(ctx context.Context, convert convertFunc, group string, versions []string, objs []map[string]any) []error {
	var errs []error
	for _, obj := range objs {
		gvk, err := objectGVK(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ref := objectRef(namespaceName(obj))
		for _, v := range versions {
			if v == gvk.Version {
				continue
			}
			if err := roundTrip(ctx, convert, obj, gvk.GroupVersion(), schema.GroupVersion{Group: group, Version: v}); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %s → %s → %s: %w", gvk.Kind, ref, gvk.Version, v, gvk.Version, err))
			}
		}
	}
	return errs
}

func roundTrip(ctx context.Context, convert convertFunc, obj map[string]any, from, to schema.GroupVersion) error {
	there, err := convert(ctx, to, []any{rules.DeepCopyJSON(obj)})
	if err != nil {
		return err
	}
	back, err := convert(ctx, from, there)
	if err != nil {
		return err
	}
	if len(back) != 1 || !reflect.DeepEqual(back[0], any(obj)) {
		return fmt.Errorf("the object does not come back exactly (-before +after):\n%s", cmp.Diff(any(obj), back[0]))
	}
	return nil
}

// inProcess converts as the webhook's handler does, without HTTP.
func inProcess(conv *engine.Converter) convertFunc {
	return func(ctx context.Context, desired schema.GroupVersion, objs []any) ([]any, error) {
		return Convert(ctx, conv, &Review{UID: "check", Desired: desired, Objects: objs}, ConvertOptions{})
	}
}

// overHTTP converts by posting a v1 ConversionReview to url, as
// kube-apiserver does, and checks the response's uid and count.
func overHTTP(client *http.Client, url string) convertFunc {
	return func(ctx context.Context, desired schema.GroupVersion, objs []any) ([]any, error) {
		uid := string(uuid.NewUUID())
		body, err := engine.EncodeObject(map[string]any{"apiVersion": reviewV1, "kind": reviewKind,
			"request": map[string]any{"uid": uid, "desiredAPIVersion": desired.String(), "objects": objs}})
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, DefaultMaxRequestBytes))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("the webhook answered %s: %s", resp.Status, data)
		}
		return decodeReviewResponse(data, uid, len(objs))
	}
}

// decodeReviewResponse checks a response as kube-apiserver does and
// returns its objects.
func decodeReviewResponse(data []byte, uid string, n int) ([]any, error) {
	var rev apiextensionsv1.ConversionReview
	if err := json.Unmarshal(data, &rev); err != nil || rev.Response == nil {
		return nil, fmt.Errorf("the webhook's response is no ConversionReview: %v", err)
	}
	r := rev.Response
	switch {
	case r.Result.Status != metav1.StatusSuccess:
		return nil, fmt.Errorf("the webhook failed the review: %s", r.Result.Message)
	case string(r.UID) != uid:
		return nil, fmt.Errorf("the response's uid %q is not the request's %q", r.UID, uid)
	case len(r.ConvertedObjects) != n:
		return nil, fmt.Errorf("the response has %d objects, the request %d", len(r.ConvertedObjects), n)
	}
	out := make([]any, n)
	for i, raw := range r.ConvertedObjects {
		obj, err := engine.DecodeObject(raw.Raw)
		if err != nil {
			return nil, fmt.Errorf("convertedObjects[%d]: %w", i, err)
		}
		out[i] = obj
	}
	return out, nil
}

// sampleObject is the self-test's object of a CRD at a version: metadata
// as kube-apiserver sends it, an empty spec.
func sampleObject(crd *apiextensionsv1.CustomResourceDefinition, version string) map[string]any {
	meta := map[string]any{"name": "mvpctl-self-test", "uid": "00000000-0000-0000-0000-000000000001",
		"resourceVersion": "1", "generation": json.Number("1"), "creationTimestamp": "2026-01-01T00:00:00Z"}
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		meta["namespace"] = "default"
	}
	return map[string]any{"apiVersion": crd.Spec.Group + "/" + version, "kind": crd.Spec.Names.Kind,
		"metadata": meta, "spec": map[string]any{}}
}

// selfTest proves the live rules through the webhook's own endpoint: every
// version pair reachable, a sample object converts to every version and
// back exactly.
func (m *manager) selfTest(ctx context.Context, conv *engine.Converter, crd *apiextensionsv1.CustomResourceDefinition, versions []string) error {
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	if err := Reachable(conv, gk, versions); err != nil {
		return fmt.Errorf("the rules do not convert between all its versions %v: %w", versions, err)
	}
	var samples []map[string]any
	for _, v := range versions {
		samples = append(samples, sampleObject(crd, v))
	}
	if errs := checkRoundTrips(ctx, overHTTP(m.client, m.testURL), crd.Spec.Group, versions, samples); len(errs) > 0 {
		return fmt.Errorf("self-test: %w", errors.Join(errs...))
	}
	return nil
}
