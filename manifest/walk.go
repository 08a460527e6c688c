package manifest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WalkOptions configure Walk.
type WalkOptions struct {
	// Recursive descends into subdirectories; without it a directory is
	// read one level deep, as kubectl -f reads it without -R.
	Recursive bool
	// Match selects the files of a directory by name; nil means
	// IsManifest. A file given as the root is always visited.
	Match func(name string) bool
	// What names the files Match selects, for a *NoFilesError ("*.txtar
	// files"); empty means manifests'.
	What string
}

// IsManifest says whether a file name is a manifest's: *.yaml, *.yml or
// *.json, as kubectl reads from directories.
func IsManifest(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Walk visits root if it is a file, or the matching files of the directory
// root in lexical order, leaving out hidden entries (.git; the ..data
// directory that holds every file of a ConfigMap volume a second time). An
// entry it cannot read is passed to visit with its error, and the walk goes
// on; the first error visit returns stops the walk and is returned. skipped
// counts the subdirectories left out without Recursive; a directory that
// gives no file is a *NoFilesError.
func Walk(root string, opts WalkOptions, visit func(path string, err error) error) (skipped int, err error) {
	info, err := os.Stat(root)
	if err != nil {
		return 0, err
	}
	if !info.IsDir() {
		return 0, visit(root, nil)
	}
	if li, err := os.Lstat(root); err == nil && li.Mode()&os.ModeSymlink != 0 {
		// A link to a directory given as the root is read, as kubectl -f
		// reads it (filepath.WalkDir would not descend into it); links
		// inside it are not followed.
		root += string(filepath.Separator)
	}
	match := opts.Match
	if match == nil {
		match = IsManifest
	}
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return visit(p, err)
		case p == root:
			return nil
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir() && !opts.Recursive:
			skipped++
			return filepath.SkipDir
		case d.IsDir() || !match(d.Name()):
			return nil
		}
		files++
		return visit(p, nil)
	})
	if err == nil && files == 0 {
		err = &NoFilesError{What: opts.What, Skipped: skipped}
	}
	return skipped, err
}

// NoFilesError is a directory that holds no file to read.
type NoFilesError struct {
	// What names the files looked for; empty means manifests.
	What string
	// Skipped counts the subdirectories left out without -R.
	Skipped int
}

func (e *NoFilesError) Error() string {
	msg := "no " + e.What
	if e.What == "" {
		msg = "no *.yaml, *.yml or *.json files"
	}
	switch e.Skipped {
	case 0:
		return msg
	case 1:
		return msg + " (1 subdirectory not read: use -R)"
	}
	return fmt.Sprintf("%s (%d subdirectories not read: use -R)", msg, e.Skipped)
}
