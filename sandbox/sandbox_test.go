package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	sb "github.com/switchboard-mcp/switchboard"
)

func TestMain(m *testing.M) {
	if what := os.Getenv(netProbeEnv); what != "" {
		os.Exit(netProbe(what))
	}
	if state := os.Getenv(netHolderEnv); state != "" {
		os.Exit(netHolder(state))
	}
	goleak.VerifyTestMain(m)
}

// requireBwrap returns a Runtime with its workspaces in a temporary
// directory, after checking that bubblewrap works here; without it the
// test skips, unless SWITCHBOARD_SANDBOX_REQUIRED says it must not.
func requireBwrap(t *testing.T) *Runtime {
	t.Helper()
	rt := &Runtime{StateDir: t.TempDir()}
	if _, err := rt.Probe(context.Background()); err != nil {
		if os.Getenv("SWITCHBOARD_SANDBOX_REQUIRED") != "" {
			t.Fatalf("bubblewrap is required (SWITCHBOARD_SANDBOX_REQUIRED) and does not work: %v", err)
		}
		t.Skipf("bubblewrap does not work here: %v", err)
	}
	return rt
}

func TestResolveAppliesTheDefaultProfile(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cfg          *sb.SandboxConfig
		applyDefault bool
		want         Profile
		sandboxed    bool
	}{
		{"no config, no default: as before", nil, false, Profile{}, false},
		{"no config, default applied", nil, true,
			Profile{Network: true, MemoryMB: DefaultMemoryMB, Pids: DefaultPids, Workspace: sb.WorkspacePerServer}, true},
		{"empty config is the default profile", &sb.SandboxConfig{}, false,
			Profile{Network: true, MemoryMB: DefaultMemoryMB, Pids: DefaultPids, Workspace: sb.WorkspacePerServer}, true},
		{"a workspace shared by profile only when asked for", &sb.SandboxConfig{Workspace: sb.WorkspaceShared}, false,
			Profile{Network: true, MemoryMB: DefaultMemoryMB, Pids: DefaultPids, Workspace: sb.WorkspaceShared}, true},
		{"opted out", &sb.SandboxConfig{Enabled: new(false), Network: &sb.SandboxNetwork{Off: true}}, true, Profile{}, false},
		{"required, no limits, no network, isolated",
			&sb.SandboxConfig{Enabled: new(true), Network: &sb.SandboxNetwork{Off: true}, MemoryMB: -1, Pids: -1, CPUSeconds: -1, Workspace: sb.WorkspaceIsolated}, false,
			Profile{Required: true, Workspace: sb.WorkspaceIsolated}, true},
		{"mounts get their path and mode, parents first",
			&sb.SandboxConfig{Mounts: []sb.Mount{{Host: "/srv/b", Path: "/data/sub", Mode: sb.MountReadWrite}, {Host: "/srv/a", Path: "/data"}, {Host: "/opt/x"}},
				MemoryMB: 64, CPUSeconds: 10}, false,
			Profile{Network: true, MemoryMB: 64, Pids: DefaultPids, CPUSeconds: 10, Workspace: sb.WorkspacePerServer, Mounts: []sb.Mount{
				{Host: "/srv/a", Path: "/data", Mode: sb.MountReadOnly},
				{Host: "/srv/b", Path: "/data/sub", Mode: sb.MountReadWrite},
				{Host: "/opt/x", Path: "/opt/x", Mode: sb.MountReadOnly}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Resolve(tc.cfg, tc.applyDefault)
			if ok != tc.sandboxed || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Resolve = %+v, %v; want %+v, %v", got, ok, tc.want, tc.sandboxed)
			}
		})
	}
}

