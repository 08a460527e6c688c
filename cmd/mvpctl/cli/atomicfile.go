package cli

import (
	"os"
	"path/filepath"
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

// commit renames the temporary file over the file.
func (s *stagedFile) commit() error {
	if err := os.Rename(s.tmp, s.path); err != nil {
		os.Remove(s.tmp)
		return err
	}
	return nil
}

// abort removes the temporary file.
func (s *stagedFile) abort() { os.Remove(s.tmp) }
