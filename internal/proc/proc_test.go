package proc

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

func TestAliveAndGroup(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) || !GroupHasLiveMember(pid) {
		t.Fatalf("a running child: alive %v, group %v", Alive(pid), GroupHasLiveMember(pid))
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	// Not reaped yet: a zombie, which does not count.
	for i := 0; i < 200 && Alive(pid); i++ {
		syscall.Nanosleep(&syscall.Timespec{Nsec: 5e6}, nil)
	}
	if Alive(pid) || GroupHasLiveMember(pid) {
		t.Fatalf("a killed child: alive %v, group %v", Alive(pid), GroupHasLiveMember(pid))
	}
	cmd.Wait()
	if Alive(pid) {
		t.Fatal("a reaped child is alive")
	}
}

// TestGroupMemberOtherThanLeader: a member of the group that is not its
// leader keeps the group live once the leader is gone; killing it ends
// the group.
func TestGroupMemberOtherThanLeader(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer syscall.Kill(-pgid, syscall.SIGKILL)
	// Until the shell has started its sleep: two live members.
	for i := 0; i < 400 && countLive(pgid) < 2; i++ {
		syscall.Nanosleep(&syscall.Timespec{Nsec: 5e6}, nil)
	}
	cmd.Process.Kill() // the leader alone
	cmd.Wait()
	if !GroupHasLiveMember(pgid) {
		t.Fatal("the group's sleep is alive, but the group is reported empty")
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	for i := 0; i < 400 && GroupHasLiveMember(pgid); i++ {
		syscall.Nanosleep(&syscall.Timespec{Nsec: 5e6}, nil)
	}
	if GroupHasLiveMember(pgid) {
		t.Fatal("a killed group is reported live")
	}
}

// countLive counts the live members of group pgid the slow way.
func countLive(pgid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if f := stat(e.Name()); len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			n++
		}
	}
	return n
}
