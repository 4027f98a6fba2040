package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file gives a sandbox with network on a network of its own. bwrap
// always makes the sandbox a network namespace (--unshare-all, never
// --share-net): sharing the host's would hand the server the host's
// loopback, where every local service listens (Switchboard's own API
// among them), and the host's abstract unix sockets, which belong to a
// network namespace and carry X11 and D-Bus on a desktop. Into the empty
// namespace, between bwrap reporting the sandbox's init and the server
// being let run (Launch.Started), slirp4netns attaches user-mode
// networking: a tap device inside whose packets it turns into ordinary
// sockets of its own on the host, and a DNS forwarder at 10.0.2.3. With
// --disable-host-loopback it refuses the one address (10.0.2.2) that
// would lead to the host's 127.0.0.1.
//
// slirp4netns rather than pasta (passt): it has the two flags this needs
// and pasta lacks, --exit-fd (it exits once Switchboard's end of a pipe
// closes, so it cannot outlive a Switchboard that was killed) and
// --disable-host-loopback (pasta maps the host's loopback in by default
// and copies the host's addresses and routes into the namespace); it is
// what rootless podman, buildkit and rootlesskit used for years, and
// Debian ships it as a small package of its own.
//
// An allowlist ("network": {"allow": [...]}) is an nftables ruleset in
// the sandbox's namespace, loaded before the server runs: an output chain
// that drops everything but the sandbox's loopback, DNS to the forwarder
// and the destinations listed, host names resolved here when the sandbox
// is created. The server cannot change it: it has no capability in the
// namespace. Switchboard loads it from outside (nsenter into the network
// namespace) when bwrap runs as root; bwrap run by another user owns a
// user namespace whose capabilities a process that joins it keeps only
// until it executes a program, so there the sandbox's first command loads
// the rules with the two capabilities bwrap was told to keep
// (CAP_NET_ADMIN, and CAP_SETPCAP to empty the bounding set), then drops
// every capability and executes the server.

// slirp4netns's network (its defaults: --cidr 10.0.2.0/24).
const (
	slirpDNS = "10.0.2.3"
	slirpTap = "tap0"
	slirpMTU = "65520" // the largest slirp4netns takes, for throughput
)

// ruleLoaderSays starts the line the sandbox's rule loader writes to
// stderr when the rules cannot be loaded (see SetupFailure).
const ruleLoaderSays = "switchboard sandbox: "

// resolveTimeout bounds the resolution of an allowlist's host names.
const resolveTimeout = 10 * time.Second

// network is the network of one launch.
type network struct {
	on      bool
	allowed []string // the allowlist as enforced, for the view
	rules   string   // the nftables ruleset; "" without an allowlist
	inside  bool     // the sandbox's first command loads rules (loader)

	slirpBin, nsenter, nft, setpriv string
	resolv                          string // host file bound at /etc/resolv.conf
	cred                            *syscall.Credential

	slirp *exec.Cmd // once attached
	exitW *os.File  // slirp4netns exits once this is closed
}

