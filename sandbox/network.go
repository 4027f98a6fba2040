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

	"golang.org/x/sys/unix"

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
// the sandbox's namespace, loaded from outside (nsenter, nft) before the
// server runs: an output chain that drops everything but the sandbox's
// loopback, DNS to the forwarder and the destinations listed, host names
// resolved here when the sandbox is created. The server cannot change it:
// it has no capability in the namespace.
//
// Who may enter the namespace: bwrap run as root makes namespaces root
// may enter. bwrap run by another user (an ordinary user's serve, or
// Runtime.Credential) makes them owned by a user namespace of that user's,
// which slirp4netns and nsenter join, as that user, to gain the right.
// That is not the user namespace the sandbox's init is in: to mount
// /dev/pts bwrap maps the user to 0 in a first user namespace, which owns
// the network namespace, and runs the sandbox in a second one below it,
// where joining gives no right over the network. The first is found from
// the network namespace itself (NS_GET_USERNS); being root there, nft
// keeps its capabilities across exec.

// slirp4netns's network (its defaults: --cidr 10.0.2.0/24).
const (
	slirpDNS = "10.0.2.3"
	slirpTap = "tap0"
	slirpMTU = "65520" // the largest slirp4netns takes, for throughput
)

// resolveTimeout bounds the resolution of an allowlist's host names.
const resolveTimeout = 10 * time.Second

// network is the network of one launch.
type network struct {
	on      bool
	allowed []string // the allowlist as enforced, for the view
	rules   string   // the nftables ruleset; "" without an allowlist

	slirpBin, nsenter, nft string
	resolv                 string // host file bound at /etc/resolv.conf
	cred                   *syscall.Credential

	slirp *os.Process // once attached
	exitW *os.File    // slirp4netns exits once this is closed
}

