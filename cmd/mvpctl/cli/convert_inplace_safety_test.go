package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// inPlaceCase is a tree for --in-place: root holds a.yaml (a CronJob to
// convert, listed first) and what setup adds; outside is a directory beside
// it.
type inPlaceCase struct {
	name  string
	setup func(t *testing.T, root, outside string)
	flags []string
	// code is the exit status; refused says a.yaml must be left as it was.
	code    int
	refused bool
	stderr  []string
	check   func(t *testing.T, root, outside string)
}

func TestConvert_InPlaceSafety(t *testing.T) {
	symlink := func(t *testing.T, target, link string) {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	write := func(t *testing.T, path, data string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // beyond the umask, setuid included
			t.Fatal(err)
		}
	}
	unchanged := func(path string) func(t *testing.T, root, outside string) {
		return func(t *testing.T, root, outside string) {
			t.Helper()
			p := strings.NewReplacer("ROOT", root, "OUTSIDE", outside).Replace(path)
			if got := readString(t, p); got != cronJobV1beta1 {
				t.Errorf("%s was rewritten:\n%s", p, got)
			}
		}
	}
	converted := func(t *testing.T, path string) {
		t.Helper()
		if got := readString(t, path); !strings.HasPrefix(got, "apiVersion: batch/v1\n") {
			t.Errorf("%s not converted:\n%s", path, got)
		}
	}
	for _, tc := range []inPlaceCase{{
		name: "symlink out of the tree",
		setup: func(t *testing.T, root, outside string) {
			write(t, filepath.Join(outside, "target.yaml"), cronJobV1beta1, 0o644)
			symlink(t, filepath.Join(outside, "target.yaml"), filepath.Join(root, "evil.yaml"))
		},
		code: exitUsage, refused: true,
		stderr: []string{"evil.yaml: is a symbolic link (to ", "target.yaml): --in-place does not write through links unless --follow-symlinks is given", "--in-place refused 1 file (above); no file rewritten"},
		check:  unchanged("OUTSIDE/target.yaml"),
	}, {
		name: "relative symlink out of the tree with --follow-symlinks",
		setup: func(t *testing.T, root, outside string) {
			write(t, filepath.Join(outside, "target.yaml"), cronJobV1beta1, 0o644)
			symlink(t, filepath.Join("..", filepath.Base(outside), "target.yaml"), filepath.Join(root, "evil.yaml"))
		},
		flags: []string{"--follow-symlinks"},
		code:  exitUsage, refused: true,
		stderr: []string{"evil.yaml: is a symbolic link to ", "target.yaml, outside ", ", the tree given: --in-place writes only inside it"},
		check:  unchanged("OUTSIDE/target.yaml"),
	}, {
		name: "symlink inside the tree",
		setup: func(t *testing.T, root, _ string) {
			write(t, filepath.Join(root, "b.yaml"), cronJobV1beta1, 0o644)
			symlink(t, "b.yaml", filepath.Join(root, "link.yaml"))
		},
		code: exitUsage, refused: true,
		stderr: []string{"link.yaml: is a symbolic link (to b.yaml): --in-place does not write through links unless --follow-symlinks is given"},
		check:  unchanged("ROOT/b.yaml"),
	}, {
		name: "symlink inside the tree with --follow-symlinks",
		setup: func(t *testing.T, root, _ string) {
			if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(root, "sub", "b.yaml"), cronJobV1beta1, 0o644)
			symlink(t, filepath.Join("sub", "b.yaml"), filepath.Join(root, "link.yaml"))
		},
		flags: []string{"--follow-symlinks"},
		check: func(t *testing.T, root, _ string) {
			converted(t, filepath.Join(root, "sub", "b.yaml"))
			if stat(t, filepath.Join(root, "link.yaml")).Mode()&os.ModeSymlink == 0 {
				t.Errorf("link.yaml is no longer a symbolic link")
			}
		},
	}, {
		name: "dangling symlink",
		setup: func(t *testing.T, root, _ string) {
			symlink(t, "missing.yaml", filepath.Join(root, "gone.yaml"))
		},
		flags: []string{"--follow-symlinks"},
		code:  exitUsage, refused: true,
		stderr: []string{"gone.yaml: no such file or directory"},
	}, {
		name: "symlinked directory is not followed by -R",
		setup: func(t *testing.T, root, outside string) {
			write(t, filepath.Join(outside, "x.yaml"), cronJobV1beta1, 0o644)
			symlink(t, outside, filepath.Join(root, "linked"))
		},
		flags: []string{"--follow-symlinks"},
		check: unchanged("OUTSIDE/x.yaml"),
	}, {
		name: "symlinked directory named like a manifest",
		setup: func(t *testing.T, root, outside string) {
			write(t, filepath.Join(outside, "x.yaml"), cronJobV1beta1, 0o644)
			symlink(t, outside, filepath.Join(root, "dir.yaml"))
		},
		code: exitUsage, refused: true,
		stderr: []string{"dir.yaml"},
		check:  unchanged("OUTSIDE/x.yaml"),
	}, {
		name: "setuid setgid and sticky bits are not copied",
		setup: func(t *testing.T, root, _ string) {
			write(t, filepath.Join(root, "a.yaml"), cronJobV1beta1, 0o6755|os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
		},
		check: func(t *testing.T, root, _ string) {
			if m := stat(t, filepath.Join(root, "a.yaml")).Mode(); m != 0o755 {
				t.Errorf("mode %v, want -rwxr-xr-x", m)
			}
		},
	}, {
		name: "hard link",
		setup: func(t *testing.T, root, outside string) {
			write(t, filepath.Join(root, "b.yaml"), cronJobV1beta1, 0o644)
			if err := os.Link(filepath.Join(root, "b.yaml"), filepath.Join(outside, "b.yaml")); err != nil {
				t.Fatal(err)
			}
		},
		code: exitUsage, refused: true,
		stderr: []string{"b.yaml: it has 2 hard links: a new file renamed over this name would leave the other 1 link with the old content; break the link first (cp to a new file, then mv it over this one) or convert without --in-place"},
		check:  unchanged("OUTSIDE/b.yaml"),
	}, {
		name: "ownership is kept when run as root",
		setup: func(t *testing.T, root, _ string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			if err := os.Lchown(filepath.Join(root, "a.yaml"), 4321, 8765); err != nil {
				t.Fatal(err)
			}
		},
		check: func(t *testing.T, root, _ string) {
			st := stat(t, filepath.Join(root, "a.yaml")).Sys().(*syscall.Stat_t)
			if st.Uid != 4321 || st.Gid != 8765 {
				t.Errorf("owner %d:%d, want 4321:8765", st.Uid, st.Gid)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
			for _, d := range []string{root, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write(t, filepath.Join(root, "a.yaml"), cronJobV1beta1, 0o644)
			tc.setup(t, root, outside)
			before := stat(t, filepath.Join(root, "a.yaml"))
			args := append([]string{"convert", "-R", "-f", root, "--kubernetes-version", "v1.36", "--in-place"}, tc.flags...)
			code, _, errOut := run(t, "", args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, errOut)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if tc.refused {
				if !os.SameFile(before, stat(t, filepath.Join(root, "a.yaml"))) || readString(t, filepath.Join(root, "a.yaml")) != cronJobV1beta1 {
					t.Errorf("a.yaml was rewritten although another file was refused")
				}
			} else {
				converted(t, filepath.Join(root, "a.yaml"))
			}
			if tc.check != nil {
				tc.check(t, root, outside)
			}
			noTempFiles(t, root)
		})
	}
}

// A symbolic link given as -f is judged against its own directory: one
// to another directory is refused even with --follow-symlinks.
func TestConvert_InPlaceLinkArgument(t *testing.T) {
	target := writeFile(t, "target.yaml", cronJobV1beta1)
	link := filepath.Join(t.TempDir(), "link.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "", "convert", "-f", link, "--kubernetes-version", "v1.36", "--in-place", "--follow-symlinks")
	if code != exitUsage || !strings.Contains(errOut, "the tree given: --in-place writes only inside it") || readString(t, target) != cronJobV1beta1 {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = run(t, "", "convert", "-f", target, "--kubernetes-version", "v1.36", "--follow-symlinks")
	if want := "--follow-symlinks says what --in-place may rewrite: give --in-place too"; code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want %q", code, errOut, want)
	}
}

// Run by another user than the file's owner, a rewrite cannot keep the
// owner (nor a group the user is not in): it goes on and says so. The
// test runs as root and acts as uid 4242.
func TestConvert_InPlaceOwnerWhenNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user first")
	}
	path := writeFile(t, "c.yaml", cronJobV1beta1)
	if err := os.Lchown(path, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	geteuid = func() int { return 4242 }
	t.Cleanup(func() { geteuid = os.Geteuid })
	code, _, errOut := run(t, "", "convert", "-f", path, "--kubernetes-version", "v1.36", "--in-place")
	for _, want := range []string{
		"warning: " + path + ": owned by uid 1234: the rewritten file will be owned by uid 4242 (only root keeps another user's ownership)",
		"warning: " + path + ": of group 5678, which this user is not in: the rewritten file will be of group ",
	} {
		if code != 0 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
	if st := stat(t, path).Sys().(*syscall.Stat_t); st.Uid == 1234 || st.Gid == 5678 {
		t.Errorf("owner %d:%d: the file was given away although the user may not", st.Uid, st.Gid)
	}
	if got := readString(t, path); !strings.HasPrefix(got, "apiVersion: batch/v1\n") {
		t.Errorf("not converted:\n%s", got)
	}
}

// A -f directory given as a symbolic link is read (as kubectl reads it)
// and is the tree: its files are rewritten in the directory it names.
func TestConvert_InPlaceLinkedTree(t *testing.T) {
	base := t.TempDir()
	tree, link := filepath.Join(base, "tree"), filepath.Join(base, "link")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "a.yaml"), []byte(cronJobV1beta1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tree", link); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "convert", "-R", "-f", link, "--kubernetes-version", "v1.36", "--in-place")
	if code != 0 || !strings.Contains(out, "a.yaml: 1 of 1 documents converted") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if got := readString(t, filepath.Join(tree, "a.yaml")); !strings.HasPrefix(got, "apiVersion: batch/v1\n") {
		t.Errorf("not converted:\n%s", got)
	}
	if stat(t, link).Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced")
	}
}

// FuzzInPlaceLinkTarget: whatever a symbolic link in the tree points to,
// --in-place with --follow-symlinks either refuses it or writes a regular
// file inside the tree, the one the link resolves to.
func FuzzInPlaceLinkTarget(f *testing.F) {
	for _, s := range []string{"a.yaml", "../a.yaml", "../../outside/x.yaml", "/etc/passwd", "sub/../a.yaml", "./sub", "..", "/", "sub/link.yaml", "../tree/a.yaml", "missing.yaml"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if target == "" || strings.ContainsRune(target, 0) || len(target) > 256 {
			return
		}
		base := t.TempDir()
		tree, outside := filepath.Join(base, "tree"), filepath.Join(base, "outside")
		for _, d := range []string{filepath.Join(tree, "sub"), outside} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{filepath.Join(tree, "a.yaml"), filepath.Join(tree, "sub", "b.yaml"), filepath.Join(outside, "x.yaml")} {
			if err := os.WriteFile(p, []byte(cronJobV1beta1), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(tree, "sub", "link.yaml")
		if err := os.Symlink(target, link); err != nil {
			return
		}
		in := &convertInput{name: link, arg: tree}
		pf, _, err := checkInPlace(in, inPlaceOptions{FollowSymlinks: true})
		if err != nil {
			return
		}
		realTree, _ := filepath.EvalSymlinks(tree)
		written := filepath.Join(pf.tree, pf.rel)
		resolved, rerr := filepath.EvalSymlinks(link)
		if rel, err := filepath.Rel(realTree, written); err != nil || strings.HasPrefix(rel, "..") || rerr != nil || resolved != written {
			t.Fatalf("link to %q: would write %s (link resolves to %s, %v), outside %s or not the link's file", target, written, resolved, rerr, realTree)
		}
		if info, err := os.Lstat(written); err != nil || !info.Mode().IsRegular() {
			t.Fatalf("link to %q: would write %s, not a regular file (%v)", target, written, err)
		}
	})
}

// In a sticky directory another user's file cannot be renamed over: the
// run refuses it before writing anything. The test runs as root and acts
// as uid 4242.
func TestConvert_InPlaceStickyDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user first")
	}
	dir := t.TempDir()
	mine, theirs := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	for _, p := range []string{mine, theirs} {
		if err := os.WriteFile(p, []byte(cronJobV1beta1), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(mine, 4242, -1); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(theirs, 1234, -1); err != nil {
		t.Fatal(err)
	}
	geteuid = func() int { return 4242 }
	t.Cleanup(func() { geteuid = os.Geteuid })
	code, _, errOut := run(t, "", "convert", "-f", dir, "--kubernetes-version", "v1.36", "--in-place")
	if want := theirs + ": is owned by uid 1234 in the sticky directory " + dir + ": only its owner may replace it"; code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, errOut)
	}
	if readString(t, mine) != cronJobV1beta1 || readString(t, theirs) != cronJobV1beta1 {
		t.Errorf("a file was rewritten")
	}
}
