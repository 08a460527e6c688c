package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	json "github.com/goccy/go-json"
)

// inPlaceOptions say what --in-place may write through; the zero value
// rewrites regular files with a single link only.
type inPlaceOptions struct {
	// FollowSymlinks rewrites the target of a symbolic link when the
	// target lies in the tree given (--follow-symlinks); without it a link
	// is refused.
	FollowSymlinks bool
}

// inPlaceFile is one file that --in-place rewrites, checked before any file
// is written.
type inPlaceFile struct {
	in *convertInput
	// tree is the directory of the -f argument (or the argument itself), its
	// symbolic links resolved: nothing outside it is written.
	tree string
	// rel is the file to replace, relative to tree, with links resolved.
	rel  string
	data []byte
	// mode is the file's permission bits, without setuid, setgid and
	// sticky: a rewrite must not hand out privileges.
	mode  os.FileMode
	owner fileOwner
}

// rewriteInputs writes back every file that has a converted document: its
// other documents (and separators) as they were, in order, a converted one
// as YAML (or JSON, if it was JSON) under the comments above it. Every file
// is checked first (planInPlace): one refused leaves every file as it was.
// Then every new file is written beside the old one before any is renamed
// over it, so a failure leaves each file whole, and if it happens while
// writing, every file as it was. Files without a converted document are
// not touched.
func rewriteInputs(stdout, stderr io.Writer, inputs []*convertInput, opts inPlaceOptions) error {
	plan, err := planInPlace(stderr, inputs, opts)
	if err != nil {
		return err
	}
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	var staged []*stagedFile
	committed := 0
	defer func() {
		for _, s := range staged[committed:] {
			s.abort()
		}
	}()
	for _, f := range plan {
		root, ok := roots[f.tree]
		if !ok {
			// Writes go through an os.Root: a directory swapped for a link
			// after the checks still cannot lead outside the tree.
			if root, err = os.OpenRoot(f.tree); err != nil {
				return failure(fmt.Errorf("%s: %w; no file rewritten", f.in.name, err))
			}
			roots[f.tree] = root
		}
		s, err := stageFileIn(root, f.rel, f.data, f.mode, f.owner)
		if err != nil {
			return failure(fmt.Errorf("%s: %w; no file rewritten", f.in.name, err))
		}
		staged = append(staged, s)
	}
	for i, s := range staged {
		committed = i + 1 // commit removes the temporary file if it fails
		in := plan[i].in
		if err := s.commit(); err != nil {
			return failure(fmt.Errorf("%s: %w", in.name, err))
		}
		fmt.Fprintf(stdout, "%s: %d of %d documents converted\n", in.name, changedDocs(in), objectDocs(in))
	}
	return nil
}

// planInPlace renders the new content of every file to rewrite and checks
// that it may be replaced: a symbolic link only with FollowSymlinks and
// only to a file in the tree of its -f argument, no file with other hard
// links (an atomic rename would split it from them). Every refusal is
// printed; then the error says nothing was written. What cannot be kept of
// a file (another user's ownership without root) is a warning.
func planInPlace(stderr io.Writer, inputs []*convertInput, opts inPlaceOptions) ([]*inPlaceFile, error) {
	var plan []*inPlaceFile
	seen := map[string]bool{}
	refused := 0
	for _, in := range inputs {
		if changedDocs(in) == 0 {
			continue
		}
		f, warnings, err := checkInPlace(in, opts)
		if err != nil {
			fmt.Fprintf(stderr, "error: %s: %v\n", in.name, err)
			refused++
			continue
		}
		if key := filepath.Join(f.tree, f.rel); seen[key] {
			continue // a link to a file already planned: same content
		} else {
			seen[key] = true
		}
		for _, w := range warnings {
			fmt.Fprintf(stderr, "warning: %s: %s\n", in.name, w)
		}
		if f.data, err = renderInput(in); err != nil {
			return nil, failure(fmt.Errorf("%s: %w; no file rewritten", in.name, err))
		}
		plan = append(plan, f)
	}
	if refused > 0 {
		return nil, inputError(fmt.Errorf("--in-place refused %d %s (above); no file rewritten", refused, plural(refused, "file", "files")))
	}
	return plan, nil
}