func TestTestSessionsGetAFreshIsolatedWorkspaceOfTheSameProfile(t *testing.T) {
	live := &sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}, Mounts: []sb.Mount{{Host: "/srv"}}}
	test := ForTest(live, false)
	if live.Workspace != "" {
		t.Fatal("ForTest changed the live config")
	}
	lp, _ := Resolve(live, false)
	tp, ok := Resolve(test, false)
	if !ok || tp.Workspace != sb.WorkspaceIsolated || tp.key() != lp.key() || tp.Network || len(tp.Mounts) != 1 {
		t.Errorf("test profile %+v; want the live profile %+v, isolated", tp, lp)
	}
	if tp := ForTest(nil, true); tp == nil || tp.Workspace != sb.WorkspaceIsolated {
		t.Errorf("ForTest(nil, default) = %+v; want the default profile, isolated", tp)
	}
	if ForTest(nil, false) != nil {
		t.Error("a server that runs unsandboxed got a sandbox for its test")
	}
	if tp := ForTest(&sb.SandboxConfig{Enabled: new(false)}, true); tp == nil || *tp.Enabled {
		t.Errorf("an opted-out server's test session is sandboxed: %+v", tp)
	}
}

func TestProfilesShareAWorkspaceOnlyWhenTheyLookTheSame(t *testing.T) {
	a, _ := Resolve(&sb.SandboxConfig{}, false)
	b, _ := Resolve(&sb.SandboxConfig{Enabled: new(true), Workspace: sb.WorkspaceShared}, false)
	b.Server = "other"
	c, _ := Resolve(&sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}}, false)
	d, _ := Resolve(&sb.SandboxConfig{Mounts: []sb.Mount{{Host: "/srv"}}}, false)
	if a.key() != b.key() {
		t.Error("required, the workspace mode or the server changed the profile's workspace key")
	}
	if a.key() == c.key() || a.key() == d.key() || c.key() == d.key() {
		t.Error("different sandboxes share a workspace")
	}
}

func TestArgvShowsOnlyWhatTheProfileNames(t *testing.T) {
	sandboxUser := &syscall.Credential{Uid: 999, Gid: 998}
	for _, tc := range []struct {
		name string
		drop *syscall.Credential
		want []string // beyond what both have
	}{
		{"as a user", nil, []string{
			"--unshare-ipc --unshare-pid --unshare-uts --unshare-cgroup-try --unshare-net --unshare-user --disable-userns --die-with-parent --cap-drop ALL --ro-bind /usr /usr",
			"--remount-ro / --chdir /srv/data/project --info-fd 3 --block-fd 4 -- /home/me/bin/server --flag x y",
		}},
		{"as root", sandboxUser, []string{
			// No user namespace: a seccomp filter keeps the server from
			// making one, and setpriv runs it as the sandbox user.
			"--unshare-ipc --unshare-pid --unshare-uts --unshare-cgroup-try --unshare-net --die-with-parent --cap-drop ALL " +
				"--cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_SETPCAP --seccomp 5 --ro-bind /usr /usr",
			// The parents of a mount point are the sandbox's own, open to its user.
			"--perms 0755 --dir /home --perms 0755 --dir /home/me --perms 0755 --dir /home/me/bin --ro-bind /home/me/bin/server /home/me/bin/server",
			"--perms 0755 --dir /srv --bind /srv/data /srv/data",
			"--remount-ro / --chdir /srv/data/project --info-fd 3 --block-fd 4 -- " +
				"/usr/bin/setpriv --reuid=999 --regid=998 --clear-groups --inh-caps=-all --bounding-set=-all -- /home/me/bin/server --flag x y",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := Resolve(&sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}, Mounts: []sb.Mount{
				{Host: "/srv/data", Mode: sb.MountReadWrite}, {Host: "/home/me/.config/app", Path: "/config"}}}, false)
			a := argv(p, Command{Path: "/home/me/bin/server", Args: []string{"--flag", "x y"}, Dir: "/srv/data/project"}, "/state/ws", 1<<20, nil, nil, tc.drop)
			line := strings.Join(a, " ")
			for _, want := range append([]string{
				"--ro-bind-try /etc/resolv.conf /etc/resolv.conf",
				"--proc /proc --dev /dev --size 1048576 --perms 1777 --tmpfs /tmp --size 1048576 --perms 1777 --tmpfs /dev/shm --bind /state/ws /workspace",
				"--ro-bind /home/me/.config/app /config",
				"--ro-bind /home/me/bin/server /home/me/bin/server", // the command, outside every mount
				"--bind /srv/data /srv/data",
			}, tc.want...) {
				if !strings.Contains(line, want) {
					t.Errorf("argv lacks %q:\n%s", want, line)
				}
			}
			for _, never := range []string{"--share-net", "--unshare-all", "/home/me /home/me ", "/root", "/etc/shadow", "/etc/npmrc", "--bind /home", "--dir /tmp"} {
				if strings.Contains(line+" ", never) {
					t.Errorf("argv has %q:\n%s", never, line)
				}
			}
			// The working directory is inside a mount, so it is not bound again.
			if strings.Count(line, "/srv/data/project") != 1 {
				t.Errorf("the working directory, inside a mount, is bound again:\n%s", line)
			}

			on, _ := Resolve(&sb.SandboxConfig{}, false)
			a = argv(on, Command{Path: "/usr/bin/npx", Args: []string{"-y", "pkg"}}, "/ws", 0,
				[]string{"--ro-bind", "/state/network/resolv.conf", "/etc/resolv.conf"}, []string{"/bin/sh", "-c", "x", "sh"}, tc.drop)
			line = strings.Join(a, " ")
			// Network on is a namespace of the sandbox's own too, with its
			// resolv.conf bound over the host's.
			if strings.Contains(line, "--share-net") || !strings.Contains(line, "--unshare-net") ||
				!strings.Contains(line, "--ro-bind-try /etc/timezone /etc/timezone --ro-bind /state/network/resolv.conf /etc/resolv.conf --proc") ||
				strings.Contains(line, "--ro-bind /usr/bin/npx") || strings.Contains(line, "--size") ||
				!strings.HasSuffix(line, "-- /bin/sh -c x sh /usr/bin/npx -y pkg") {
				t.Errorf("argv of the default profile for a system command:\n%s", line)
			}
		})
	}
}

