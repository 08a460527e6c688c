// Command extract writes the small, gzip-compressed extracts of upstream
// Kubernetes OpenAPI dumps that schemadiff's tests read from
// testdata/schemadiff. It keeps the definitions of the kinds of the named API
// groups, every definition they reach, and the list paths that name their
// resources, so that a diff of two extracts equals the diff of the full
// documents restricted to those groups.
//
//	go run ./schemadiff/internal/extract -groups batch,policy IN.json OUT.json.gz
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

func main() {
	groups := flag.String("groups", "", "comma-separated API groups to keep (\"core\" for the core group)")
	flag.Parse()
	if flag.NArg() != 2 || *groups == "" {
		fmt.Fprintln(os.Stderr, "usage: extract -groups G1,G2 IN.json OUT.json.gz")
		os.Exit(2)
	}
	if err := run(strings.Split(*groups, ","), flag.Arg(0), flag.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "extract:", err)
		os.Exit(1)
	}
}

var refRE = regexp.MustCompile(`"\$ref":\s*"#/(?:definitions|components/schemas)/([^"]+)"`)

func run(groups []string, in, out string) error {
	keep := map[string]bool{}
	for _, g := range groups {
		if g == "core" {
			g = ""
		}
		keep[g] = true
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	defsKey := "definitions"
	var defs map[string]json.RawMessage
	if _, ok := doc["definitions"]; ok {
		err = json.Unmarshal(doc["definitions"], &defs)
	} else {
		defsKey = "components"
		var comp struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		}
		err = json.Unmarshal(doc["components"], &comp)
		defs = comp.Schemas
	}
	if err != nil {
		return err
	}
	type gvkExt struct {
		GVK []struct{ Group string } `json:"x-kubernetes-group-version-kind"`
	}
	want := map[string]bool{}
	var queue []string
	for n, d := range defs {
		var e gvkExt
		_ = json.Unmarshal(d, &e)
		if len(e.GVK) == 1 && keep[e.GVK[0].Group] {
			want[n] = true
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range refRE.FindAllSubmatch(defs[n], -1) {
			r := string(m[1])
			if !want[r] {
				want[r] = true
				queue = append(queue, r)
			}
		}
	}
	outDefs := map[string]json.RawMessage{}
	for n := range want {
		outDefs[n] = defs[n]
	}
	// Paths: the list operations of the kept groups, without parameters or
	// responses (schemadiff reads only their x-kubernetes extensions).
	var paths map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc["paths"], &paths); err != nil {
		return err
	}
	outPaths := map[string]any{}
	for p, item := range paths {
		get, ok := item["get"]
		if !ok {
			continue
		}
		var op map[string]json.RawMessage
		if err := json.Unmarshal(get, &op); err != nil {
			return err
		}
		var action string
		_ = json.Unmarshal(op["x-kubernetes-action"], &action)
		var gvk struct {
			Group string `json:"group"`
		}
		_ = json.Unmarshal(op["x-kubernetes-group-version-kind"], &gvk)
		if action != "list" || !keep[gvk.Group] || strings.Contains(p, "/watch/") {
			continue
		}
		outPaths[p] = map[string]any{"get": map[string]any{
			"x-kubernetes-action":             "list",
			"x-kubernetes-group-version-kind": op["x-kubernetes-group-version-kind"],
			"responses":                       map[string]any{"200": map[string]any{"description": "OK"}},
		}}
	}
	res := map[string]any{"info": doc["info"], "paths": outPaths}
	if v, ok := doc["swagger"]; ok {
		res["swagger"] = v
		res[defsKey] = outDefs
	} else {
		res["openapi"] = doc["openapi"]
		res["components"] = map[string]any{"schemas": outDefs}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, b, "", " "); err != nil {
		return err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(ind.Bytes())
	if err := zw.Close(); err != nil {
		return err
	}
	names := make([]string, 0, len(outDefs))
	for n := range outDefs {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "%s: %d definitions, %d paths, %d bytes gzip\n", out, len(outDefs), len(outPaths), gz.Len())
	return os.WriteFile(out, gz.Bytes(), 0o644)
}
