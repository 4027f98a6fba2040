//go:build unix

package fileowner

import (
	"io/fs"
	"syscall"
)

// Of returns the uid that owns the file; ok is false where files have no
// uid and mode bits (the checks are then the system's own).
func Of(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