// networkFor prepares the network of a launch of p: it finds the helpers,
// resolves the allowlist's host names and builds its rules. The error is
// an *UnavailableError (a helper is missing) or a *CreateError.
func (rt *Runtime) networkFor(ctx context.Context, p Profile) (*network, error) {
	n := &network{on: p.Network, cred: rt.Credential}
	if !p.Network {
		return n, nil
	}
	name := rt.Slirp4netns
	if name == "" {
		name = "slirp4netns"
	}
	var err error
	if n.slirpBin, err = exec.LookPath(name); err != nil {
		return nil, &UnavailableError{Err: err, Reason: fmt.Sprintf(
			"slirp4netns (%s) is not installed or not on PATH, so this server's sandbox cannot have a network of its own: "+
				"install it (Debian, Ubuntu: apt-get install slirp4netns; Fedora: dnf install slirp4netns; "+
				"Arch: pacman -S slirp4netns; Alpine: apk add slirp4netns), "+
				`or turn the server's network off with "sandbox": {"network": false}`, name)}
	}
	if n.resolv, err = rt.resolvConf(); err != nil {
		return nil, &CreateError{Err: err, Reason: "writing the sandbox's resolv.conf: " + err.Error()}
	}
	if len(p.Allow) == 0 {
		return n, nil
	}
	n.inside = rt.bwrapUID() != 0
	tools := []struct {
		bin  *string
		name string
		pkg  string
		need bool
	}{
		{&n.nft, "nft", "nftables", true},
		{&n.nsenter, "nsenter", "util-linux", !n.inside},
		{&n.setpriv, "setpriv", "util-linux", n.inside},
	}
	for _, tool := range tools {
		if !tool.need {
			continue
		}
		if *tool.bin, err = lookTool(tool.name); err != nil {
			return nil, &UnavailableError{Err: err, Reason: fmt.Sprintf(
				"%s is not installed, and the sandbox's network allowlist needs it: install %s (apt-get install %s), "+
					`or drop the allowlist ("network": true)`, tool.name, tool.pkg, tool.pkg)}
		}
		if n.inside && !visible(*tool.bin, nil) {
			return nil, &CreateError{Reason: fmt.Sprintf("%s is at %s, outside the system directories, where the sandbox cannot run it "+
				"to load the network allowlist", tool.name, *tool.bin)}
		}
	}
	allow, err := rt.resolveAllow(ctx, p.Allow)
	if err != nil {
		return nil, err
	}
	n.rules, n.allowed = rules(allow)
	return n, nil
}

// lookTool finds a system tool on PATH or in the sbin directories, which
// an ordinary user's PATH often lacks.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// bwrapUID is the host uid bubblewrap runs as.
func (rt *Runtime) bwrapUID() int {
	if rt.Credential != nil {
		return int(rt.Credential.Uid)
	}
	return os.Geteuid()
}

// resolvedAllow is an allowlist entry with its host name resolved.
type resolvedAllow struct {
	entry    string
	prefixes []netip.Prefix
	port     uint16
}

// resolveAllow parses the allowlist and resolves its host names to their
// IPv4 addresses. A name that does not resolve fails the launch: the
// server would find the destination it was promised unreachable.
func (rt *Runtime) resolveAllow(ctx context.Context, entries []string) ([]resolvedAllow, error) {
	resolver := rt.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var out []resolvedAllow
	for _, e := range entries {
		a, err := sb.ParseNetworkAllow(e)
		if err != nil {
			return nil, &CreateError{Err: err, Reason: "the sandbox's network allowlist: " + err.Error()}
		}
		r := resolvedAllow{entry: a.String(), port: a.Port}
		if a.Host == "" {
			r.prefixes = []netip.Prefix{a.Prefix}
		} else {
			ips, err := resolver.LookupNetIP(ctx, "ip4", a.Host)
			if err != nil {
				return nil, &CreateError{Err: err, Reason: fmt.Sprintf("resolving %s of the sandbox's network allowlist: %v", a.Host, err)}
			}
			for _, ip := range ips {
				r.prefixes = append(r.prefixes, netip.PrefixFrom(ip.Unmap(), 32))
			}
			slices.SortFunc(r.prefixes, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
			r.prefixes = slices.Compact(r.prefixes)
		}
		out = append(out, r)
	}
	return out, nil
}

// rules returns the nftables ruleset that lets the sandbox reach only its
// loopback, the DNS forwarder and allow, and allow as the view shows it.
// A packet the chain drops on its way out fails the server's connect or
// send at once with EPERM, not after a timeout.
func rules(allow []resolvedAllow) (string, []string) {
	var b strings.Builder
	b.WriteString("table inet switchboard {\n\tchain output {\n\t\ttype filter hook output priority 0; policy drop;\n")
	b.WriteString("\t\toifname \"lo\" accept\n")
	fmt.Fprintf(&b, "\t\tip daddr %s meta l4proto { tcp, udp } th dport 53 accept\n", slirpDNS)
	var shown []string
	for _, a := range allow {
		addrs := make([]string, len(a.prefixes))
		for i, p := range a.prefixes {
			addrs[i] = p.String()
			if p.IsSingleIP() {
				addrs[i] = p.Addr().String()
			}
		}
		set := "{ " + strings.Join(addrs, ", ") + " }"
		if a.port == 0 {
			fmt.Fprintf(&b, "\t\tip daddr %s accept\n", set)
		} else {
			fmt.Fprintf(&b, "\t\tip daddr %s meta l4proto { tcp, udp } th dport %d accept\n", set, a.port)
		}
		s := a.entry
		if want := strings.Join(addrs, ", "); want != strings.SplitN(a.entry, ":", 2)[0] {
			s += " = " + want
		}
		shown = append(shown, s)
	}
	b.WriteString("\t}\n}\n")
	return b.String(), shown
}

// resolvConf returns the host file bound at /etc/resolv.conf in sandboxes
// with network: the host's, with its nameservers replaced by the DNS
// forwarder, since a nameserver on the host's loopback (systemd-resolved's
// 127.0.0.53) would be the sandbox's own.
func (rt *Runtime) resolvConf() (string, error) {
	rt.resolvOnce.Do(func() {
		state, err := rt.stateDir()
		if err != nil {
			rt.resolvErr = err
			return
		}
		dir := filepath.Join(state, "network")
		if err := rt.mkdir(dir); err != nil {
			rt.resolvErr = err
			return
		}
		host, _ := os.ReadFile("/etc/resolv.conf")
		var b bytes.Buffer
		for line := range strings.Lines(string(host)) {
			if f := strings.Fields(line); len(f) > 0 && (f[0] == "search" || f[0] == "domain" || f[0] == "options") {
				b.WriteString(strings.TrimSpace(line) + "\n")
			}
		}
		fmt.Fprintf(&b, "nameserver %s\n", slirpDNS)
		path := filepath.Join(dir, "resolv.conf")
		tmp := path + "." + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
			rt.resolvErr = err
			return
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			rt.resolvErr = err
			return
		}
		rt.resolvPath = path
	})
	return rt.resolvPath, rt.resolvErr
}

