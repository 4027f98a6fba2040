package proc

import (
	"os"
	"os/exec"
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
