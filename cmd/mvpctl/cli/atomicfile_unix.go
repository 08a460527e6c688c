//go:build unix

package cli

import (
	"os"
	"syscall"
)

// ownerOf returns a file's owner and group and its number of hard links.
func ownerOf(info os.FileInfo) (fileOwner, uint64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileOwner{}, 1
	}
	return fileOwner{uid: int(st.Uid), gid: int(st.Gid), known: true}, uint64(st.Nlink)
}
