// Package proc answers questions about processes that the standard library
// does not: whether a pid is a live process (not a zombie), and whether a
// process group still has a live member. Linux only: it reads /proc.
package proc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
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
func GroupHasLiveMember(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false // no member at all: the common case, one syscall
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: assume the worst
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if f := stat(e.Name()); len(f) >= 3 && f[2] == want && f[0] != "Z" {
			return true
		}
	}
	return false
}
