//go:build unix

package fileowner

import (
	"io/fs"
	"syscall"
)

// openFlags are added to the read-only open: a FIFO put at the path opens
// without waiting for a writer (and is then refused as not a regular
// file) instead of hanging the reader.
const openFlags = syscall.O_NONBLOCK

// owner returns the uid that owns the file; ok is false where files have
// no uid and mode bits (the checks are then the system's own).
func owner(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
