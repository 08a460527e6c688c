package oracle

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// GeneratedDirs are the per-pair directories whose every file the generator
// owns: a file there that Generate does not produce is stale.
var GeneratedDirs = []string{"out", "served"}

// Diff compares the generated files of pairs with the tree under oracleDir.
// It returns human-readable problems: files that differ, are missing, or are
// stale.
func Diff(oracleDir string, pairs []Pair, files map[string][]byte) ([]string, error) {
	var problems []string
	for _, rel := range sortedKeys(files) {
		have, err := os.ReadFile(filepath.Join(oracleDir, rel))
		switch {
		case os.IsNotExist(err):
			problems = append(problems, "missing: "+rel)
		case err != nil:
			return nil, err
		case !bytes.Equal(have, files[rel]):
			problems = append(problems, "differs: "+rel)
		}
	}
	stale, err := staleFiles(oracleDir, pairs, files)
	if err != nil {
		return nil, err
	}
	for _, rel := range stale {
		problems = append(problems, "stale: "+rel)
	}
	return problems, nil
}

// Write writes the generated files of pairs under oracleDir and removes stale
// ones. It returns what it did, one "wrote <path>" or "removed <path>" per
// file.
func Write(oracleDir string, pairs []Pair, files map[string][]byte) ([]string, error) {
	var changed []string
	for _, rel := range sortedKeys(files) {
		p := filepath.Join(oracleDir, rel)
		if have, err := os.ReadFile(p); err == nil && bytes.Equal(have, files[rel]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, files[rel], 0o644); err != nil {
			return nil, err
		}
		changed = append(changed, "wrote "+rel)
	}
	stale, err := staleFiles(oracleDir, pairs, files)
	if err != nil {
		return nil, err
	}
	for _, rel := range stale {
		if err := os.Remove(filepath.Join(oracleDir, rel)); err != nil {
			return nil, err
		}
		changed = append(changed, "removed "+rel)
	}
	return changed, nil
}

func staleFiles(oracleDir string, pairs []Pair, files map[string][]byte) ([]string, error) {
	var stale []string
	for _, p := range pairs {
		for _, d := range GeneratedDirs {
			entries, err := os.ReadDir(filepath.Join(oracleDir, p.Name, d))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				rel := path.Join(p.Name, d, e.Name())
				if _, ok := files[rel]; !ok {
					stale = append(stale, rel)
				}
			}
		}
	}
	return stale, nil
}

// UnknownDirs returns the directories under oracleDir that no entry of Pairs
// names: fixtures that no release module would ever check.
func UnknownDirs(oracleDir string) ([]string, error) {
	entries, err := os.ReadDir(oracleDir)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, p := range Pairs {
		known[p.Name] = true
	}
	var unknown []string
	for _, e := range entries {
		if e.IsDir() && !known[e.Name()] {
			unknown = append(unknown, e.Name())
		}
	}
	return unknown, nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