// args returns bwrap's arguments for the network, placed after the /etc
// binds.
func (n *network) args() []string {
	if !n.on {
		return nil
	}
	a := []string{"--ro-bind", n.resolv, "/etc/resolv.conf"}
	if n.rules != "" && n.inside {
		// After --cap-drop ALL: bwrap applies them in order.
		a = append(a, "--cap-add", "CAP_NET_ADMIN", "--cap-add", "CAP_SETPCAP")
	}
	return a
}

// wrapper returns what runs first in the sandbox when the sandbox loads
// its rules itself: a shell that loads them and executes the rest of the
// command line with no capability left; else nothing. The rules follow
// the script as $1; nothing of them is parsed by the shell.
func (n *network) wrapper() []string {
	if n.rules == "" || !n.inside {
		return nil
	}
	script := `printf '%s' "$1" | ` + n.nft + ` -f - || { echo "` + ruleLoaderSays +
		`the network allowlist could not be loaded (nft exited $?)" >&2; exit 125; }; shift; exec ` + n.setpriv +
		` --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"`
	return []string{"/bin/sh", "-c", script, "sh", n.rules}
}

// attach gives the sandbox whose init is pid its network: it starts
// slirp4netns on the sandbox's network namespace, waits until the
// interface is up, and loads the allowlist from outside when Switchboard
// may. On an error the server must not run.
func (n *network) attach(pid int) error {
	if !n.on {
		return nil
	}
	if err := awaitLoopback(pid, time.Now().Add(startTimeout)); err != nil {
		return err
	}
	nsDir := "/proc/" + strconv.Itoa(pid) + "/ns/"
	args := []string{"--configure", "--mtu=" + slirpMTU, "--disable-host-loopback",
		"--ready-fd=3", "--exit-fd=4", "--netns-type=path"}
	var cred *syscall.Credential
	if ownUserNS(pid) {
		// A namespace of bwrap's user's: slirp4netns joins the user
		// namespace first, for the right to enter the network one, as
		// that user.
		args = append(args, "--userns-path="+nsDir+"user")
		cred = n.cred
	}
	args = append(args, nsDir+"net", slirpTap)

	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("creating slirp4netns's pipes: %w", err)
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return fmt.Errorf("creating slirp4netns's pipes: %w", err)
	}
	// Its stderr goes to a file no one else can open: a pipe would need a
	// reader for as long as it runs.
	stderr, err := os.CreateTemp("", "switchboard-slirp4netns-")
	if err == nil {
		os.Remove(stderr.Name())
		defer stderr.Close()
	}
	cmd := &exec.Cmd{
		Path:       n.slirpBin,
		Args:       append([]string{n.slirpBin}, args...),
		Env:        []string{"PATH=" + defaultPath},
		ExtraFiles: []*os.File{readyW, exitR}, // fds 3 and 4
		// Pdeathsig as a second guard beside --exit-fd.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred},
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	err = cmd.Start()
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		return fmt.Errorf("starting slirp4netns (%s): %w", n.slirpBin, err)
	}
	n.slirp, n.exitW = cmd, exitW

	readyR.SetReadDeadline(time.Now().Add(startTimeout))
	buf := make([]byte, 1)
	if _, err := io.ReadFull(readyR, buf); err != nil {
		n.stop()
		said := ""
		if stderr != nil {
			stderr.Seek(0, io.SeekStart)
			b, _ := io.ReadAll(io.LimitReader(stderr, 4<<10))
			said = said3(string(b))
		}
		if said == "" {
			said = err.Error()
		}
		return fmt.Errorf("slirp4netns could not give the sandbox its network: %s%s", said, tunHint(said))
	}
	if n.rules != "" && !n.inside {
		if err := n.loadRules(pid); err != nil {
			n.stop()
			return err
		}
	}
	return nil
}

