package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/gobuild"
)

// portHolder is a listener on 127.0.0.1 run as uid 65534 (the test is
// root): another user who took the daemon's port.
type portHolder struct {
	addr  string
	lines *bufio.Scanner
}

func startPortHolder(t *testing.T) *portHolder {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the other user's listener as uid 65534")
	}
	dir, err := os.MkdirTemp("", "sb-portholder-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := gobuild.Build("./cmd/switchboard/testdata/portholder", filepath.Join(dir, "portholder"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	p := &portHolder{lines: bufio.NewScanner(out)}
	if !p.lines.Scan() {
		t.Fatal("the port holder did not start")
	}
	p.addr = strings.TrimPrefix(p.lines.Text(), "listening ")
	return p
}

// received returns every request the holder was sent so far: it sends a
// probe of its own and reads up to it.
func (p *portHolder) received(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/probe")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var got []string
	for p.lines.Scan() {
		if strings.HasPrefix(p.lines.Text(), "request GET /probe ") {
			return got
		}
		got = append(got, p.lines.Text())
	}
	t.Fatal("the port holder ended")
	return nil
}

// TestCLIRefusesAListenerOfAnotherUID: with the daemon's credential at
// hand, the CLI sends nothing to a loopback port that another uid holds,
// and says who holds it; --daemon-uid names that uid to trust it.
func TestCLIRefusesAListenerOfAnotherUID(t *testing.T) {
	d := startServe(t, daemontest.Options{})
	p := startPortHolder(t)
	victim := &target{addr: "http://" + p.addr, configDir: d.configDir}
	victim.fail(t, []string{p.addr + " is held by uid 65534 (pid ", "not by you (uid 0)", "another user took its port", "--daemon-uid 65534"}, "server", "list")
	if got := p.received(t); len(got) != 0 {
		t.Fatalf("the other uid's listener received %q", got)
	}
	// The same with --token and with SWITCHBOARD_TOKEN.
	victim.fail(t, []string{"is held by uid 65534"}, "tools", "--token", d.serve.Token)
	if r := victim.run(t, []string{"SWITCHBOARD_TOKEN=" + d.serve.Token}, "", "server", "list"); r.code == 0 || !strings.Contains(r.stderr, "is held by uid 65534") {
		t.Fatalf("server list with SWITCHBOARD_TOKEN: %s", r)
	}
	if got := p.received(t); len(got) != 0 {
		t.Fatalf("the other uid's listener received %q", got)
	}

	// Told that the daemon runs as that uid, the CLI sends.
	victim.fail(t, []string{"503"}, "server", "list", "--daemon-uid", "65534")
	if got := p.received(t); len(got) != 1 || !strings.Contains(got[0], "Bearer "+d.serve.Token) {
		t.Fatalf("with --daemon-uid 65534 the listener received %q", got)
	}
	// The daemon of this uid is still talked to.
	d.ok(t, "server", "list")
}
