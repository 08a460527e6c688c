package cli

import (
	"io"

	json "github.com/goccy/go-json"
	"sigs.k8s.io/yaml"
)

// writeYAML writes objects as YAML documents separated by ---.
func writeYAML(w io.Writer, objs []map[string]any) error {
	for i, o := range objs {
		js, err := json.Marshal(o)
		if err != nil {
			return err
		}
		y, err := yaml.JSONToYAML(js)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(y); err != nil {
			return err
		}
	}
	return nil
}

// writeJSON writes one object as indented JSON, or several as a v1 List, as
// kubectl does.
func writeJSON(w io.Writer, objs []map[string]any) error {
	var v any
	switch len(objs) {
	case 0:
		return nil
	case 1:
		v = objs[0]
	default:
		items := make([]any, len(objs))
		for i, o := range objs {
			items[i] = o
		}
		v = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}, "items": items}
	}
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
