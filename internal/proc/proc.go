// Package proc answers questions about processes that the standard library
// does not: whether a pid is a live process (not a zombie), and whether a
// process group still has a live member; and its Poller waits for many
// children's exits and drains their pipes on one goroutine. Linux only: it
// reads /proc and uses pidfds and epoll.
package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stat returns the fields of /proc/PID/stat after the command name: state,
// ppid, pgrp, ... The name is parenthesised and may contain spaces, so the
// fields start after the last ')'.
func stat(pid string) []string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// Alive reports whether pid is a process that is not a zombie. A killed
// process lingers as a zombie until its parent (or init, for orphans) reaps
// it; it runs nothing and holds nothing but its pid.
func Alive(pid int) bool {
	f := stat(strconv.Itoa(pid))
	return len(f) > 0 && f[0] != "Z"
}

// GroupHasLiveMember reports whether a process other than a zombie is in
// process group pgid.
//
// It reads the stat file of every process, so it allocates little per
// process: a thousand servers stopped together call it in a loop, and
// the garbage of a naive scan (a few KiB per process, for every process
// of the machine) kept the collector running and stalled everything
// else, the reaping of the very servers being stopped among it.
func GroupHasLiveMember(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false // no member at all: the common case, one syscall
	}
	d, err := os.Open("/proc")
	if err != nil {
		return true // cannot tell: assume the worst
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return true
	}
	want := []byte(strconv.Itoa(pgid))
	path := make([]byte, 0, 32)
	buf := make([]byte, 512) // the fields up to pgrp come first; a cut line still has them
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		path = append(append(append(path[:0], "/proc/"...), name...), "/stat"...)
		state, pgrp, ok := readStat(path, buf)
		if ok && state != 'Z' && bytes.Equal(pgrp, want) {
			return true
		}
	}
	return false
}

// readStat reads the state and the process group from the stat file at
// path (see stat) into buf, without allocating.
func readStat(path, buf []byte) (state byte, pgrp []byte, ok bool) {
	fd, err := syscall.Open(string(path), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return 0, nil, false
	}
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, nil, false
	}
	// After the name: " state ppid pgrp ...".
	var f [3][]byte
	rest := b[i+1:]
	for k := range f {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			return 0, nil, false
		}
		f[k], rest = rest[:end], rest[end:]
	}
	if len(f[0]) != 1 {
		return 0, nil, false
	}
	return f[0][0], f[2], true
}

// WaitWhile checks busy until it reports false or d has passed, spacing
// the checks out (5 ms, doubling to 80 ms): a check that reads all of
// /proc (GroupHasLiveMember), made by a thousand waiters stopped
// together, would otherwise scan /proc a hundred thousand times a second
// between them and starve the very processes they wait for.
func WaitWhile(d time.Duration, busy func() bool) {
	deadline := time.Now().Add(d)
	for wait := 5 * time.Millisecond; busy() && time.Now().Before(deadline); wait = min(2*wait, 80*time.Millisecond) {
		time.Sleep(wait)
	}
}