func TestEnvPassesNothingTheConfigDoesNotName(t *testing.T) {
	host := map[string]string{"LANG": "de_DE.UTF-8", "SWITCHBOARD_TOKEN": "secret", "AWS_SECRET_ACCESS_KEY": "k", "HOME": "/root",
		"PATH": "/root/.nvm/bin:/usr/bin"}
	env := Env(func(k string) string { return host[k] }, map[string]string{"API_KEY": "mine", "PATH": "/opt/x/bin:/usr/bin"})
	want := []string{"API_KEY=mine", "HOME=/workspace", "LANG=de_DE.UTF-8", "PATH=/opt/x/bin:/usr/bin", "TMPDIR=/tmp"}
	if !slices.Equal(env, want) {
		t.Errorf("Env = %q, want %q", env, want)
	}
}

// exitOf runs a shell script and returns the error Wait gave.
func exitOf(t *testing.T, script string) error {
	t.Helper()
	err := exec.Command("/bin/sh", "-c", script).Run()
	if err == nil {
		t.Fatalf("%q exited 0", script)
	}
	return err
}

func TestExplainTellsWhichLimitKilledTheServer(t *testing.T) {
	killed := exitOf(t, "kill -9 $$")
	xcpu := exitOf(t, "exit 152") // bwrap's status for a command killed by SIGXCPU
	crashed := exitOf(t, "exit 2")
	mem, _ := Resolve(&sb.SandboxConfig{MemoryMB: 64}, false)
	cpu, _ := Resolve(&sb.SandboxConfig{CPUSeconds: 5}, false)
	none, _ := Resolve(&sb.SandboxConfig{MemoryMB: -1}, false)
	for _, tc := range []struct {
		name     string
		p        Profile
		mode     string
		oomKills int
		cpu      time.Duration
		err      error
		oomSaid  bool
		want     sb.Code
	}{
		{"cgroup OOM kill", mem, LimitsCgroup, 1, 0, killed, false, sb.CodeMemoryLimit},
		{"runtime says out of memory under RLIMIT_DATA", mem, LimitsRlimit, -1, -1, crashed, true, sb.CodeMemoryLimit},
		{"a crash under RLIMIT_DATA without the words", mem, LimitsRlimit, -1, -1, crashed, false, ""},
		{"out of memory without a memory limit", none, LimitsNone, -1, -1, crashed, true, ""},
		{"SIGXCPU", cpu, LimitsRlimit, -1, -1, xcpu, false, sb.CodeCPULimit},
		{"SIGKILL under a CPU limit, CPU time unknown", cpu, LimitsRlimit, -1, -1, killed, false, sb.CodeCPULimit},
		{"SIGKILL with the CPU time counted and used up", cpu, LimitsCgroup, 0, 6 * time.Second, killed, false, sb.CodeCPULimit},
		{"SIGKILL with the CPU time counted and left", cpu, LimitsCgroup, 0, time.Second, killed, false, ""},
		{"SIGKILL without a CPU limit", mem, LimitsRlimit, -1, -1, killed, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := explain(tc.p, tc.mode, tc.oomKills, tc.cpu, tc.err, tc.oomSaid)
			if code != tc.want {
				t.Fatalf("explain = %q (%s), want %q", code, msg, tc.want)
			}
			if code == sb.CodeMemoryLimit && !strings.Contains(msg, "64 MB") || code == sb.CodeCPULimit && !strings.Contains(msg, "5 s") {
				t.Errorf("message %q does not name the limit", msg)
			}
		})
	}
	if d := DescribeExit(xcpu); d != "was killed by SIGXCPU (CPU time limit exceeded)" {
		t.Errorf("DescribeExit(152) = %q", d)
	}
	if d := DescribeExit(killed); d != "was killed by SIGKILL (killed)" {
		t.Errorf("DescribeExit(SIGKILL) = %q, want it to name the signal", d)
	}
	if d := DescribeExit(crashed); d != "exited with status 2" {
		t.Errorf("DescribeExit(2) = %q", d)
	}
}

