package cli

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// writeFileAtomic writes data to path so that a reader (a script waiting
// for the file, a client loading it) sees the old file or the whole new
// one, never a part: a temporary file in the same directory, synced, then
// renamed over path. os.WriteFile and client-go's clientcmd.WriteToFile
// truncate and write in place.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	s, err := stageFile(path, data, perm)
	if err != nil {
		return err
	}
	return s.commit()
}

// stagedFile is the new content of a file, written and synced to a
// temporary file beside it, waiting to be renamed over it: a command that
// rewrites several files stages them all before it replaces any.
type stagedFile struct {
	path, tmp string
	// root, if set, is the tree path and tmp are relative to.
	root *os.Root
}

// createTemp is os.CreateTemp; tests make it fail.
var createTemp = os.CreateTemp

// stageFile writes data, with mode perm, to a temporary file in path's
// directory.
func stageFile(path string, data []byte, perm os.FileMode) (_ *stagedFile, err error) {
	f, err := createTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return nil, err
	}
	if _, err = f.Write(data); err != nil {
		return nil, err
	}
	if err = f.Sync(); err != nil {
		return nil, err
	}
	if err = f.Close(); err != nil {
		return nil, err
	}
	return &stagedFile{path: path, tmp: tmp}, nil
}

// fileOwner is a file's owner and group, as far as the platform says.
type fileOwner struct {
	uid, gid int
	known    bool
}

// geteuid is os.Geteuid; tests run as root and act as another user.
var geteuid = os.Geteuid

// openTempIn creates a new file in root, failing if it exists; tests make
// it fail.
var openTempIn = func(root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

// stageFileIn is stageFile for a file of a tree, opened as an os.Root so
// that no symbolic link (even one put in place after the checks) leads
// the write outside it: data is written with mode perm, and the owner of
// the file it replaces as far as this process may give it (root: the
// owner and group; another user: the group, if it is one of theirs). The
// descriptor is changed (fchmod, fchown), never a path.
func stageFileIn(root *os.Root, rel string, data []byte, perm os.FileMode, owner fileOwner) (_ *stagedFile, err error) {
	var f *os.File
	var tmp string
	for range 10 {
		tmp = filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		if f, err = openTempIn(root, tmp); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return nil, err
	}
	if owner.known {
		switch {
		case geteuid() == 0:
			err = f.Chown(owner.uid, owner.gid)
		case owner.gid != os.Getegid() && inGroup(owner.gid):
			err = f.Chown(-1, owner.gid)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err = f.Write(data); err != nil {
		return nil, err
	}
	if err = f.Sync(); err != nil {
		return nil, err
	}
	if err = f.Close(); err != nil {
		return nil, err
	}
	return &stagedFile{path: rel, tmp: tmp, root: root}, nil
}

// commit renames the temporary file over the file.
func (s *stagedFile) commit() error {
	rename, remove := os.Rename, os.Remove
	if s.root != nil {
		rename, remove = s.root.Rename, s.root.Remove
	}
	if err := rename(s.tmp, s.path); err != nil {
		remove(s.tmp)
		return err
	}
	return nil
}

// abort removes the temporary file.
func (s *stagedFile) abort() {
	if s.root != nil {
		s.root.Remove(s.tmp)
		return
	}
	os.Remove(s.tmp)
}
