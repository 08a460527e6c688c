package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// writeHistory rewrites the history file: the entries of older releases
// (newest release first wins) and of the previous history file (kept for
// kinds that no listed release has any more), minus the kinds the live
// modules have.
func writeHistory(file string, live []entry) error {
	apiVersion, err := requiredVersion("k8s.io/api")
	if err != nil {
		return err
	}
	releases := []module{{"k8s.io/kube-aggregator", apiVersion}}
	for _, v := range historyAPIReleases {
		releases = append(releases, module{"k8s.io/api", v})
	}
	var found []entry
	for _, m := range releases {
		_, dir, err := goModule("mod download", m.String())
		if err != nil {
			return err
		}
		entries, err := readModule(m, dir)
		if err != nil {
			return err
		}
		found = append(found, entries...)
	}
	if previous, err := readHistory(file); err == nil {
		found = append(found, previous...)
	} else if !os.IsNotExist(err) {
		return err
	}
	inLive := map[string]bool{}
	for _, e := range live {
		inLive[key(e)] = true
	}
	var history []entry
	for _, e := range firstOfEach(found) {
		if !inLive[key(e)] {
			history = append(history, e)
		}
	}
	sortEntries(history)
	data, err := json.MarshalIndent(history, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

// merge returns the live entries and those of history for kinds the live
// modules do not have, sorted.
func merge(live, history []entry) []entry {
	out := firstOfEach(append(append([]entry(nil), live...), history...))
	sortEntries(out)
	return out
}

// firstOfEach keeps the first entry of each group/version/kind.
func firstOfEach(entries []entry) []entry {
	seen := map[string]bool{}
	var out []entry
	for _, e := range entries {
		if !seen[key(e)] {
			seen[key(e)] = true
			out = append(out, e)
		}
	}
	return out
}

func key(e entry) string { return fmt.Sprintf("%s/%s/%s", e.Group, e.Version, e.Kind) }

func sortEntries(entries []entry) {
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
}