func TestOOMWatchSeesAMessageSplitAcrossWrites(t *testing.T) {
	var out bytes.Buffer
	w := oomWatch{w: &out}
	for _, chunk := range []string{"fatal error: runtime: out of me", "mory\n", "goroutine 1 [running]:\n"} {
		w.Write([]byte(chunk))
	}
	if !w.said.Load() || out.String() != "fatal error: runtime: out of memory\ngoroutine 1 [running]:\n" {
		t.Errorf("said %v, passed %q", w.said.Load(), out.String())
	}
	quiet := oomWatch{w: &out}
	quiet.Write([]byte("listening on stdio\n"))
	if quiet.said.Load() {
		t.Error("an ordinary line counted as out of memory")
	}
}

func TestUnavailableSaysWhatToInstallOrEnable(t *testing.T) {
	rt := &Runtime{Bwrap: filepath.Join(t.TempDir(), "bwrap")}
	_, err := rt.Probe(context.Background())
	var u *UnavailableError
	if !errors.As(err, &u) || !strings.Contains(u.Reason, "apt-get install bubblewrap") || !strings.Contains(u.Reason, `"enabled": false`) {
		t.Fatalf("Probe = %v; want an *UnavailableError saying what to install and how to opt out", err)
	}
	if works, known, reason := rt.Known(); works || !known || reason != u.Reason {
		t.Errorf("Known = %v, %v, %q", works, known, reason)
	}
	for _, tc := range []struct {
		sysctl map[string]string
		root   bool
		want   string
	}{
		{map[string]string{"kernel/unprivileged_userns_clone": "0"}, false, "kernel.unprivileged_userns_clone=1"},
		{map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "1"}, false, "apparmor_restrict_unprivileged_userns=0"},
		{map[string]string{"user/max_user_namespaces": "0"}, false, "user.max_user_namespaces"},
		{map[string]string{}, false, "seccomp=unconfined"},
		{map[string]string{"kernel/unprivileged_userns_clone": "0"}, true, "as root"},
	} {
		if got := namespaceHint(func(k string) string { return tc.sysctl[k] }, tc.root); !strings.Contains(got, tc.want) {
			t.Errorf("hint for %v (root %v) = %q; want it to say %q", tc.sysctl, tc.root, got, tc.want)
		}
	}
}

