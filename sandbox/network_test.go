package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/proc"
)

// These tests run this test binary in real sandboxes as a network probe
// (netProbe below), with real bubblewrap, slirp4netns and nftables.

// netProbeEnv, set in a process's environment, makes this test binary a
// network probe: "tcp ADDR" dials ADDR, "unix NAME" the abstract unix
// socket NAME. It prints "connected" or the error and exits 0 or 1.
const netProbeEnv = "SANDBOX_NET_PROBE"

func netProbe(what string) int {
	network, addr, _ := strings.Cut(what, " ")
	if network == "unix" {
		addr = "@" + addr
	}
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	c.Close()
	fmt.Println("connected")
	return 0
}

// probeBinary returns this test binary, copied where the sandbox's user
// (cred, if set) can read it.
func probeBinary(t *testing.T, cred *syscall.Credential) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if cred == nil {
		return self
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// nobodyRuntime returns a Runtime that runs sandboxes as nobody, with
// its state where nobody can reach it; it skips unless the test runs as
// root.
func nobodyRuntime(t *testing.T) *Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a sandbox as another user needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	state := t.TempDir()
	os.Chmod(state, 0o755)
	os.Chmod(filepath.Dir(state), 0o755)
	// bwrap itself runs as nobody, in a user namespace, as under an
	// ordinary user's serve (a root one runs bwrap as root).
	rt := &Runtime{StateDir: state, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, asUser: true}
	if _, err := rt.Probe(context.Background()); err != nil {
		t.Fatalf("bubblewrap as nobody: %v", err)
	}
	return rt
}

