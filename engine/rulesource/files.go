package rulesource

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"

	"github.com/mvpctl/mvpctl/rules"
)

// fileState watches the rules files and remembers what was read last.
type fileState struct {
	paths   []string
	watcher *fsnotify.Watcher // nil when notifications are unavailable: polling only
	changed chan struct{}
	sum     [sha256.Size]byte
	read1   bool
	// docs are the documents of the files in the active set.
	docs []*rules.Document
}

func newFileState(paths []string) (*fileState, error) {
	fs := &fileState{paths: paths, changed: make(chan struct{}, 1)}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		fs.watcher = w
		go fs.forward()
	}
	return fs, nil
}

// forward turns every notification into a poke of changed; what changed is
// found out by reading everything again.
func (fs *fileState) forward() {
	for {
		select {
		case _, ok := <-fs.watcher.Events:
			if !ok {
				return
			}
		case _, ok := <-fs.watcher.Errors:
			if !ok {
				return
			}
		}
		select {
		case fs.changed <- struct{}{}:
		default:
		}
	}
}

func (fs *fileState) close() {
	if fs != nil && fs.watcher != nil {
		fs.watcher.Close()
	}
}

// read reads every rules file and reports whether anything differs from the
// previous read. It also watches the directories involved: a directory
// argument and its subdirectories, and the directory of a file argument
// (editors and ConfigMap volumes replace files by renaming, which a watch on
// the file itself would miss).
func (fs *fileState) read() ([]rules.Source, bool, error) {
	files, dirs, err := expand(fs.paths)
	if fs.watcher != nil {
		for _, d := range dirs {
			_ = fs.watcher.Add(d) // watching is best effort: polling catches up
		}
	}
	if err != nil {
		return nil, false, err
	}
	h := sha256.New()
	srcs := make([]rules.Source, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, false, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(data))
		h.Write(data)
		srcs = append(srcs, rules.Source{Name: f, Data: data})
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	changed := !fs.read1 || sum != fs.sum
	fs.sum, fs.read1 = sum, true
	return srcs, changed, nil
}

// expand lists the rules files of paths, as rules.Load does (see
// rules.DataFiles), and the directories to watch.
func expand(paths []string) (files, dirs []string, err error) {
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			if dir := filepath.Dir(p); dir != p {
				dirs = append(dirs, dir)
			}
			return nil, dirs, err
		}
		if !info.IsDir() {
			files = append(files, p)
			dirs = append(dirs, filepath.Dir(p))
			continue
		}
		sub, err := rules.DataDirs(p)
		dirs = append(dirs, sub...)
		if err != nil {
			return nil, dirs, err
		}
		found, err := rules.DataFiles(p)
		if err != nil {
			return nil, dirs, err
		}
		if len(found) == 0 {
			return nil, dirs, fmt.Errorf("%s: no *.yaml, *.yml or *.json files", p)
		}
		files = append(files, found...)
	}
	return files, dirs, nil
}
