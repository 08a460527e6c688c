package cli

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// An extensions/v1beta1 Ingress without pathType: its conversion defaults
// pathType, which the round-trip annotation records as absent.
const oldIngress = `apiVersion: extensions/v1beta1
kind: Ingress
metadata:
  name: web
  namespace: shop
spec:
  rules:
  - host: shop.example.com
    http:
      paths:
      - path: /
        backend:
          serviceName: web
          servicePort: 80
`

// An object no conversion touches, carrying a round-trip annotation from
// an earlier conversion: it is written as it was whatever the flag says.
const keptService = `apiVersion: v1
kind: Service
metadata:
  name: web
  annotations:
    mvp.k8s.io/conversion-data: '{"x":{}}'
spec:
  ports:
  - port: 80
`

func decodeYAML(t *testing.T, s string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(s), &obj); err != nil {
		t.Fatalf("%v:\n%s", err, s)
	}
	return obj
}

// A one-way upgrade with --kubernetes-version writes no round-trip
// annotation (nor the annotations map it would have created) unless
// --round-trip-data asks for it, and with it the upgrade converts back to
// the manifest as it was.
func TestConvert_RoundTripData_KubernetesVersion(t *testing.T) {
	in := writeFile(t, "ingress.yaml", oldIngress)
	code, out, errOut := run(t, "", "convert", "-f", in, "--kubernetes-version", "v1.36")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if strings.Contains(out, "annotations") || !strings.Contains(out, "pathType: ImplementationSpecific") {
		t.Errorf("want an upgraded Ingress without annotations:\n%s", out)
	}

	code, out, errOut = run(t, "", "convert", "-f", in, "--kubernetes-version", "v1.36", "--round-trip-data")
	if code != 0 || errOut != "" || !strings.Contains(out, "mvp.k8s.io/conversion-data") {
		t.Fatalf("--round-trip-data: exit %d, want the annotation\n%s%s", code, errOut, out)
	}
	code, back, errOut := run(t, out, "convert", "-f", "-", "--output-version", "extensions/v1beta1")
	if code != 0 || errOut != "" {
		t.Fatalf("converting back: exit %d, stderr:\n%s", code, errOut)
	}
	if got, want := decodeYAML(t, back), decodeYAML(t, oldIngress); !reflect.DeepEqual(got, want) {
		t.Errorf("the round trip changed the Ingress:\n%s", back)
	}
}

// With --output-version the annotation is written by default, and
// --round-trip-data=false leaves it out.
func TestConvert_RoundTripData_OutputVersion(t *testing.T) {
	in := writeFile(t, "ingress.yaml", oldIngress)
	code, out, errOut := run(t, "", "convert", "-f", in, "--output-version", "networking.k8s.io/v1")
	if code != 0 || errOut != "" || !strings.Contains(out, "mvp.k8s.io/conversion-data") {
		t.Fatalf("exit %d, want the annotation by default\n%s%s", code, errOut, out)
	}
	code, out, errOut = run(t, "", "convert", "-f", in, "--output-version", "networking.k8s.io/v1", "--round-trip-data=false")
	if code != 0 || errOut != "" || strings.Contains(out, "annotations") {
		t.Fatalf("--round-trip-data=false: exit %d, want no annotations\n%s%s", code, errOut, out)
	}
}

// Objects that need no change keep their annotation byte for byte, in a
// document of their own and as an item of a List whose other item is
// converted (and loses the annotation its conversion wrote); --in-place
// writes what standard output would.
func TestConvert_RoundTripData_OnlyConvertedObjects(t *testing.T) {
	list := "apiVersion: v1\nkind: List\nitems:\n" + indentItem(oldIngress) + indentItem(keptService)
	in := writeFile(t, "bundle.yaml", keptService+"---\n"+list)
	code, out, errOut := run(t, "", "convert", "-f", in, "--kubernetes-version", "v1.36")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	docs := contentDocs(t, out)
	if len(docs) != 2 || string(docs[0].Text) != keptService {
		t.Fatalf("want the Service as it was, then the List:\n%s", out)
	}
	items, _ := decodeYAML(t, string(docs[1].Text))["items"].([]any)
	if len(items) != 2 {
		t.Fatalf("want 2 items:\n%s", docs[1].Text)
	}
	ing, _ := items[0].(map[string]any)
	if ing["apiVersion"] != "networking.k8s.io/v1" || ing["metadata"].(map[string]any)["annotations"] != nil {
		t.Errorf("want the Ingress upgraded without annotations: %v", ing)
	}
	if svc := items[1].(map[string]any); !reflect.DeepEqual(svc, decodeYAML(t, keptService)) {
		t.Errorf("the List's Service changed: %v", svc)
	}

	code, _, errOut = run(t, "", "convert", "-f", in, "--kubernetes-version", "v1.36", "--in-place")
	if code != 0 || errOut != "" {
		t.Fatalf("--in-place: exit %d, stderr:\n%s", code, errOut)
	}
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if data := string(data); strings.Count(data, "mvp.k8s.io/conversion-data") != 2 || !strings.HasPrefix(data, keptService) {
		t.Errorf("--in-place: want only the Services' own annotations:\n%s", data)
	}
}

// indentItem writes a YAML object as an item of a block list.
func indentItem(obj string) string {
	lines := strings.Split(strings.TrimSuffix(obj, "\n"), "\n")
	for i, l := range lines {
		if i == 0 {
			lines[i] = "- " + l
		} else {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
