package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// This file answers "can bubblewrap sandbox anything here?" by trying it:
// whether bwrap is installed is not enough, since a kernel or a container
// may forbid the namespaces it needs, and only a real run tells. When it
// cannot, the error says what to install or which setting to change.

// UnavailableError says that bubblewrap cannot create sandboxes on this
// machine, in words a person can act on. Nothing was run.
type UnavailableError struct {
	Reason string
	Err    error // the lookup or the failed run
}

func (e *UnavailableError) Error() string { return e.Reason }
func (e *UnavailableError) Unwrap() error { return e.Err }

// probeResult is the outcome of the last probe.
type probeResult struct {
	at    time.Time
	bwrap string            // the executable, when it works
	err   *UnavailableError // nil when it works
}

// probeTimeout bounds one trial run; it takes a few milliseconds.
const probeTimeout = 10 * time.Second

// optOut is the way out every unavailability message offers.
const optOut = `or run this server unsandboxed with "sandbox": {"enabled": false}`

// Probe reports whether bubblewrap can create sandboxes here, and returns
// the bwrap executable when it can. It runs bwrap with the namespaces a
// sandbox uses (as Credential, if set) unless a probe succeeded within the
// last 10 minutes. The error is an *UnavailableError.
func (rt *Runtime) Probe(ctx context.Context) (string, error) {
	fresh := func() (string, bool) {
		r := rt.probe.Load()
		if r == nil || r.err != nil || time.Since(r.at) >= probeTTL {
			return "", false
		}
		return r.bwrap, true
	}
	if bwrap, ok := fresh(); ok {
		return bwrap, nil
	}
	// One trial at a time: the servers starting together at load wait for
	// the first one's answer rather than each running bwrap.
	rt.probeMu.Lock()
	defer rt.probeMu.Unlock()
	if bwrap, ok := fresh(); ok {
		return bwrap, nil
	}
	bwrap, uerr := rt.try(ctx)
	rt.probe.Store(&probeResult{at: time.Now(), bwrap: bwrap, err: uerr})
	if uerr != nil {
		return "", uerr
	}
	return bwrap, nil
}

// Known returns the outcome of the last probe without probing: known is
// false if there was none. It is for views, which must not block.
func (rt *Runtime) Known() (works, known bool, reason string) {
	r := rt.probe.Load()
	if r == nil {
		return false, false, ""
	}
	if r.err != nil {
		return false, true, r.err.Reason
	}
	return true, true, ""
}

func (rt *Runtime) try(ctx context.Context) (string, *UnavailableError) {
	name := rt.Bwrap
	if name == "" {
		name = "bwrap"
	}
	bwrap, err := exec.LookPath(name)
	if err != nil {
		return "", &UnavailableError{Err: err, Reason: fmt.Sprintf(
			"bubblewrap (%s) is not installed or not on PATH, so this server cannot be sandboxed: install it "+
				"(Debian, Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap; "+
				"Alpine: apk add bubblewrap), %s", name, optOut)}
	}
	cred, _, err := rt.user()
	if err != nil {
		return "", &UnavailableError{Err: err, Reason: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// The namespaces, capabilities and user of a real sandbox, around the
	// cheapest command there is.
	args := []string{"--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--die-with-parent", "--cap-drop", "ALL"}
	run := []string{"true"}
	attr := &syscall.SysProcAttr{Setsid: true}
	if rt.dropsPrivileges(cred) {
		if _, err := os.Stat(setpriv); err != nil {
			return "", &UnavailableError{Err: err, Reason: fmt.Sprintf(
				"%s is missing: a Switchboard running as root needs it to run sandboxed servers as %s, never as root: "+
					"install util-linux (Debian, Ubuntu: apt-get install util-linux), %s", setpriv, DefaultUser, optOut)}
		}
		args = append(args, "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")
		run = []string{setpriv, fmt.Sprintf("--reuid=%d", cred.Uid), fmt.Sprintf("--regid=%d", cred.Gid), "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--", "true"}
	} else {
		args = append(args, "--unshare-user", "--disable-userns")
		attr.Credential = cred
	}
	args = append(append(args, "--ro-bind", "/", "/", "--"), run...)
	cmd := exec.CommandContext(ctx, bwrap, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = attr
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if err == nil {
		return bwrap, nil
	}
	said := firstLine(stderr.String())
	if said == "" {
		said = err.Error()
	}
	if ctx.Err() != nil {
		said = "it did not finish within " + probeTimeout.String()
	}
	return "", &UnavailableError{Err: err, Reason: fmt.Sprintf("bubblewrap cannot create a sandbox here (%s): %s; %s",
		said, namespaceHint(readSysctl, rt.dropsPrivileges(cred)), optOut)}
}

// namespaceHint names the setting that most likely keeps bubblewrap from
// creating namespaces. Unprivileged, bwrap needs user namespaces, which
// kernels and distributions turn off in several ways; as root it needs
// none, so a failure there is a container's doing.
func namespaceHint(sysctl func(string) string, root bool) string {
	switch {
	case root:
		return "as root bubblewrap needs no user namespaces, so the container or the security policy Switchboard runs in " +
			"forbids mount or PID namespaces (allow them, e.g. docker run --cap-add SYS_ADMIN --security-opt seccomp=unconfined " +
			"--security-opt apparmor=unconfined)"
	case sysctl("kernel/unprivileged_userns_clone") == "0":
		return "unprivileged user namespaces are turned off: enable them with sysctl -w kernel.unprivileged_userns_clone=1"
	case sysctl("kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later): allow bwrap with an AppArmor profile " +
			"(Ubuntu ships /etc/apparmor.d/bwrap-userns-restrict) or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
	case sysctl("user/max_user_namespaces") == "0":
		return "user namespaces are turned off: enable them with sysctl -w user.max_user_namespaces=15000"
	}
	return "unprivileged user namespaces are not available to this user (in a container, allow them: " +
		"e.g. docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined)"
}

// readSysctl returns the value of /proc/sys/NAME, or "" if there is none.
func readSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// firstLine returns the first non-empty line of s, trimmed.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// IsUnavailable reports whether err says bubblewrap cannot sandbox here.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}
