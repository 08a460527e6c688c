package emulation

import (
	"maps"
	"slices"
	"strings"

	"github.com/mvpctl/mvpctl/rules"
)

// jsonPatchOp is one RFC 6902 operation; Value is omitted for remove.
type jsonPatchOp map[string]any

// diffJSONPatch returns the RFC 6902 operations that turn a into b: object
// members added, removed or replaced, anything else (arrays included)
// replaced whole. Keys are visited in sorted order, so the same objects
// give the same patch.
func diffJSONPatch(a, b map[string]any) []jsonPatchOp {
	ops := []jsonPatchOp{}
	diffObjects("", a, b, &ops)
	return ops
}

func diffObjects(ptr string, a, b map[string]any, ops *[]jsonPatchOp) {
	both := make(map[string]any, len(a)+len(b))
	maps.Copy(both, a)
	maps.Copy(both, b)
	for _, k := range slices.Sorted(maps.Keys(both)) {
		av, inA := a[k]
		bv, inB := b[k]
		p := ptr + "/" + escapePointer(k)
		switch {
		case !inB:
			*ops = append(*ops, jsonPatchOp{"op": "remove", "path": p})
		case !inA:
			*ops = append(*ops, jsonPatchOp{"op": "add", "path": p, "value": bv})
		case rules.EqualJSON(av, bv):
		default:
			am, aok := av.(map[string]any)
			bm, bok := bv.(map[string]any)
			if aok && bok {
				diffObjects(p, am, bm, ops)
				continue
			}
			*ops = append(*ops, jsonPatchOp{"op": "replace", "path": p, "value": bv})
		}
	}
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
