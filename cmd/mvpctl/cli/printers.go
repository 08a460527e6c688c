package cli

import (
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// outputFormatsHelp lists the -o formats of commands that print objects.
const outputFormatsHelp = "yaml, json, name, jsonpath=TEMPLATE, jsonpath-file=FILE, go-template=TEMPLATE or go-template-file=FILE"

// objectOutputFormats are the -o values offered by completion; templates
// take their argument after the =.
func objectOutputFormats() []string {
	return []string{"yaml", "json", "name", "jsonpath=", "jsonpath-as-json=", "jsonpath-file=", "go-template=", "go-template-file="}
}

// objectPrinter writes converted objects.
type objectPrinter func(w io.Writer, objs []map[string]any) error

// newObjectPrinter returns the printer of an -o format. yaml and json keep
// every number exact and write several objects as YAML documents or a v1
// List; the other formats are kubectl's printers (k8s.io/cli-runtime), given
// one object, or a v1 List of several as kubectl convert does.
func newObjectPrinter(format string) (objectPrinter, error) {
	switch format {
	case "yaml":
		return writeYAML, nil
	case "json":
		return writeJSON, nil
	}
	pf := genericclioptions.NewPrintFlags("").WithDefaultOutput(format)
	p, err := pf.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return nil, usageErrorf("-o %q: want %s", format, outputFormatsHelp)
	}
	if err != nil {
		return nil, usageErrorf("-o %q: %s", format, firstLine(err.Error()))
	}
	return func(w io.Writer, objs []map[string]any) error {
		var obj runtime.Object
		if len(objs) == 1 {
			obj = &unstructured.Unstructured{Object: objs[0]}
		} else {
			list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
			for _, o := range objs {
				list.Items = append(list.Items, unstructured.Unstructured{Object: o})
			}
			obj = list
		}
		if err := p.PrintObj(obj, w); err != nil {
			return usageErrorf("-o %s: %s", format, firstLine(err.Error()))
		}
		return nil
	}, nil
}

// firstLine keeps what a printer's error says before the dump of the object
// it appends for debugging.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, ". Printing more information")
	s, _, _ = strings.Cut(s, "\n")
	return s
}