func TestCgroupIsUsedOnlyWhereItIsDelegated(t *testing.T) {
	root := t.TempDir()
	mk := func(rel, controllers string) {
		os.MkdirAll(filepath.Join(root, rel), 0o755)
		os.WriteFile(filepath.Join(root, rel, "cgroup.subtree_control"), []byte(controllers), 0o644)
	}
	mk("delegated", "cpu memory pids\n")
	mk("partial", "memory\n")
	v2 := func(string) bool { return true }
	v1 := func(string) bool { return false }
	for _, tc := range []struct {
		self string
		isV2 func(string) bool
		want string
	}{
		{"0::/delegated\n", v2, filepath.Join(root, "delegated")},
		{"0::/partial\n", v2, ""},
		{"0::/absent\n", v2, ""},
		{"4:memory:/delegated\n0::/\n", v1, ""}, // cgroup v1 (or hybrid): rlimits
	} {
		if got := detectCgroup(root, []byte(tc.self), tc.isV2); got != tc.want {
			t.Errorf("detectCgroup(%q) = %q, want %q", tc.self, got, tc.want)
		}
	}

	// A sandbox's own cgroup carries its limits; the swap file may be
	// missing (no swap accounting).
	dir, err := newCgroup(filepath.Join(root, "delegated"), 64<<20, 32)
	if err != nil {
		t.Fatal(err)
	}
	read := func(f string) string { b, _ := os.ReadFile(filepath.Join(dir, f)); return string(b) }
	if read("memory.max") != strconv.Itoa(64<<20) || read("memory.swap.max") != "0" || read("pids.max") != "32" {
		t.Errorf("cgroup files: memory.max %q, memory.swap.max %q, pids.max %q", read("memory.max"), read("memory.swap.max"), read("pids.max"))
	}
	os.WriteFile(filepath.Join(dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte("usage_usec 2500000\nuser_usec 2000000\n"), 0o644)
	l := limits{mode: LimitsCgroup, cgroup: dir}
	if l.oomKills() != 1 || l.cpuUsed() != 2500*time.Millisecond {
		t.Errorf("oomKills %d, cpuUsed %v", l.oomKills(), l.cpuUsed())
	}
}

func TestEachServerHasAWorkspaceOfItsOwnWhateverItsProfile(t *testing.T) {
	rt := &Runtime{StateDir: t.TempDir()}
	p, _ := Resolve(&sb.SandboxConfig{}, false)
	a, b := p, p
	a.Server, b.Server = "alpha", "beta"
	wa, err := rt.workspace(a)
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := rt.workspace(b)
	if wa.dir == wb.dir || wa.isolated || filepath.Base(wa.dir) != "alpha" {
		t.Fatalf("two servers of one profile got %s and %s; want one each, named after the server", wa.dir, wb.dir)
	}
	if fi, err := os.Stat(wa.dir); err != nil || fi.Mode().Perm() != workspaceMode() {
		t.Errorf("server workspace %v, %v; want a directory of mode %o", fi, err, workspaceMode())
	}
	// Another profile of the same server (a mount, a limit changed) keeps
	// the workspace, and the view names it before the server runs.
	changed, _ := Resolve(&sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}, MemoryMB: 64, Mounts: []sb.Mount{{Host: "/srv"}}}, false)
	changed.Server = "alpha"
	if again, _ := rt.workspace(changed); again.dir != wa.dir {
		t.Errorf("a changed profile moved the server from %s to %s", wa.dir, again.dir)
	}
	if plan := rt.Plan(changed); plan.Workspace != wa.dir || plan.WorkspaceMode != sb.WorkspacePerServer {
		t.Errorf("Plan = %+v; want the workspace %s, mode per-server", plan, wa.dir)
	}
	// A name that is not a server's never becomes a path.
	for _, bad := range []string{"", "..", "a/b", "../alpha", "Alpha"} {
		p.Server = bad
		if ws, err := rt.workspace(p); err == nil {
			t.Errorf("server %q got the workspace %s", bad, ws.dir)
		}
		if err := rt.RemoveWorkspace(bad); err == nil {
			t.Errorf("RemoveWorkspace(%q) succeeded", bad)
		}
	}

	// Removing one server's workspace takes what a server may leave (a
	// read-only directory) and nothing of the other's.
	locked := filepath.Join(wa.dir, ".npm", "locked")
	os.MkdirAll(locked, 0o700)
	os.WriteFile(filepath.Join(locked, "f"), nil, 0o400)
	os.Chmod(locked, 0o500)
	if err := rt.RemoveWorkspace("alpha"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wa.dir); !os.IsNotExist(err) {
		t.Errorf("the removed workspace is still there: %v", err)
	}
	if _, err := os.Stat(wb.dir); err != nil {
		t.Errorf("another server's workspace went too: %v", err)
	}
	if err := rt.RemoveWorkspace("alpha"); err != nil {
		t.Errorf("removing a workspace that is gone: %v", err)
	}
}