// checkInPlace finds the file an input's rewrite replaces, and why it must
// not, and what of it cannot be kept.
func checkInPlace(in *convertInput, opts inPlaceOptions) (f *inPlaceFile, warnings []string, err error) {
	tree := in.arg
	if info, err := os.Stat(tree); err != nil {
		return nil, nil, err
	} else if !info.IsDir() {
		tree = filepath.Dir(tree)
	}
	if tree, err = filepath.EvalSymlinks(tree); err != nil {
		return nil, nil, err
	}
	if tree, err = filepath.Abs(tree); err != nil {
		return nil, nil, err
	}
	li, err := os.Lstat(in.name)
	if err != nil {
		return nil, nil, err
	}
	link := li.Mode()&os.ModeSymlink != 0
	if link && !opts.FollowSymlinks {
		dest, _ := os.Readlink(in.name)
		return nil, nil, fmt.Errorf("is a symbolic link (to %s): --in-place does not write through links unless --follow-symlinks is given", dest)
	}
	target, err := filepath.EvalSymlinks(in.name)
	if err != nil {
		if os.IsNotExist(err) {
			dest, _ := os.Readlink(in.name)
			return nil, nil, fmt.Errorf("is a dangling symbolic link (to %s)", dest)
		}
		return nil, nil, err
	}
	if target, err = filepath.Abs(target); err != nil {
		return nil, nil, err
	}
	rel, err := filepath.Rel(tree, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, nil, fmt.Errorf("is a symbolic link to %s, outside %s, the tree given: --in-place writes only inside it", target, tree)
	}
	info, err := os.Stat(target)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", target)
	}
	owner, nlink := ownerOf(info)
	if nlink > 1 {
		what := "it has"
		if link {
			what = "its target " + target + " has"
		}
		return nil, nil, fmt.Errorf("%s %d hard links: a new file renamed over this name would leave the other %d %s with the old content; break the link first (cp to a new file, then mv it over this one) or convert without --in-place", what, nlink, nlink-1, plural(int(nlink-1), "link", "links"))
	}
	// In a sticky directory (a shared /tmp) only the file's or the
	// directory's owner may rename over it: refused now rather than
	// failing after other files were replaced.
	if dir, err := os.Stat(filepath.Dir(target)); err == nil && dir.Mode()&os.ModeSticky != 0 && geteuid() != 0 {
		if dirOwner, _ := ownerOf(dir); owner.known && owner.uid != geteuid() && dirOwner.uid != geteuid() {
			return nil, nil, fmt.Errorf("is owned by uid %d in the sticky directory %s: only its owner may replace it", owner.uid, filepath.Dir(target))
		}
	}
	return &inPlaceFile{in: in, tree: tree, rel: rel, mode: info.Mode().Perm(), owner: owner}, ownerWarnings(owner), nil
}

// ownerWarnings says what of a file's ownership a rewrite by this process
// cannot keep: the new file is created by it, and only root may give a
// file to another user, or to a group it is not in.
func ownerWarnings(o fileOwner) []string {
	if !o.known || geteuid() == 0 {
		return nil
	}
	var out []string
	if o.uid != geteuid() {
		out = append(out, fmt.Sprintf("owned by uid %d: the rewritten file will be owned by uid %d (only root keeps another user's ownership)", o.uid, geteuid()))
	}
	if !inGroup(o.gid) {
		out = append(out, fmt.Sprintf("of group %d, which this user is not in: the rewritten file will be of group %d", o.gid, os.Getegid()))
	}
	return out
}

// inGroup says whether this process may give a file to group gid.
func inGroup(gid int) bool {
	if gid == os.Getegid() {
		return true
	}
	groups, _ := os.Getgroups()
	return slices.Contains(groups, gid)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// renderInput is the new content of an input file.
func renderInput(in *convertInput) ([]byte, error) {
	var b bytes.Buffer
	for _, d := range in.docs {
		b.Write(d.Separator)
		if !d.changed {
			b.Write(d.Text)
			continue
		}
		b.Write(d.Head())
		var body bytes.Buffer
		if err := renderDoc(&body, d); err != nil {
			return nil, err
		}
		out := body.Bytes()
		if bytes.Contains(d.Text, []byte("\r\n")) {
			out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
		}
		b.Write(out)
	}
	return b.Bytes(), nil
}

// renderDoc writes a converted document's objects in the document's syntax:
// YAML, or indented JSON as kubectl writes it.
func renderDoc(w *bytes.Buffer, d *convertDoc) error {
	if !d.isJSON() {
		return writeYAML(w, d.out)
	}
	for _, o := range d.out {
		js, err := json.MarshalIndent(o, "", "    ")
		if err != nil {
			return err
		}
		w.Write(append(js, '\n'))
	}
	return nil
}

func changedDocs(in *convertInput) int {
	n := 0
	for _, d := range in.docs {
		if d.changed {
			n++
		}
	}
	return n
}

// objectDocs counts the documents that hold objects.
func objectDocs(in *convertInput) int {
	n := 0
	for _, d := range in.docs {
		if len(d.objs) > 0 {
			n++
		}
	}
	return n
}
