package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// Env describes the machine and the build a run measured.
type Env struct {
	Date       time.Time `json:"date"`
	CPUs       int       `json:"cpus"`       // runtime.NumCPU, what nproc prints
	GOMAXPROCS int       `json:"gomaxprocs"` // as run
	CPUModel   string    `json:"cpu_model"`
	MemTotal   string    `json:"mem_total"`
	Kernel     string    `json:"kernel"`
	GoVersion  string    `json:"go_version"`
	SDKVersion string    `json:"sdk_version"` // github.com/modelcontextprotocol/go-sdk
	Commit     string    `json:"commit"`      // git HEAD, "+dirty" if tracked files have changes
	Modified   []string  `json:"modified"`    // tracked files with uncommitted changes
	NoFile     string    `json:"nofile"`      // RLIMIT_NOFILE soft/hard, before and after raising
}

// ReadEnv collects what it can about the machine; missing parts are left
// empty rather than failing the run.
func ReadEnv() Env {
	e := Env{
		Date:       time.Now().UTC(),
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if kb, ok := procStatusField("/proc/meminfo", "MemTotal"); ok {
		e.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(data))
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/modelcontextprotocol/go-sdk" {
				e.SDKVersion = d.Version
				if d.Replace != nil {
					e.SDKVersion += " => " + d.Replace.Path + " " + d.Replace.Version
				}
			}
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		e.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
			for line := range strings.Lines(string(st)) {
				if len(line) > 3 {
					e.Modified = append(e.Modified, strings.TrimSpace(line[3:]))
				}
			}
			if len(e.Modified) > 0 {
				e.Commit += "+dirty"
			}
		}
	}
	return e
}

// RaiseNoFile raises the soft RLIMIT_NOFILE of this process to at least
// want (up to the hard limit) and describes the limits before and after.
// Children inherit the raised limit.
func RaiseNoFile(want uint64) (string, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "", err
	}
	desc := fmt.Sprintf("soft %d, hard %d", lim.Cur, lim.Max)
	if lim.Cur >= want {
		return desc + " (no change needed)", nil
	}
	newLim := lim
	newLim.Cur = min(want, lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &newLim); err != nil {
		return desc, fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", newLim.Cur, err)
	}
	desc += fmt.Sprintf("; soft raised to %d", newLim.Cur)
	if newLim.Cur < want {
		return desc, fmt.Errorf("RLIMIT_NOFILE hard limit %d is below the %d this run needs", lim.Max, want)
	}
	return desc, nil
}

// procStatusField reads a "Key:   N kB" line of a /proc status-like file.
func procStatusField(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		return n, err == nil
	}
	return 0, false
}

// rssBytes returns the resident set size of process pid (0 = this process).
func rssBytes(pid int) uint64 {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	kb, _ := procStatusField(path, "VmRSS")
	return kb << 10
}

// pssBytes returns the proportional set size of process pid: its resident
// memory with pages shared with other processes (the binary's text, mostly)
// divided among them.
func pssBytes(pid int) uint64 {
	kb, _ := procStatusField(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss")
	return kb << 10
}

// openFDs counts this process's open file descriptors.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// childPIDs lists the live processes whose parent is this process
// (zombies included: a zombie is a child not reaped).
func childPIDs() []int { return childrenOf(os.Getpid()) }

// childrenOf lists the processes whose parent is parent, zombies included.
func childrenOf(parent int) []int {
	var out []int
	for _, pid := range allPIDs() {
		if _, ppid, ok := procStat(pid); ok && ppid == parent {
			out = append(out, pid)
		}
	}
	return out
}

// procsRunning lists the processes, zombies excluded, whose executable is
// path, leaving out the pids in except.
func procsRunning(path string, except ...int) []int {
	var out []int
	for _, pid := range allPIDs() {
		if slices.Contains(except, pid) {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || strings.TrimSuffix(exe, " (deleted)") != path {
			continue
		}
		if state, _, ok := procStat(pid); ok && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// allPIDs lists the process ids in /proc.
func allPIDs() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// procStat returns the state and the parent of process pid, from
// /proc/PID/stat.
func procStat(pid int) (state byte, ppid int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) is in parentheses and may contain
	// spaces; the fields after the last ')' are state, ppid, ...
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0][0], ppid, err == nil
}

// procCPU returns the CPU time process pid has run for, summed over its
// threads (the first field of each /proc/PID/task/TID/schedstat, in
// nanoseconds); 0 if it cannot be read. Threads that have exited are not
// counted; Go programs rarely end threads.
func procCPU(pid int) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(data))
		if len(fields) == 0 {
			continue
		}
		if ns, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}

// selfCPU returns the user and system CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countFDs counts the open file descriptors of process pid.
func countFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// groupAlive reports whether any process is left in process group pgid.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// killGroup sends SIGKILL to process group pgid; a group already gone is
// not an error.
func killGroup(pgid int) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// BuildTestserver builds the testserver binary (./internal/testserver/cmd/
// testserver) into a new temporary directory. The caller removes dir.
func BuildTestserver() (path, dir string, err error) {
	return buildInTemp(testserver.Build)
}

// BuildSwitchboard builds the switchboard binary (./cmd/switchboard), for
// the endpoint and daemon-scale scenarios, into a new temporary directory.
// The caller removes dir.
func BuildSwitchboard() (path, dir string, err error) {
	return buildInTemp(daemontest.Build)
}

func buildInTemp(build func(dir string) (string, error)) (path, dir string, err error) {
	dir, err = os.MkdirTemp("", "sbbench-")
	if err != nil {
		return "", "", err
	}
	// A root daemon runs its servers as the sandbox user, who must be able
	// to reach the binary (MkdirTemp makes the directory 0700).
	if err = os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", err
	}
	if path, err = build(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", err
	}
	return path, dir, nil
}
