package reliability

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid int
	comm      string   // the executable's name, at most 15 bytes; kept by zombies
	state     string   // R, S, D, Z, ...
	argv      []string // empty for a zombie
}

// processes lists every process of the machine that can still be read
// (one that exits while being listed is skipped).
func processes() []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name is parenthesised and may hold spaces and
		// parentheses itself; the fields after the last ')' are state and
		// ppid.
		s := string(stat)
		open, i := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || i < open {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		p := proc{pid: pid, ppid: ppid, comm: s[open+1 : i], state: f[0]}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil {
			for a := range bytes.SplitSeq(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
				p.argv = append(p.argv, string(a))
			}
		}
		out = append(out, p)
	}
	return out
}

// liveRunning returns the pids of processes, zombies excluded, whose command
// line contains s: the path of a binary the test started, or an argument
// only one of its processes has (a database DSN).
func liveRunning(s string) []int {
	var pids []int
	for _, p := range processes() {
		if p.state != "Z" && strings.Contains(strings.Join(p.argv, " "), s) {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// ourZombies returns the pids of this test process's children running the
// binary at path that exited and were not reaped. A zombie has no command
// line left, so it is recognised by its executable's name, which the
// kernel truncates to 15 bytes.
func ourZombies(path string) []int {
	self := os.Getpid()
	comm := filepath.Base(path)
	comm = comm[:min(len(comm), 15)]
	var pids []int
	for _, p := range processes() {
		if p.ppid == self && p.state == "Z" && p.comm == comm {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// fdCount is the number of open file descriptors of this process. The
// directory read itself holds one, the same one every time.
func fdCount() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}

// fdSlack is how many descriptors more than the baseline the test process
// may hold after a scenario. The baseline is taken after a warm-up session
// has come and gone, so the descriptors the Go runtime opens once per
// process (the netpoller's) are in it, and no other test runs meanwhile
// (the parallel ones wait until the sequential ones are done). The slack
// tolerates a one-off, process-wide descriptor opened lazily during the
// scenario (the race detector's own, an idle keep-alive connection of
// net/http's shared transport), which is not per session. A session that
// leaked would exceed it many times over: a stdio link holds three pipe
// ends and is replaced on every kill cycle.
const fdSlack = 2

// checkResources verifies that a scenario left nothing behind: no live
// process running bin, no zombie child of this process, no more descriptors
// than baseFDs plus fdSlack, and no goroutine beyond those in ignore (taken
// with goleak.IgnoreCurrent at the start of the test). It logs the counts
// as figures under prefix. Descriptors and processes get up to settle to go
// away: a SIGKILL is delivered asynchronously.
func checkResources(t *testing.T, prefix, bin string, baseFDs int, settle time.Duration, ignore goleak.Option) {
	t.Helper()
	deadline := time.Now().Add(settle)
	var live, zombies []int
	fds := 0
	for {
		live, zombies, fds = liveRunning(bin), ourZombies(bin), fdCount()
		if len(live) == 0 && len(zombies) == 0 && fds <= baseFDs+fdSlack || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	figure(t, prefix+".fd_baseline", baseFDs, "fds")
	figure(t, prefix+".fd_after", fds, "fds")
	figure(t, prefix+".leaked_processes", len(live), "processes")
	figure(t, prefix+".zombie_children", len(zombies), "processes")
	if len(live) > 0 {
		t.Errorf("processes still running %s: %v", bin, live)
	}
	if len(zombies) > 0 {
		t.Errorf("unreaped children (zombies) of the test process: %v", zombies)
	}
	if fds > baseFDs+fdSlack {
		t.Errorf("%d file descriptors open, baseline %d (+%d slack): a leak; /proc/self/fd:\n%s", fds, baseFDs, fdSlack, fdList())
	}
	opts := append(leakOptions(), ignore)
	if err := goleak.Find(opts...); err != nil {
		t.Errorf("goroutines left behind: %v", err)
	}
}

// fdList describes every open descriptor, for a failure message.
func fdList() string {
	entries, _ := os.ReadDir("/proc/self/fd")
	var b strings.Builder
	for _, e := range entries {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		b.WriteString(e.Name() + " -> " + target + "\n")
	}
	return b.String()
}
