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
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
