package builtin

import "k8s.io/apimachinery/pkg/runtime/schema"

// ConvertsAt says whether the built-in rules convert an object of gvk into
// another version that release r serves, through any chain of rules (each
// converts both ways). Converts alone is not enough for that:
// policy/v1beta1 PodSecurityPolicy is one side of a rule, but its only
// other side, extensions/v1beta1, was removed before it, so from v1.25 on
// there is nothing to convert it to.
func ConvertsAt(gvk schema.GroupVersionKind, r Release) bool {
	rs, err := Rules()
	if err != nil {
		return false
	}
	next := map[schema.GroupVersionKind][]schema.GroupVersionKind{}
	for _, rule := range rs {
		next[rule.From] = append(next[rule.From], rule.To)
		next[rule.To] = append(next[rule.To], rule.From)
	}
	seen := map[schema.GroupVersionKind]bool{gvk: true}
	queue := []schema.GroupVersionKind{gvk}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, n := range next[cur] {
			if seen[n] {
				continue
			}
			if servedAt(n, r) {
				return true
			}
			seen[n] = true
			queue = append(queue, n)
		}
	}
	return false
}

// servedAt says whether release r serves gvk, as the lifecycle table says;
// false for a kind the table does not know.
func servedAt(gvk schema.GroupVersionKind, r Release) bool {
	l, ok := LifecycleOf(gvk)
	return ok && !l.Removed.AtOrAfter(r) && !r.Before(l.Introduced)
}