// probe runs the network probe in a sandbox of rt with the network n and
// returns what it printed. It fails no test itself, so that it can run on
// a testNetns's thread; Prepare's error is returned as it is.
func probe(t *testing.T, rt *Runtime, n *sb.SandboxNetwork, what string) (string, error) {
	t.Helper()
	p, _ := Resolve(&sb.SandboxConfig{Network: n, Workspace: sb.WorkspaceIsolated}, false)
	l, err := rt.Prepare(context.Background(), p, Command{Path: probeBinary(t, rt.Credential)},
		Env(func(string) string { return "" }, map[string]string{netProbeEnv: what}))
	if err != nil {
		return "", err
	}
	defer l.Cleanup()
	cmd := l.Cmd()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, l.Stderr(&errOut)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	if err := l.Started(); err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		return "", fmt.Errorf("Started: %w; stderr %s", err, errOut.String())
	}
	slirp := 0
	if l.net.slirp != nil {
		slirp = l.net.slirp.Pid
	}
	cmd.Wait()
	l.AwaitGone(time.Second)
	l.Cleanup()
	if slirp != 0 && syscall.Kill(slirp, 0) == nil {
		t.Errorf("slirp4netns (pid %d) outlived its sandbox", slirp)
	}
	if out.Len() == 0 {
		return "", fmt.Errorf("the probe printed nothing; stderr %s", errOut.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// listen opens a TCP listener that counts the connections it accepts.
func listen(t *testing.T, addr string) (net.Listener, chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan struct{}, 16)
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
	return ln, accepted
}

// netHolderEnv, set to a state directory, makes this test binary stand
// for a Switchboard that holds one sandbox with network on: it starts
// one, prints "SLIRP_PID BWRAP_PID" and waits on stdin to be killed.
const netHolderEnv = "SANDBOX_NET_HOLDER"

func netHolder(state string) int {
	rt := &Runtime{StateDir: state}
	p, _ := Resolve(&sb.SandboxConfig{Workspace: sb.WorkspaceIsolated}, false)
	l, err := rt.Prepare(context.Background(), p, Command{Path: "/bin/sleep", Args: []string{"300"}}, nil)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	cmd := l.Cmd()
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	if err := l.Started(); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println(l.net.slirp.Pid, cmd.Process.Pid)
	os.Stdin.Read(make([]byte, 1))
	return 0
}

// TestSlirp4netnsDoesNotOutliveAKilledSwitchboard: a Switchboard killed
// with SIGKILL runs no Cleanup; slirp4netns must go anyway (its exit fd
// closes), and so does the sandbox (bwrap --die-with-parent).
func TestSlirp4netnsDoesNotOutliveAKilledSwitchboard(t *testing.T) {
	requireBwrap(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(self)
	holder.Env = append(os.Environ(), netHolderEnv+"="+t.TempDir())
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	var slirp, bwrap int
	n, err := fmt.Fscan(out, &slirp, &bwrap)
	if n != 2 {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("the holder did not start its sandbox: %v", err)
	}
	if !proc.Alive(slirp) || !proc.Alive(bwrap) {
		t.Fatalf("slirp4netns (%d) or bwrap (%d) is not running", slirp, bwrap)
	}
	holder.Process.Kill()
	holder.Wait()
	proc.WaitWhile(30*time.Second, func() bool { return proc.Alive(slirp) || proc.Alive(bwrap) })
	for what, pid := range map[string]int{"slirp4netns": slirp, "bwrap": bwrap} {
		if proc.Alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s (pid %d) outlived the Switchboard that started it", what, pid)
		}
	}
}

// awaitAccept waits for the accept of a connection the probe made. A
// connect that returned has completed its handshake, so the accept comes;
// the bound only turns a mistake in the test into a failure, not a hang.
func awaitAccept(t *testing.T, accepted chan struct{}) {
	t.Helper()
	select {
	case <-accepted:
	case <-time.After(time.Minute):
		t.Fatal("a connection the probe made was never accepted")
	}
}

// TestNetworkOnDoesNotReachTheHostsLoopbackOrAbstractSockets: network on
// used to share the host's network namespace, and with it every service
// on the host's 127.0.0.1 and every abstract unix socket (X11's, D-Bus's
// on a desktop). With network off, as before, neither is reachable.
func TestNetworkOnDoesNotReachTheHostsLoopbackOrAbstractSockets(t *testing.T) {
	rt := requireBwrap(t)
	ln, accepted := listen(t, "127.0.0.1:0")
	name := fmt.Sprintf("switchboard-test-%d", os.Getpid())
	abstract, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer abstract.Close()
	// The probes work where nothing is in the way.
	if netProbe("tcp "+ln.Addr().String()) != 0 || netProbe("unix "+name) != 0 {
		t.Fatal("the probe cannot reach the listeners from the host")
	}
	awaitAccept(t, accepted)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, n := range []*sb.SandboxNetwork{nil, {Off: true}} {
		for _, what := range []string{"tcp " + ln.Addr().String(), "tcp 10.0.2.2:" + port, "unix " + name} {
			out, err := probe(t, rt, n, what)
			if err != nil {
				t.Fatal(err)
			}
			if out == "connected" {
				t.Errorf("network %+v: the sandbox reached the host's %s", n, what)
			}
		}
	}
	select {
	case <-accepted:
		t.Error("the host's loopback listener accepted a connection from a sandbox")
	default:
	}
}

func TestMissingSlirp4netnsSaysWhatToInstall(t *testing.T) {
	rt := requireBwrap(t)
	rt.Slirp4netns = filepath.Join(t.TempDir(), "slirp4netns")
	p, _ := Resolve(&sb.SandboxConfig{Workspace: sb.WorkspaceIsolated}, false)
	_, err := rt.Prepare(context.Background(), p, Command{Path: "/bin/true"}, nil)
	var u *UnavailableError
	if !errors.As(err, &u) || !strings.Contains(u.Reason, "apt-get install slirp4netns") || !strings.Contains(u.Reason, `"network": false`) {
		t.Fatalf("Prepare = %v; want an *UnavailableError naming the package and the way out", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(rt.StateDir, "workspaces", "isolated")); len(entries) != 0 {
		t.Errorf("the failed launch left its isolated workspace: %v", entries)
	}
	// Network off needs no helper.
	p, _ = Resolve(&sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}, Workspace: sb.WorkspaceIsolated}, false)
	l, err := rt.Prepare(context.Background(), p, Command{Path: "/bin/true"}, nil)
	if err != nil {
		t.Fatalf("network off: %v", err)
	}
	l.Cleanup()
}

// testNetns is a network namespace of the test's own, entered by one
// locked thread: what that thread starts runs in it, and the sockets it
// opens are its. It has an interface with two addresses of its own,
// 10.213.0.1 and 10.214.0.1, and a mount namespace whose /etc/resolv.conf
// names a DNS server the test runs at 10.213.0.1: slirp4netns, running
// there, forwards the sandbox's DNS to it.
type testNetns struct {
	do   chan func()
	done chan struct{}
}

const (
	netnsA = "10.213.0.1"
	netnsB = "10.214.0.1"
)

