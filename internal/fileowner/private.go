package fileowner

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotPrivate is what every refusal of ReadPrivate and CheckPrivateDir
// satisfies (errors.Is); its message names the path and the command that
// fixes it.
var ErrNotPrivate = errors.New("not private to this user")

// notPrivate is a refusal: its text is the whole message, and it is
// ErrNotPrivate.
type notPrivate string

func (e notPrivate) Error() string      { return string(e) }
func (notPrivate) Is(target error) bool { return target == ErrNotPrivate }

// ReadPrivate returns the first max bytes of the file at path (a caller
// that must refuse a longer file asks for one byte more than it accepts),
// after checking that it is a regular file that this user owns and that
// its group and others have no access to. A symlink is followed, as
// everywhere: the file checked and read is its target. A missing file is
// an error satisfying errors.Is(err, fs.ErrNotExist); a refusal satisfies
// errors.Is(err, ErrNotPrivate).
func ReadPrivate(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, path, max)
}

// readOpen checks and reads the file f, opened from path. It never looks
// at path again (path is for messages only): what it checks is what it
// reads, whatever the name now points to.
func readOpen(f *os.File, path string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(path, fi, false); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}

// CheckPrivateDir checks that the directory at path belongs to this user
// and that its group and others have no access to it: a file in it is
// then out of other users' reach, by name as well as by content.
func CheckPrivateDir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return check(path, fi, true)
}

// check is the one check of both: the kind, the mode, the owner. Its
// refusals say what to run.
func check(path string, fi fs.FileInfo, dir bool) error {
	what, perm := "a regular file", fs.FileMode(0o600)
	if dir {
		what, perm = "a directory", 0o700
	}
	if dir && !fi.IsDir() || !dir && !fi.Mode().IsRegular() {
		return notPrivate(fmt.Sprintf("%s is not %s", path, what))
	}
	uid, ok := owner(fi)
	if !ok {
		return nil
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return notPrivate(fmt.Sprintf("%s has mode %04o: its group or other users may read or change it; refusing it (chmod %o %s)",
			path, fi.Mode().Perm(), perm, path))
	}
	if me := os.Geteuid(); uid != me {
		return notPrivate(fmt.Sprintf("%s belongs to uid %d, not to this user (uid %d): that user may read or replace it; refusing it (chown %d %s, if it is the right one)",
			path, uid, me, me, path))
	}
	return nil
}
