package upstream_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/proc"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/sandbox"
	"github.com/switchboard-mcp/switchboard/sandbox/sandboxtest"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// These tests run the test server in real bubblewrap sandboxes and try,
// from inside, what a sandbox must prevent. They need bwrap (installed by
// scripts/sandbox-setup.sh, which scripts/test.sh sources): without it they
// skip, unless SWITCHBOARD_SANDBOX_REQUIRED is set, as the test script
// sets it, when they fail.

// sandboxRuntime is sandboxtest.Runtime: bubblewrap that works, or a skip.
func sandboxRuntime(t *testing.T) *sandbox.Runtime { return sandboxtest.Runtime(t) }

// sandboxed returns the test server's config with a required sandbox.
func sandboxed(t *testing.T, box *sb.SandboxConfig, args ...string) *sb.ServerConfig {
	cfg := stdioConfig(t, args...)
	cfg.Env = map[string]string{testserver.ProbesEnv: "1"}
	if box == nil {
		box = &sb.SandboxConfig{}
	}
	box.Enabled = new(true)
	cfg.Sandbox = box
	cfg.Retry = &sb.RetryConfig{MaxAttempts: 1, SlowRetryMS: 60_000}
	return cfg
}

// startSandboxed starts a sandboxed session and waits for it to connect.
func startSandboxed(t *testing.T, rt *sandbox.Runtime, cfg *sb.ServerConfig) *upstream.Session {
	t.Helper()
	s, _ := newSession(t, cfg, &upstream.Options{Sandbox: rt, HealthInterval: -1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v; logs:\n%s", err, strings.Join(s.Logs(), "\n"))
	}
	return s
}

// call calls a probe tool and returns its text and whether it reported an
// error; a failure of the call itself fails the test.
func call(t *testing.T, s *upstream.Session, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := s.CallTool(context.Background(), tool, args, sb.InvokeOptions{})
	var te *upstream.ToolError
	switch {
	case errors.As(err, &te):
		res = te.Result
	case err != nil:
		t.Fatalf("%s: %v", tool, err)
	}
	text := ""
	for _, c := range res.MustDecode().Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return text, res.IsError
}

func TestSandboxedServerCannotWriteOutsideItsWorkspace(t *testing.T) {
	rt := sandboxRuntime(t)
	outside := t.TempDir()
	s := startSandboxed(t, rt, sandboxed(t, nil))
	info := s.Info().Sandbox
	if info == nil || !info.Enabled || info.WorkspaceMode != sb.WorkspacePerServer || !strings.HasPrefix(info.Workspace, rt.StateDir) {
		t.Fatalf("runtime sandbox view %+v; want enabled, a workspace of the server's own under %s", info, rt.StateDir)
	}
	for _, path := range []string{
		filepath.Join(outside, "escaped"), // a host directory nobody mounted
		"/usr/escaped",                    // a system directory, read-only
		"/etc/escaped",
		"/escaped", // the sandbox's root
	} {
		if text, isErr := call(t, s, "write_file", map[string]any{"path": path, "text": "x"}); !isErr {
			t.Errorf("writing %s inside the sandbox succeeded (%q)", path, text)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); !os.IsNotExist(err) {
		t.Errorf("the host directory got a file from the sandbox: %v", err)
	}
	// The workspace is writable, and is the host directory the view names.
	if text, isErr := call(t, s, "write_file", map[string]any{"path": sb.SandboxWorkspacePath + "/kept", "text": "hello"}); isErr {
		t.Fatalf("writing the workspace failed: %s", text)
	}
	if b, err := os.ReadFile(filepath.Join(info.Workspace, "kept")); err != nil || string(b) != "hello" {
		t.Errorf("the workspace file on the host: %q, %v", b, err)
	}
	// /tmp is the sandbox's own.
	if text, isErr := call(t, s, "write_file", map[string]any{"path": "/tmp/private-" + t.Name(), "text": "x"}); isErr {
		t.Errorf("writing /tmp in the sandbox failed: %s", text)
	}
	if _, err := os.Stat("/tmp/private-" + t.Name()); !os.IsNotExist(err) {
		t.Errorf("the sandbox's /tmp is the host's: %v", err)
	}
}

func TestSandboxedServerCannotReadAHostPathThatIsNotMounted(t *testing.T) {
	rt := sandboxRuntime(t)
	home := t.TempDir() // stands for the user's home
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	os.MkdirAll(filepath.Dir(secret), 0o700)
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The user's own files, which the servers may read once mounted (as
	// root, the servers run as the sandbox user, and the files are its).
	sandboxtest.GiveToServers(t, rt, home)
	s := startSandboxed(t, rt, sandboxed(t, nil))
	if text, isErr := call(t, s, "read_file", map[string]any{"path": secret}); !isErr || strings.Contains(text, "PRIVATE") {
		t.Fatalf("the sandboxed server read %s: %q", secret, text)
	}
	for _, hidden := range []string{"/root", "/home", "/etc/shadow", "/var"} {
		if text, isErr := call(t, s, "read_file", map[string]any{"path": hidden}); !isErr {
			t.Errorf("%s is visible in the sandbox (%q)", hidden, text)
		}
	}

	// Mounted read-only, it can be read and not written.
	s2 := startSandboxed(t, rt, sandboxed(t, &sb.SandboxConfig{Mounts: []sb.Mount{{Host: home}}}))
	if text, isErr := call(t, s2, "read_file", map[string]any{"path": secret}); isErr || text != "PRIVATE KEY" {
		t.Errorf("reading a mounted file: %q (error %v)", text, isErr)
	}
	if _, isErr := call(t, s2, "write_file", map[string]any{"path": filepath.Join(home, "new"), "text": "x"}); !isErr {
		t.Error("writing a read-only mount succeeded")
	}
	// Mounted read-write, it can be written.
	s3 := startSandboxed(t, rt, sandboxed(t, &sb.SandboxConfig{Mounts: []sb.Mount{{Host: home, Path: "/data", Mode: sb.MountReadWrite}}}))
	if text, isErr := call(t, s3, "write_file", map[string]any{"path": "/data/new", "text": "rw"}); isErr {
		t.Fatalf("writing a read-write mount: %s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "new")); string(b) != "rw" {
		t.Errorf("the host file written through the mount holds %q", b)
	}
}

// TestSandboxedServerCannotReachAHostLoopbackListener: with network off
// the sandbox has only a loopback of its own; with network on it has a
// network namespace of its own too, with user-mode networking that does
// not lead to the host's loopback, where Switchboard's own API and every
// local service listen. (Before, network on shared the host's namespace.)
func TestSandboxedServerCannotReachAHostLoopbackListener(t *testing.T) {
	rt := sandboxRuntime(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)

	off := startSandboxed(t, rt, sandboxed(t, &sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}}))
	if text, isErr := call(t, off, "dial", map[string]any{"address": addr}); !isErr {
		t.Errorf("with network off the server reached %s: %q", addr, text)
	}
	if v := off.Info().Sandbox; v == nil || v.Network {
		t.Errorf("view %+v; want network false", v)
	}

	on := startSandboxed(t, rt, sandboxed(t, &sb.SandboxConfig{Network: &sb.SandboxNetwork{}}))
	if v := on.Info().Sandbox; v == nil || !v.Network {
		t.Errorf("view %+v; want network true", v)
	}
	// 10.0.2.2 is slirp4netns's address of the host, which without
	// --disable-host-loopback would be the host's 127.0.0.1.
	for _, a := range []string{addr, net.JoinHostPort("10.0.2.2", port)} {
		if text, isErr := call(t, on, "dial", map[string]any{"address": a}); !isErr {
			t.Errorf("with network on the server reached the host's loopback at %s: %q", a, text)
		}
	}
	select {
	case <-accepted:
		t.Error("the host's loopback listener accepted a connection from a sandbox")
	default:
	}
}

// descendants returns the live processes below pid, found by their
// parents: the sandbox's init, the server, its grandchild.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[0] != "Z" {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// treeOf waits until the sandboxed server's tree under pid has at least
// n live processes and returns them, pid first.
func treeOf(t *testing.T, pid, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := descendants(pid)
		if len(d) >= n {
			return append([]int{pid}, d...)
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d has %d descendants %v, want %d", pid, len(d), d, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func awaitDead(t *testing.T, what string, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var alive []int
		for _, p := range pids {
			if proc.Alive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range alive {
				syscall.Kill(p, syscall.SIGKILL) // a test leaves no process behind
			}
			t.Fatalf("%s: processes %v of the sandbox %v are still alive", what, alive, pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSandboxedServerTreeIsKilledOnShutdown(t *testing.T) {
	rt := sandboxRuntime(t)
	s := startSandboxed(t, rt, sandboxed(t, nil, "-spawn-child"))
	// bwrap, the sandbox's init, the server, its "sleep 300".
	tree := treeOf(t, s.Info().PID, 3)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	awaitDead(t, "after Shutdown", tree)
}

func TestSandboxedServerTreeDiesWithItsFirstProcess(t *testing.T) {
	rt := sandboxRuntime(t)
	cfg := sandboxed(t, nil, "-spawn-child")
	cfg.Retry = &sb.RetryConfig{MaxAttempts: 4, DelaysMS: []int64{50}}
	s := startSandboxed(t, rt, cfg)
	first := s.Info().PID
	tree := treeOf(t, first, 3)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	awaitDead(t, "after kill -9 of bwrap", tree)
	// The session reconnects, in a new sandbox.
	info := waitFor(t, s, "a reconnect", func(i sb.RuntimeInfo) bool {
		return i.Status == sb.StatusConnected && i.PID != 0 && i.PID != first
	})
	if info.Sandbox == nil || !info.Sandbox.Enabled {
		t.Errorf("the reconnected server runs without its sandbox: %+v", info.Sandbox)
	}
}

func TestSandboxedServerHittingItsMemoryLimitSaysSo(t *testing.T) {
	rt := sandboxRuntime(t)
	s := startSandboxed(t, rt, sandboxed(t, &sb.SandboxConfig{MemoryMB: 256}))
	if v := s.Info().Sandbox; v.Limits == sandbox.LimitsNone {
		t.Fatalf("no limit applied: %+v", v)
	}
	_, err := s.CallTool(context.Background(), "alloc", map[string]any{"mb": 1024}, sb.InvokeOptions{})
	if err == nil {
		t.Fatal("allocating 1 GB under a 256 MB limit succeeded")
	}
	info := waitFor(t, s, "the drop", func(i sb.RuntimeInfo) bool { return i.LastDrop != nil })
	d := info.LastDrop
	if d.Code != sb.CodeMemoryLimit || d.Phase != sb.PhaseRuntime || !strings.Contains(d.Message, "memory limit of 256 MB") ||
		!strings.Contains(d.Message, "sandbox.memory_mb") {
		t.Fatalf("last drop %+v; want code memory_limit, phase runtime, a message naming the 256 MB limit and sandbox.memory_mb; logs:\n%s", d, strings.Join(s.Logs(), "\n"))
	}
	t.Logf("memory limit: %s", d.Message)
}

func TestSandboxedServerUsingUpItsCPUTimeSaysSo(t *testing.T) {
	rt := sandboxRuntime(t)
	s := startSandboxed(t, rt, sandboxed(t, &sb.SandboxConfig{CPUSeconds: 1}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.CallTool(ctx, "spin", map[string]any{"ms": 20_000}, sb.InvokeOptions{}); err == nil {
		t.Fatal("spinning for 20 s of CPU under a 1 s limit succeeded")
	}
	info := waitFor(t, s, "the drop", func(i sb.RuntimeInfo) bool { return i.LastDrop != nil })
	if d := info.LastDrop; d.Code != sb.CodeCPULimit || !strings.Contains(d.Message, "sandbox.cpu_seconds") {
		t.Fatalf("last drop %+v; want code cpu_limit naming sandbox.cpu_seconds", d)
	}
}

// With bwrap missing, a server that asked for the sandbox fails with
// phase sandbox_unavailable, retried slowly, and never runs: not
// unsandboxed, not at all. A server that left it to the default runs
// unsandboxed and says so.
func TestWithoutBubblewrapNothingRunsUnsandboxed(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no bwrap on Switchboard's own PATH
	rt := &sandbox.Runtime{StateDir: t.TempDir()}
	events := filepath.Join(t.TempDir(), "events")
	cfg := sandboxed(t, nil, "-events", events)
	s, _ := newSession(t, cfg, &upstream.Options{Sandbox: rt})
	err := s.Start(context.Background())
	info := s.Info()
	e := info.Error
	if err == nil || e == nil || e.Phase != sb.PhaseSandboxUnavailable || e.Code != sb.CodeSandboxUnavailable ||
		!strings.Contains(e.Message, "apt-get install bubblewrap") || !strings.Contains(e.Message, `"enabled": false`) {
		t.Fatalf("Start = %v; error %+v; want phase sandbox_unavailable saying what to install and how to opt out", err, e)
	}
	if info.NextRetryAt == nil || time.Until(*info.NextRetryAt) < 30*time.Second {
		t.Errorf("next retry at %v: a missing bubblewrap must be retried slowly", info.NextRetryAt)
	}
	if _, err := os.Stat(events); !os.IsNotExist(err) {
		t.Fatalf("the server ran (its events file exists: %v)", err)
	}

	// The default profile ("enabled" unset) falls back, and the view says so.
	def := stdioConfig(t)
	def.Sandbox = &sb.SandboxConfig{}
	d, _ := newSession(t, def, &upstream.Options{Sandbox: rt})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := d.Info().Sandbox; v == nil || v.Enabled || !strings.Contains(v.Reason, "bubblewrap") {
		t.Errorf("view of a default-profile server without bubblewrap: %+v; want enabled false with the reason", v)
	}
}

func TestSandboxSetupFailureIsPhaseSandboxCreate(t *testing.T) {
	rt := sandboxRuntime(t)
	for _, tc := range []struct {
		name  string
		mount sb.Mount
	}{
		// Refused before bwrap runs.
		{"missing host path", sb.Mount{Host: filepath.Join(t.TempDir(), "absent")}},
		// Refused by bwrap: it cannot create a mount point in the read-only /usr.
		{"mount point in a read-only directory", sb.Mount{Host: t.TempDir(), Path: "/usr/switchboard-absent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSession(t, sandboxed(t, &sb.SandboxConfig{Mounts: []sb.Mount{tc.mount}}), &upstream.Options{Sandbox: rt})
			s.Start(context.Background())
			e := s.Info().Error
			if e == nil || e.Phase != sb.PhaseSandboxCreate || e.Code != sb.CodeSandboxCreate {
				t.Fatalf("error %+v; want phase sandbox_create", e)
			}
			t.Logf("message: %s", e.Message)
		})
	}
}

// A Switchboard running as root never runs a server as root (the
// sandbox's uid 0 would be the host's for everything checked by uid, not
// capability: /proc/sys, sysrq-trigger): by default it runs them as
// sandbox.DefaultUser, or nobody where that user does not exist, else as
// the user it is given. The server's workspace is that user's.
func TestSandboxedServerOfARootSwitchboardIsNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the root case needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	nobodyUID, _ := strconv.Atoi(nobody.Uid)
	nobodyGID, _ := strconv.Atoi(nobody.Gid)
	defaultUID := nobodyUID
	if u, err := user.Lookup(sandbox.DefaultUser); err == nil {
		defaultUID, _ = strconv.Atoi(u.Uid)
	}
	for _, tc := range []struct {
		name string
		cred *syscall.Credential
		want int
	}{
		{"by default", nil, defaultUID},
		{"as the user given", &syscall.Credential{Uid: uint32(nobodyUID), Gid: uint32(nobodyGID)}, nobodyUID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &sandbox.Runtime{StateDir: t.TempDir(), Credential: tc.cred}
			if _, err := rt.Probe(context.Background()); err != nil {
				t.Fatalf("bubblewrap: %v", err)
			}
			s := startSandboxed(t, rt, sandboxed(t, nil))
			if got := hostUID(t, sandboxServer(t, s.Info().PID)); got != tc.want {
				t.Errorf("the server runs as host uid %d, want %d", got, tc.want)
			}
			if text, isErr := call(t, s, "write_file", map[string]any{"path": sb.SandboxWorkspacePath + "/x", "text": "x"}); isErr {
				t.Errorf("the server cannot write its workspace: %s", text)
			}
			if fi, err := os.Stat(filepath.Join(s.Info().Sandbox.Workspace, "x")); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != tc.want {
				t.Errorf("the file the server wrote: %v, %v; want it owned by uid %d", fi, err, tc.want)
			}
			if u := s.Info().Sandbox.User; !strings.HasPrefix(u, "uid "+strconv.Itoa(tc.want)) {
				t.Errorf("the view says the server runs as %q, want uid %d", u, tc.want)
			}
		})
	}
}

// sandboxServer returns the host pid of the server in the sandbox that
// bwrap, pid, made: the first process below it that is not bwrap (bwrap
// forks an init of its own, pid 1 of the sandbox, which runs the server).
func sandboxServer(t *testing.T, pid int) int {
	queue := []int{pid}
	for range 16 {
		if len(queue) == 0 {
			break
		}
		p := queue[0]
		queue = queue[1:]
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm"); p != pid && strings.TrimSpace(string(comm)) != "bwrap" {
			return p
		}
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + strconv.Itoa(p) + "/children")
		for _, f := range strings.Fields(string(b)) {
			child, _ := strconv.Atoi(f)
			queue = append(queue, child)
		}
	}
	t.Fatalf("no server below bwrap (pid %d)", pid)
	return -1
}

// hostUID returns the real uid of pid as the host sees it.
func hostUID(t *testing.T, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(v)
			uid, _ := strconv.Atoi(f[0])
			return uid
		}
	}
	t.Fatal("no Uid line")
	return -1
}

// A configured cwd outside every mount is where the server runs, visible
// read-only: the config named it, and nothing more of the host.
func TestSandboxedServerRunsInItsCwdReadOnly(t *testing.T) {
	rt := sandboxRuntime(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "project.txt"), []byte("in cwd"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sandboxed(t, nil)
	cfg.Cwd = dir
	s := startSandboxed(t, rt, cfg)
	if text, isErr := call(t, s, "read_file", map[string]any{"path": "project.txt"}); isErr || text != "in cwd" {
		t.Errorf("reading a file of the cwd by a relative path: %q (error %v)", text, isErr)
	}
	if _, isErr := call(t, s, "write_file", map[string]any{"path": "new.txt", "text": "x"}); !isErr {
		t.Error("the cwd is writable without a rw mount")
	}
	sibling := filepath.Join(filepath.Dir(dir), "sibling.txt")
	if err := os.WriteFile(sibling, []byte("beside the cwd"), 0o644); err != nil {
		t.Fatal(err)
	}
	if text, isErr := call(t, s, "read_file", map[string]any{"path": sibling}); !isErr {
		t.Errorf("a file beside the cwd is visible: %q", text)
	}
}

// The rest of a session works unchanged inside: the stderr ring, health
// probes, a call's timeout and its cancellation, a restart.
func TestSessionFeaturesWorkInsideTheSandbox(t *testing.T) {
	rt := sandboxRuntime(t)
	s, _ := newSession(t, sandboxed(t, nil), &upstream.Options{Sandbox: rt, HealthInterval: 100 * time.Millisecond})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := s.Info().PID
	// The server writes its start line before it answers initialize, but
	// the stderr pipe is copied into the ring by a goroutine of its own,
	// which a loaded machine may run after the handshake: wait for it (at
	// most 30 s).
	logs := ""
	for range 3000 {
		if logs = strings.Join(s.Logs(), "\n"); strings.Contains(logs, "testserver: started") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs, "testserver: started") {
		t.Errorf("the stderr ring lacks the server's start line: %q", logs)
	}
	_, err := s.CallTool(context.Background(), "slow", map[string]any{"duration_ms": 10_000}, sb.InvokeOptions{Timeout: 300 * time.Millisecond})
	var te *upstream.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("a call past its timeout: %v; want a *TimeoutError", err)
	}
	time.Sleep(500 * time.Millisecond) // a few health probes
	if i := s.Info(); i.Status != sb.StatusConnected || i.PID != pid || i.Reconnects != 0 {
		t.Fatalf("after the timeout and the probes: status %s, pid %d (was %d), reconnects %d", i.Status, i.PID, pid, i.Reconnects)
	}
	if text, isErr := call(t, s, "echo", map[string]any{"text": "after"}); isErr || text != "after" {
		t.Errorf("echo after the cancelled call: %q", text)
	}
	s.Restart()
	i := waitFor(t, s, "the restart", func(i sb.RuntimeInfo) bool { return i.Status == sb.StatusConnected && i.PID != pid })
	if i.Sandbox == nil || !i.Sandbox.Enabled {
		t.Errorf("after a restart: sandbox %+v", i.Sandbox)
	}
	// The old sandbox is stopped within the stop sequence's bound (its
	// reaping may trail the new connection by a moment).
	for deadline := time.Now().Add(10 * time.Second); proc.Alive(pid) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if proc.Alive(pid) {
		t.Errorf("after a restart the old bwrap %d is still running", pid)
	}
}

// A sandboxed server that fails on a host path its sandbox does not show
// is told so: the error names the path and the flag that shows it. A
// command given as a path that is missing is not said to be missing from
// the sandbox's PATH.
func TestSandboxedSpawnFailingOnAHiddenPathNamesIt(t *testing.T) {
	rt := sandboxRuntime(t)
	dir := t.TempDir()
	helper := filepath.Join(dir, "lib", "helper.sh")
	run := filepath.Join(dir, "run.sh")
	if err := os.MkdirAll(filepath.Dir(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(helper, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The command itself is shown (bound at its own path); what it runs
	// next is not.
	if err := os.WriteFile(run, []byte("#!/bin/sh\nexec "+helper+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, command string
		want, not     []string
	}{
		{"hidden helper", run, []string{"exited with status 127", "the sandbox does not show " + helper, "--mount " + helper}, nil},
		{"missing absolute command", filepath.Join(dir, "absent"), []string{"no such file on this machine"}, []string{"PATH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &sb.ServerConfig{Name: "hidden", Transport: sb.TransportStdio, Command: tc.command,
				Sandbox: &sb.SandboxConfig{Enabled: new(true)}, Retry: &sb.RetryConfig{MaxAttempts: 1, SlowRetryMS: 60_000}}
			s, _ := newSession(t, cfg, &upstream.Options{Sandbox: rt, HealthInterval: -1})
			s.Start(context.Background())
			e := s.Info().Error
			if e == nil {
				t.Fatal("the server connected")
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not say %q", e.Message, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(e.Message, w) {
					t.Errorf("message %q says %q", e.Message, w)
				}
			}
			t.Logf("message: %s", e.Message)
		})
	}
}