// newTestNetns creates the namespace; it skips unless the test runs as
// root. The namespace goes with its thread and its last socket.
func newTestNetns(t *testing.T) *testNetns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a network namespace needs root")
	}
	ns := &testNetns{do: make(chan func()), done: make(chan struct{})}
	ready := make(chan error)
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(resolv, []byte("nameserver "+netnsA+"\n"), 0o644)
	go func() {
		defer close(ns.done)
		// Never unlocked: the thread ends with the goroutine, and its
		// namespaces with it.
		runtime.LockOSThread()
		err := unix.Unshare(unix.CLONE_NEWNET | unix.CLONE_NEWNS)
		if err == nil {
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		}
		if err == nil {
			err = unix.Mount(resolv, "/etc/resolv.conf", "", unix.MS_BIND, "")
		}
		if err == nil {
			// A dummy interface where the kernel has the module, else a
			// bridge without ports: either holds addresses of its own.
			if exec.Command("ip", "link", "add", "sbtest0", "type", "dummy").Run() != nil {
				if out, e := exec.Command("ip", "link", "add", "sbtest0", "type", "bridge").CombinedOutput(); e != nil {
					err = fmt.Errorf("ip link add sbtest0 type bridge: %v: %s", e, out)
				}
			}
		}
		for _, args := range [][]string{
			{"link", "set", "lo", "up"},
			{"addr", "add", netnsA + "/24", "dev", "sbtest0"},
			{"addr", "add", netnsB + "/24", "dev", "sbtest0"},
			{"link", "set", "sbtest0", "up"},
		} {
			if err == nil {
				if out, e := exec.Command("ip", args...).CombinedOutput(); e != nil {
					err = fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), e, out)
				}
			}
		}
		ready <- err
		if err != nil {
			return
		}
		for f := range ns.do {
			f()
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("creating the test's network namespace: %v", err)
	}
	t.Cleanup(func() {
		close(ns.do)
		<-ns.done
	})
	return ns
}

// run runs f on the namespace's thread.
func (ns *testNetns) run(f func()) {
	done := make(chan struct{})
	ns.do <- func() { defer close(done); f() }
	<-done
}

// serveDNS answers every A query on conn with addr, until conn closes.
func serveDNS(conn net.PacketConn, addr net.IP) {
	buf := make([]byte, 512)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if n < 12 {
			continue
		}
		// The question ends after its name (labels to a zero byte) and
		// four bytes of type and class.
		end := 12
		for end < n && buf[end] != 0 {
			end += int(buf[end]) + 1
		}
		end += 5
		if end > n {
			continue
		}
		q := buf[12:end]
		qtype := binary.BigEndian.Uint16(q[len(q)-4:])
		resp := append([]byte(nil), buf[:2]...)
		answers := uint16(0)
		if qtype == 1 {
			answers = 1
		}
		resp = binary.BigEndian.AppendUint16(resp, 0x8180) // a response, recursion available, no error
		resp = binary.BigEndian.AppendUint16(resp, 1)
		resp = binary.BigEndian.AppendUint16(resp, answers)
		resp = append(resp, 0, 0, 0, 0)
		resp = append(resp, q...)
		if answers == 1 {
			resp = append(resp, 0xc0, 12) // the name, by pointer to the question's
			resp = binary.BigEndian.AppendUint16(resp, 1)
			resp = binary.BigEndian.AppendUint16(resp, 1)
			resp = binary.BigEndian.AppendUint32(resp, 60)
			resp = binary.BigEndian.AppendUint16(resp, 4)
			resp = append(resp, addr.To4()...)
		}
		conn.WriteTo(resp, from)
	}
}

// TestNetworkOnReachesOutsideWithDNS: with network on, a sandbox reaches
// an address outside it (the test namespace's own, as the internet would
// be) and resolves names through slirp4netns's DNS forwarder, which asks
// the nameserver of the host's resolv.conf.
func TestNetworkOnReachesOutsideWithDNS(t *testing.T) {
	requireBwrap(t)
	ns := newTestNetns(t)
	for _, tc := range []struct {
		name string
		rt   func(t *testing.T) *Runtime
	}{
		{"as Switchboard's user (as root: bwrap as root, the server as the sandbox user)", func(t *testing.T) *Runtime { return &Runtime{StateDir: t.TempDir()} }},
		{"as nobody, in a user namespace", nobodyRuntime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := tc.rt(t)
			var accepted chan struct{}
			var port string
			ns.run(func() {
				var ln net.Listener
				ln, accepted = listen(t, netnsA+":0")
				_, port, _ = net.SplitHostPort(ln.Addr().String())
				dns, err := net.ListenPacket("udp", netnsA+":53")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dns.Close() })
				go serveDNS(dns, net.ParseIP(netnsA))
			})
			for _, target := range []string{netnsA + ":" + port, "outside.test:" + port} {
				var out string
				var err error
				ns.run(func() { out, err = probe(t, rt, nil, "tcp "+target) })
				if err != nil || out != "connected" {
					t.Errorf("with network on, dialling %s: %s %v", target, out, err)
					continue
				}
				awaitAccept(t, accepted)
			}
		})
	}
}