// networkFor prepares the network of a launch of p, whose helpers run as
// cred (nil: Switchboard's own user): it finds the helpers,
// resolves the allowlist's host names and builds its rules. The error is
// an *UnavailableError (a helper is missing) or a *CreateError.
func (rt *Runtime) networkFor(ctx context.Context, p Profile, cred *syscall.Credential) (*network, error) {
	n := &network{on: p.Network, cred: cred}
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
	for _, tool := range []struct {
		bin       *string
		name, pkg string
	}{{&n.nft, "nft", "nftables"}, {&n.nsenter, "nsenter", "util-linux"}} {
		if *tool.bin, err = lookTool(tool.name); err != nil {
			return nil, &UnavailableError{Err: err, Reason: fmt.Sprintf(
				"%s is not installed, and the sandbox's network allowlist needs it: install %s (apt-get install %s), "+
					`or drop the allowlist ("network": true)`, tool.name, tool.pkg, tool.pkg)}
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
	// Refused, not only dropped: TCP ignores a dropped SYN and retries
	// until the connect times out; a reset fails it at once.
	b.WriteString("\t\tmeta l4proto tcp reject with tcp reset\n\t\treject with icmpx admin-prohibited\n")
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
	return []string{"--ro-bind", n.resolv, "/etc/resolv.conf"}
}

// attach gives the sandbox whose init is pid its network: it starts
// slirp4netns on the sandbox's network namespace, waits until the
// interface is up, and loads the allowlist from outside when Switchboard
// may. On an error the server must not run.
func (n *network) attach(pid int) error {
	if !n.on {
		return nil
	}
	if err := awaitNamespace(pid, time.Now().Add(startTimeout)); err != nil {
		return err
	}
	netns := "/proc/" + strconv.Itoa(pid) + "/ns/net"
	owner, err := netnsOwner(netns)
	if err != nil {
		return err
	}
	if owner != nil {
		defer owner.Close()
	}
	args := []string{"--configure", "--mtu=" + slirpMTU, "--disable-host-loopback",
		"--ready-fd=3", "--exit-fd=4", "--netns-type=path"}
	var cred *syscall.Credential
	extra := []*os.File(nil)
	if owner != nil {
		// fd 5 in slirp4netns, which opens the path itself.
		args = append(args, "--userns-path=/proc/self/fd/5")
		cred, extra = n.cred, []*os.File{owner}
	}
	args = append(args, netns, slirpTap)

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
		ExtraFiles: append([]*os.File{readyW, exitR}, extra...), // fds 3, 4 (and 5)
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
	n.slirp, n.exitW = cmd.Process, exitW

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
	if n.rules != "" {
		if err := n.loadRules(netns, owner); err != nil {
			n.stop()
			return err
		}
	}
	return nil
}

// nsGetUserns is NS_GET_USERNS, the ioctl(2) on a namespace that opens
// the user namespace owning it.
const nsGetUserns = 0xb701

// netnsOwner returns the user namespace that owns the network namespace
// at path, or nil if that is this process's own.
func netnsOwner(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bubblewrap exited before setting up the sandbox's network: %w", err)
	}
	defer f.Close()
	fd, err := unix.IoctlRetInt(int(f.Fd()), nsGetUserns)
	if err != nil {
		return nil, fmt.Errorf("finding the owner of the sandbox's network namespace: %w", err)
	}
	owner := os.NewFile(uintptr(fd), "userns")
	var theirs, ours unix.Stat_t
	if unix.Fstat(fd, &theirs) == nil && unix.Stat("/proc/self/ns/user", &ours) == nil && theirs.Ino == ours.Ino && theirs.Dev == ours.Dev {
		owner.Close()
		return nil, nil
	}
	return owner, nil
}

// awaitNamespace waits until bwrap has set up what the network's helpers
// need of the sandbox: its loopback and its user mapping. bwrap reports
// the sandbox's init before its child has set up the namespaces. The
// child brings up the loopback over netlink: slirp4netns configuring the
// same namespace at the same time made one of them fail (bwrap:
// "loopback: Failed RTM_NEWADDR"), one start in a few; the kernel puts
// 127.0.0.1 in the namespace's local routing table once the address is
// there and the link is up, the last step of bwrap's. Unprivileged, the
// child then writes its uid map: until it has, a user joining the
// namespace is nobody there, and nft run in it has no capability.
func awaitNamespace(pid int, deadline time.Time) error {
	dir := "/proc/" + strconv.Itoa(pid)
	for wait := 200 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		fib, err := os.ReadFile(dir + "/net/fib_trie")
		var uidMap []byte
		if err == nil {
			uidMap, err = os.ReadFile(dir + "/uid_map")
		}
		switch {
		case err != nil:
			return fmt.Errorf("bubblewrap exited before setting up the sandbox's network: %w", err)
		case bytes.Contains(fib, []byte("127.0.0.1")) && len(bytes.TrimSpace(uidMap)) > 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("bubblewrap did not set up the sandbox's network namespace within %s", startTimeout)
		}
		time.Sleep(wait)
	}
}

// loadRules loads the allowlist into the network namespace at netns.
// With owner set, nsenter joins that user namespace first, as n.cred or
// this process's user, which is root there.
func (n *network) loadRules(netns string, owner *os.File) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	args := []string{"--net=" + netns}
	attr := &syscall.SysProcAttr{Setpgid: true}
	var extra []*os.File
	// Root, with no other user to run as, may enter every namespace as it
	// is; joining a user namespace bwrap run as root made would instead
	// leave it with that namespace's capabilities, short of nft's.
	if owner != nil && (n.cred != nil || os.Geteuid() != 0) {
		// The user is uid 0 there already (bwrap's first mapping): no
		// setgroups, which that namespace denies.
		args = append([]string{"--user=/proc/self/fd/3", "--preserve-credentials"}, args...)
		attr.Credential, extra = n.cred, []*os.File{owner}
	}
	cmd := exec.CommandContext(ctx, n.nsenter, append(args, "--", n.nft, "-f", "-")...)
	cmd.Env = []string{"PATH=" + defaultPath}
	cmd.Stdin = strings.NewReader(n.rules)
	cmd.ExtraFiles, cmd.SysProcAttr = extra, attr
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		said := said3(out.String())
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

// stop ends slirp4netns and reaps it. The sandbox's network goes with it.
func (n *network) stop() {
	if n == nil || n.slirp == nil {
		return
	}
	n.exitW.Close()
	n.slirp.Kill()
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
