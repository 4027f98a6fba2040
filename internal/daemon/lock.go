package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDatabase takes the lock of a SQLite database file: FILE.lock beside
// it, flock'd for as long as serve runs and holding serve's pid. Two serves
// on one file would each start every server, and every step of a user's
// session would reach whichever one it happened to (the second is refused
// here, naming the first). The kernel releases a flock when its holder
// dies, so a lock file left by a killed serve is taken over; the file
// itself is left in place, since removing it would let a third serve lock
// a new file while a second still held the old one.
func lockDatabase(dbFile string) (release func(), err error) {
	abs, err := filepath.Abs(dbFile)
	if err != nil {
		return nil, err
	}
	path := abs + ".lock"
	// O_CLOEXEC (Go's default): the servers serve starts must not hold it.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the lock of the database %s: %w", abs, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the database %s is in use by %s (it holds %s): stop it, or give this serve another --db",
				abs, describeHolder(holder), path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the lock %s: %w", path, err)
	}
	return func() {
		_ = f.Truncate(0)
		f.Close()
	}, nil
}

// describeHolder names the process whose pid a lock file holds: its pid
// and, where /proc shows it, its program and verb ("switchboard serve"),
// never the rest of its command line, which may hold a --token.
func describeHolder(content []byte) string {
	pid, err := strconv.Atoi(strings.TrimSpace(string(content)))
	if err != nil || pid <= 0 {
		return "another process"
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return fmt.Sprintf("another process (pid %d)", pid)
	}
	args := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
	args[0] = filepath.Base(args[0])
	return fmt.Sprintf("another process (pid %d: %s)", pid, strings.Join(args[:min(2, len(args))], " "))
}