// awaitLoopback waits until bwrap has brought up the sandbox's loopback.
// bwrap reports the sandbox's init before its child has set up the
// namespace, and sets up the loopback over netlink there: slirp4netns
// configuring the same namespace at the same time made one of them fail
// (bwrap: "loopback: Failed RTM_NEWADDR"), one start in a few. The
// kernel puts 127.0.0.1 in the namespace's local routing table once the
// address is there and the link is up, the last step of bwrap's.
func awaitLoopback(pid int, deadline time.Time) error {
	fib := "/proc/" + strconv.Itoa(pid) + "/net/fib_trie"
	for wait := 200 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		b, err := os.ReadFile(fib)
		switch {
		case err != nil:
			return fmt.Errorf("bubblewrap exited before setting up the sandbox's network: %w", err)
		case bytes.Contains(b, []byte("127.0.0.1")):
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("bubblewrap did not bring up the sandbox's loopback within %s", startTimeout)
		}
		time.Sleep(wait)
	}
}

// loadRules loads the allowlist into the network namespace of pid from
// outside, as root.
func (n *network) loadRules(pid int) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.nsenter, "-t", strconv.Itoa(pid), "-n", n.nft, "-f", "-")
	cmd.Env = []string{"PATH=" + defaultPath}
	cmd.Stdin = strings.NewReader(n.rules)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		said := lastLine(out.String())
		if said == "" {
			said = err.Error()
		}
		return fmt.Errorf("loading the sandbox's network allowlist: %s", said)
	}
	return nil
}

// tunHint says what to change when slirp4netns cannot open the tun
// device: distributions ship it readable and writable by everyone, some
// containers do not.
func tunHint(said string) string {
	if !strings.Contains(said, "/dev/net/tun") {
		return ""
	}
	return " (slirp4netns opens /dev/net/tun as the sandbox's user: it must exist and be mode 0666, as distributions ship it; " +
		"in a container, pass it in, e.g. docker run --device /dev/net/tun)"
}

// ownUserNS reports whether pid is in a user namespace other than this
// process's.
func ownUserNS(pid int) bool {
	theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/user")
	ours, err2 := os.Readlink("/proc/self/ns/user")
	return err == nil && err2 == nil && theirs != ours
}

// stop ends slirp4netns and reaps it. The sandbox's network goes with it.
func (n *network) stop() {
	if n == nil || n.slirp == nil {
		return
	}
	n.exitW.Close()
	n.slirp.Process.Kill()
	n.slirp.Wait()
	n.slirp, n.exitW = nil, nil
}

// said3 returns the first three non-empty lines of s, joined: slirp4netns
// says what failed first and "child failed" after it.
func said3(s string) string {
	var lines []string
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" && len(lines) < 3 {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "; ")
}

// lastLine returns the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}