// workspaceMode is the mode of a workspace: as root, the sandbox user
// owns it and a root bwrap without capabilities must enter it (no one
// else reaches it: the directory above is Switchboard's, 0700).
func workspaceMode() os.FileMode {
	if os.Geteuid() == 0 {
		return 0o701
	}
	return 0o700
}

func TestSharedWorkspacesAreByProfileAndIsolatedOnesVanish(t *testing.T) {
	rt := &Runtime{StateDir: t.TempDir()}
	p, _ := Resolve(&sb.SandboxConfig{Workspace: sb.WorkspaceShared}, false)
	p.Server = "one"
	a, err := rt.workspace(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Server = "two"
	b, _ := rt.workspace(p)
	if a.dir != b.dir || a.isolated || filepath.Base(a.dir) != p.key() {
		t.Errorf("two servers sharing one profile got %s and %s", a.dir, b.dir)
	}
	if fi, err := os.Stat(a.dir); err != nil || fi.Mode().Perm() != workspaceMode() {
		t.Errorf("shared workspace %v, %v; want a directory of mode %o", fi, err, workspaceMode())
	}
	if root, err := os.Stat(filepath.Dir(a.dir)); err != nil || root.Mode().Perm() != 0o700 {
		t.Errorf("the workspaces' directory %v, %v; want mode 0700", root, err)
	}
	if plan := rt.Plan(p); plan.Workspace != a.dir || plan.WorkspaceMode != sb.WorkspaceShared {
		t.Errorf("Plan = %+v; want the shared workspace %s", plan, a.dir)
	}
	p.Workspace = sb.WorkspaceIsolated
	i1, _ := rt.workspace(p)
	i2, _ := rt.workspace(p)
	if i1.dir == i2.dir || !i1.isolated {
		t.Fatalf("isolated workspaces %s and %s", i1.dir, i2.dir)
	}
	// A server may leave a read-only directory behind; it goes anyway.
	os.MkdirAll(filepath.Join(i1.dir, ".npm", "locked"), 0o700)
	os.WriteFile(filepath.Join(i1.dir, ".npm", "locked", "f"), nil, 0o400)
	os.Chmod(filepath.Join(i1.dir, ".npm", "locked"), 0o500)
	i1.remove()
	a.remove() // shared: kept
	if _, err := os.Stat(i1.dir); !os.IsNotExist(err) {
		t.Errorf("the isolated workspace is still there: %v", err)
	}
	if _, err := os.Stat(a.dir); err != nil {
		t.Errorf("the shared workspace was removed: %v", err)
	}

	// One left by a daemon that is gone is swept; ours stays.
	dead := exec.Command("true")
	dead.Run()
	parent := filepath.Dir(i2.dir)
	stale := filepath.Join(parent, strconv.Itoa(dead.Process.Pid)+"-123")
	os.Mkdir(stale, 0o700)
	sweepIsolated(parent)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a dead daemon's isolated workspace was not swept: %v", err)
	}
	if _, err := os.Stat(i2.dir); err != nil {
		t.Errorf("our own isolated workspace was swept: %v", err)
	}
}