// TestNetworkAllowlistLetsThroughOnlyWhatItNames: inside the test's own
// namespace, of two listeners on two addresses (and two ports), only the
// ones the allowlist names are reached; a host name is resolved when the
// sandbox is created. Both ways of entering the namespace are tried: as
// root, and as nobody through the user namespace that owns it.
func TestNetworkAllowlistLetsThroughOnlyWhatItNames(t *testing.T) {
	requireBwrap(t)
	ns := newTestNetns(t)
	var lnA, lnA2, lnB, lnB2 net.Listener
	var accA, accA2, accB, accB2 chan struct{}
	ns.run(func() {
		lnA, accA = listen(t, netnsA+":0")
		lnA2, accA2 = listen(t, netnsA+":0")
		lnB, accB = listen(t, netnsB+":0")
		lnB2, accB2 = listen(t, netnsB+":0")
		// Nothing but the rules stands in the way.
		for _, ln := range []net.Listener{lnA, lnA2, lnB, lnB2} {
			if netProbe("tcp "+ln.Addr().String()) != 0 {
				t.Fatalf("%s cannot be reached in the test's namespace", ln.Addr())
			}
		}
	})
	for _, acc := range []chan struct{}{accA, accA2, accB, accB2} {
		awaitAccept(t, acc)
	}
	// Switchboard resolves the allowlist's names with its own resolver:
	// here one that asks a DNS server of the test's on the host.
	dns, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	go serveDNS(dns, net.ParseIP(netnsB))
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns.LocalAddr().String())
	}}
	_, portA, _ := net.SplitHostPort(lnA.Addr().String())
	_, portB, _ := net.SplitHostPort(lnB.Addr().String())
	allow := &sb.SandboxNetwork{Allow: []string{netnsA + ":" + portA, "allowed.test:" + portB}}

	for _, tc := range []struct {
		name string
		rt   func(t *testing.T) *Runtime
	}{
		{"as Switchboard's user (as root: bwrap as root, the server as the sandbox user)", func(t *testing.T) *Runtime { return &Runtime{StateDir: t.TempDir()} }},
		{"as nobody, in a user namespace", nobodyRuntime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := tc.rt(t)
			rt.Resolver = resolver
			for _, c := range []struct {
				addr     net.Addr
				accepted chan struct{}
				allowed  bool
			}{
				{lnA.Addr(), accA, true},    // address and port listed
				{lnA2.Addr(), accA2, false}, // the address listed, another port
				{lnB.Addr(), accB, true},    // the host name's address and port
				{lnB2.Addr(), accB2, false}, // the host name's address, another port
			} {
				var out string
				var err error
				ns.run(func() { out, err = probe(t, rt, allow, "tcp "+c.addr.String()) })
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %s", c.addr, out)
				if got := out == "connected"; got != c.allowed {
					t.Errorf("%s: the probe said %q; want allowed %v", c.addr, out, c.allowed)
				}
				if out == "connected" {
					awaitAccept(t, c.accepted)
				}
			}
			// Not the host's either, through slirp4netns's address of it.
			var out string
			ns.run(func() { out, _ = probe(t, rt, allow, "tcp 10.0.2.2:"+portA) })
			if out == "connected" {
				t.Error("10.0.2.2 is not on the allowlist and was reached")
			}
			p, _ := Resolve(&sb.SandboxConfig{Network: allow}, false)
			var n *network
			ns.run(func() { n, err = rt.networkFor(context.Background(), p, rt.Credential) })
			if err != nil {
				t.Fatalf("networkFor: %v", err)
			}
			want := []string{netnsA + ":" + portA, "allowed.test:" + portB + " = " + netnsB}
			if strings.Join(n.allowed, "|") != strings.Join(want, "|") {
				t.Errorf("the view's allowlist as enforced: %q, want %q", n.allowed, want)
			}
		})
	}
	for _, acc := range []chan struct{}{accA2, accB2} {
		select {
		case <-acc:
			t.Error("a listener the allowlist does not name accepted a connection")
		default:
		}
	}
}

// BenchmarkSandboxStart measures one sandbox from Prepare to Cleanup
// around /bin/true, with network off, on (slirp4netns attached) and on
// with a one-entry allowlist (nftables loaded too): what the network adds
// to a server's start.
func BenchmarkSandboxStart(b *testing.B) {
	rt := &Runtime{StateDir: b.TempDir()}
	if _, err := rt.Probe(context.Background()); err != nil {
		b.Skipf("bubblewrap does not work here: %v", err)
	}
	for _, bc := range []struct {
		name string
		n    *sb.SandboxNetwork
	}{
		{"network=off", &sb.SandboxNetwork{Off: true}},
		{"network=on", nil},
		{"network=allowlist", &sb.SandboxNetwork{Allow: []string{"192.0.2.1:443"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p, _ := Resolve(&sb.SandboxConfig{Network: bc.n}, false)
			p.Server = "bench" // a workspace of its own, kept across the loop, as a server's is
			for b.Loop() {
				l, err := rt.Prepare(context.Background(), p, Command{Path: "/bin/true"}, nil)
				if err != nil {
					b.Fatal(err)
				}
				cmd := l.Cmd()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				if err := l.Started(); err != nil {
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					cmd.Wait()
					b.Fatal(err)
				}
				cmd.Wait()
				l.Cleanup()
			}
		})
	}
}
