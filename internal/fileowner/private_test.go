//go:build unix

package fileowner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writePrivate writes content to a new file of mode 0600 in dir.
func writePrivate(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantRefusal checks that err is a refusal (ErrNotPrivate) whose message
// holds every one of want.
func wantRefusal(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, ErrNotPrivate) {
		t.Errorf("%s: %v, want a refusal (ErrNotPrivate)", what, err)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

// TestReadPrivate: a private file is read (at most max bytes); one its
// group or others may read or write is refused with the chmod that fixes
// it; a missing file is fs.ErrNotExist.
func TestReadPrivate(t *testing.T) {
	dir := t.TempDir()
	path := writePrivate(t, dir, "secret", "0123456789")
	if b, err := ReadPrivate(path, 4); err != nil || string(b) != "0123" {
		t.Errorf("ReadPrivate(max 4) = %q, %v; want %q", b, err, "0123")
	}
	if b, err := ReadPrivate(path, 100); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadPrivate = %q, %v", b, err)
	}
	for _, mode := range []fs.FileMode{0o640, 0o604, 0o620, 0o602, 0o610} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		b, err := ReadPrivate(path, 100)
		if b != nil {
			t.Errorf("mode %04o: read %q", mode, b)
		}
		m := fmt.Sprintf("mode %04o", mode)
		wantRefusal(t, m, err, path+" has "+m, "chmod 600 "+path)
	}
	if _, err := ReadPrivate(filepath.Join(dir, "missing"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestReadPrivateRefusesAnotherOwner: a file of another user is refused,
// mode 0600 or not, with the chown that fixes it: that user could read or
// replace it. The test gives the file to nobody (65534), which needs root.
func TestReadPrivateRefusesAnotherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give the file to another user")
	}
	path := writePrivate(t, t.TempDir(), "secret", "s")
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	b, err := ReadPrivate(path, 100)
	if b != nil {
		t.Errorf("read %q", b)
	}
	wantRefusal(t, "a file of uid 65534", err, path+" belongs to uid 65534", "(uid 0)", "chown 0 "+path)
}

// TestReadPrivateKinds: what is not a regular file is refused, a FIFO
// without waiting for a writer; a symlink is followed, and what is checked
// is its target (a private target is read, a public one refused, a
// dangling link is a missing file).
func TestReadPrivateKinds(t *testing.T) {
	dir := t.TempDir()
	private := writePrivate(t, dir, "private", "mine")
	public := writePrivate(t, dir, "public", "everyone's")
	if err := os.Chmod(public, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	fifo := filepath.Join(dir, "fifo")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{sub, fifo} {
		_, err := ReadPrivate(p, 100)
		wantRefusal(t, p, err, p+" is not a regular file")
	}

	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if b, err := ReadPrivate(link("to-private", private), 100); err != nil || string(b) != "mine" {
		t.Errorf("a symlink to a private file: %q, %v; want its target's content", b, err)
	}
	toPublic := link("to-public", public)
	_, err := ReadPrivate(toPublic, 100)
	wantRefusal(t, "a symlink to a public file", err, "mode 0644", "chmod 600 "+toPublic)
	if _, err := ReadPrivate(link("dangling", filepath.Join(dir, "gone")), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dangling symlink: %v, want fs.ErrNotExist", err)
	}
}

// TestReadPrivateReadsWhatItChecked: once the file is open, its name is
// never consulted again, so swapping the file under the name (for another
// file, or a symlink) between the check and the read changes nothing:
// the descriptor checked is the descriptor read. readOpen is the part of
// ReadPrivate after the open; the test swaps the name in that gap.
func TestReadPrivateReadsWhatItChecked(t *testing.T) {
	dir := t.TempDir()
	path := writePrivate(t, dir, "secret", "checked")
	swap := func(f func(tmp string) error) {
		t.Helper()
		tmp := filepath.Join(dir, "tmp")
		if err := f(tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	open := func() *os.File {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}

	// A private file opened, then a public file, or a symlink to one, put
	// at its name: what is read is the private file that was checked.
	public := writePrivate(t, dir, "public", "planted")
	if err := os.Chmod(public, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, plant := range []func(tmp string) error{
		func(tmp string) error { return os.WriteFile(tmp, []byte("planted"), 0o644) },
		func(tmp string) error { return os.Symlink(public, tmp) },
	} {
		swap(func(tmp string) error { return os.WriteFile(tmp, []byte("checked"), 0o600) })
		f := open()
		swap(plant)
		if b, err := readOpen(f, path, 100); err != nil || string(b) != "checked" {
			t.Errorf("after a public file replaced it: %q, %v; want the opened file's %q", b, err, "checked")
		}
	}

	// A public file opened (path is one now), then a private one put at
	// its name: the opened file is refused.
	f := open()
	swap(func(tmp string) error { return os.WriteFile(tmp, []byte("private"), 0o600) })
	if b, err := readOpen(f, path, 100); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("the opened public file, after a private one replaced it: %q, %v; want a refusal", b, err)
	}
}

// TestCheckPrivateDir: a directory its group or others may enter is
// refused with the chmod 700 that fixes it, a file is not a directory, and
// a directory of another user is refused.
func TestCheckPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CheckPrivateDir(dir); err != nil {
		t.Errorf("a private directory: %v", err)
	}
	for _, mode := range []fs.FileMode{0o750, 0o705, 0o701} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		m := fmt.Sprintf("mode %04o", mode)
		wantRefusal(t, m, CheckPrivateDir(dir), dir+" has "+m, "chmod 700 "+dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := writePrivate(t, dir, "file", "")
	wantRefusal(t, "a file", CheckPrivateDir(file), file+" is not a directory")
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give the directory to another user")
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, "a directory of uid 65534", CheckPrivateDir(dir), dir+" belongs to uid 65534", "chown 0 "+dir)
}