// An install from before per-server workspaces kept every server's files
// in its profile's workspace: a server's first own workspace starts empty
// and says where those are; its later starts say nothing.
func TestAServersFirstOwnWorkspaceNamesTheSharedOnesOfBefore(t *testing.T) {
	rt := &Runtime{StateDir: t.TempDir()}
	p, _ := Resolve(&sb.SandboxConfig{}, false)
	p.Server = "fresh"
	if ws, _ := rt.workspace(p); ws.legacy != "" {
		t.Errorf("with no shared workspace, legacy = %q", ws.legacy)
	}
	rt.RemoveWorkspace("fresh")
	old := filepath.Join(rt.StateDir, "workspaces", p.key())
	os.MkdirAll(filepath.Join(old, ".npm"), 0o700)
	p.Server = "memory"
	ws, err := rt.workspace(p)
	if err != nil {
		t.Fatal(err)
	}
	if ws.legacy != filepath.Dir(old) {
		t.Errorf("legacy = %q, want %s", ws.legacy, filepath.Dir(old))
	}
	if entries, _ := os.ReadDir(ws.dir); len(entries) != 0 {
		t.Errorf("the new workspace holds %v", entries)
	}
	if again, _ := rt.workspace(p); again.legacy != "" {
		t.Errorf("a later start still says legacy %q", again.legacy)
	}
	if _, err := os.Stat(filepath.Join(old, ".npm")); err != nil {
		t.Errorf("the old shared workspace was touched: %v", err)
	}
}

// run launches c in a sandbox as the caller (upstream) does and returns
// its stdout. A profile that names no server is the server "test"'s.
func run(t *testing.T, rt *Runtime, p Profile, c Command, env []string) (string, error) {
	t.Helper()
	if p.Server == "" {
		p.Server = "test"
	}
	l, err := rt.Prepare(context.Background(), p, c, env)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer l.Cleanup()
	cmd := l.Cmd()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, l.Stderr(&errOut)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := l.Started(); err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		t.Fatalf("Started: %v; stderr %s", err, errOut.String())
	}
	err = cmd.Wait()
	l.Exited()
	l.AwaitGone(time.Second)
	if l.Alive() {
		t.Error("a process of the sandbox outlived its init")
	}
	if err != nil {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), err
}

func TestLimitsAreOnBeforeTheServerRuns(t *testing.T) {
	rt := requireBwrap(t)
	p, _ := Resolve(&sb.SandboxConfig{MemoryMB: 300, CPUSeconds: 7, Workspace: sb.WorkspaceIsolated}, false)
	out, err := run(t, rt, p, Command{Path: "/bin/sh", Args: []string{"-c", `grep -E "^Max (cpu time|data size)" /proc/self/limits; pwd; echo $HOME; env | sort`}},
		Env(func(string) string { return "" }, map[string]string{"K": "v"}))
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{
		"Max cpu time              7                    9",
		"Max data size             314572800            314572800",
		"/workspace\n/workspace\n",
		"K=v\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the sandbox's view lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(rt.StateDir, "workspaces", "isolated")); len(entries) != 0 {
		t.Errorf("the isolated workspace outlived the launch: %v", entries)
	}
}

func TestAProcessThatLeftTheGroupDiesWithTheSandbox(t *testing.T) {
	rt := requireBwrap(t)
	p, _ := Resolve(&sb.SandboxConfig{}, false)
	// The grandchild leaves the process group (setsid) and outlives the
	// command; the sandbox's init takes it along.
	out, err := run(t, rt, p, Command{Path: "/bin/sh", Args: []string{"-c", "setsid sleep 300 & echo started"}},
		Env(func(string) string { return "" }, nil))
	if err != nil || !strings.Contains(out, "started") {
		t.Fatalf("%v: %q", err, out)
	}
}
