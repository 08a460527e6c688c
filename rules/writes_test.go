package rules

import (
	"strings"
	"testing"
)

func mustPath(t *testing.T, s string) Path {
	t.Helper()
	p, err := ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPath_Overlaps(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"metadata.labels", "metadata.labels", true},
		{"metadata", "metadata.labels", true},
		{`metadata.labels["app.kubernetes.io/name"]`, "metadata.labels", true},
		{`metadata["labels"]`, "metadata.labels", true},
		{"metadata.annotations", "metadata.labels", false},
		{"metadata.labelsX", "metadata.labels", false},
		{"[*].labels", "metadata.labels", true},
		{"metadata[*]", "metadata.labels", true},
		{"spec.a[0]", "spec.a[1]", false},
		{"spec.a[*]", "spec.a[1].b", true},
		{"spec.a[0]", "spec.a.b", false},
	} {
		if got := mustPath(t, tc.a).Overlaps(mustPath(t, tc.b)); got != tc.want {
			t.Errorf("%s overlaps %s = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := mustPath(t, tc.b).Overlaps(mustPath(t, tc.a)); got != tc.want {
			t.Errorf("%s overlaps %s = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestJQMayChange_Labels(t *testing.T) {
	labels := mustPath(t, "metadata.labels")
	for _, tc := range []struct {
		name, src string
		may       bool
		why       string // part of the reason when may
	}{
		// Updates of other paths, and reads of labels, leave labels alone.
		{"other fields", `.spec.x = (.spec.y | tostring) | del(.spec.y)`, false, ""},
		{"reads labels", `.spec.selector = .metadata.labels`, false, ""},
		{"if", `if .spec.a then .spec.b = 1 elif .spec.c then del(.spec.c) end`, false, ""},
		{"generic under annotations", `.metadata.annotations |= with_entries(select(.key != "x"))`, false, ""},
		{"update of metadata that changes annotations", `.metadata |= del(.annotations.x)`, false, ""},
		{"reduce", `reduce (.spec.items // [])[] as $i (.; .spec.count += 1)`, false, ""},
		{"binding", `(.metadata.annotations // {}) as $a | .spec.x = $a.y`, false, ""},
		{"variable key under annotations", `"k" as $k | .metadata.annotations[$k] = 1`, false, ""},
		{"interpolated key under annotations", `.metadata.annotations["\(.kind)"] = "x"`, false, ""},
		{"object addition of other keys", `. + {spec: {}}`, false, ""},
		{"select and empty", `select(.spec != null) | (.spec.x = 1 // empty)`, false, ""},
		{"try without catch", `try (.spec.x |= tonumber)`, false, ""},
		{"label", `label $out | .spec.x = 1`, false, ""},

		// What may change labels.
		{"assigns a label", `.metadata.labels.x = "y"`, true, "may change metadata.labels.x"},
		{"updates labels", `.metadata.labels |= . + {x: "y"}`, true, "metadata.labels"},
		{"update creating a label", `.metadata.labels.x |= .`, true, "metadata.labels.x"},
		{"deletes labels", `del(.metadata.labels)`, true, "metadata.labels"},
		{"quoted key", `.metadata["labels"].x = "y"`, true, "metadata.labels.x"},
		{"replaces metadata", `.metadata = {name: .metadata.name}`, true, "may change metadata"},
		{"update of metadata that changes labels", `.metadata |= (.labels.x = "y")`, true, "metadata.labels.x"},
		{"replaces the object from json", `. = (.metadata.annotations.saved | fromjson)`, true, "whole object"},
		{"fromjson result", `.metadata.annotations.saved | fromjson`, true, "any field"},
		{"object construction", `{apiVersion, kind, metadata: {name: .metadata.name}, spec}`, true, "any field"},
		{"object addition of metadata", `. + {metadata: {}}`, true, "metadata"},
		{"deep merge", `. * {metadata: {labels: {x: "y"}}}`, true, "metadata"},
		{"walk", `walk(if type == "object" then del(.x) else . end)`, true, "walk"},
		{"recurse", `.. |= .`, true, ".."},
		{"paths", `reduce paths as $p (.; setpath($p; 1))`, true, "setpath"},
		{"to_entries", `to_entries | from_entries`, true, "any field"},
		{"with_entries", `with_entries(.)`, true, "with_entries"},
		{"setpath", `setpath(["metadata", "labels", "x"]; "y")`, true, "setpath"},
		{"delpaths", `delpaths([["metadata", "labels"]])`, true, "delpaths"},
		{"getpath", `getpath(["metadata", "labels"]) |= {}`, true, "getpath"},
		{"$__loc__ key", `.metadata[$__loc__.file] = 1`, true, "metadata[*]"},
		{"variable key", `"labels" as $k | .metadata[$k] = {}`, true, "metadata[*]"},
		{"interpolated key", `.metadata["\("la")bels"] = {}`, true, "metadata[*]"},
		{"iteration", `.metadata[] |= .`, true, "metadata[*]"},
		{"own function", `def f: .metadata.labels.x = 1; f`, true, "any field"},
		{"shadowed builtin", `def del(f): .metadata.labels = {}; del(.spec)`, true, "any field"},
		{"try with catch", `try (.spec.x = 1) catch {}`, true, "any field"},
		{"variable", `. as $o | $o`, true, "any field"},
		{"does not parse", `.metadata |`, true, "parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, may := JQMayChange(tc.src, labels)
			if may != tc.may || may && !strings.Contains(why, tc.why) {
				t.Errorf("JQMayChange(%q) = %q, %v; want %v with %q", tc.src, why, may, tc.may, tc.why)
			}
		})
	}
}

func TestTransformation_MayChange(t *testing.T) {
	labels := mustPath(t, "metadata.labels")
	for _, tc := range []struct {
		name string
		tr   Transformation
		may  bool
	}{
		{"set a label", Transformation{Action: ActionSet, Path: "metadata.labels.team"}, true},
		{"default a label", Transformation{Action: ActionEnsureFieldExistence, Path: `metadata.labels["app.kubernetes.io/name"]`}, true},
		{"remove labels", Transformation{Action: ActionRemove, Path: "metadata.labels"}, true},
		{"new metadata", Transformation{Action: ActionNewField, Path: "metadata"}, true},
		{"rename into labels", Transformation{Action: ActionRename, Path: "spec.app", TargetPath: "metadata.labels.app"}, true},
		{"modify spec", Transformation{Action: ActionModify, Path: "spec.x"}, false},
		{"jq on a path", Transformation{Action: ActionJQ, Path: "spec.x", Forward: `.metadata.labels.x = 1`, Reverse: "."}, false},
		{"jq reverse on labels", Transformation{Action: ActionJQ, Forward: ".", Reverse: `.metadata.labels.x = "y"`}, true},
		{"jq elsewhere", Transformation{Action: ActionJQ, Forward: `.spec.a = 1`, Reverse: `del(.spec.a)`, When: `.metadata.labels.x == "y"`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, may := tc.tr.MayChange(labels)
			if may != tc.may {
				t.Errorf("MayChange = %q, %v; want %v", why, may, tc.may)
			}
		})
	}
}
