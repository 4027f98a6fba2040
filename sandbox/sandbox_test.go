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
			Profile{Network: true, MemoryMB: DefaultMemoryMB, Pids: DefaultPids}, true},
		{"empty config is the default profile", &sb.SandboxConfig{}, false,
			Profile{Network: true, MemoryMB: DefaultMemoryMB, Pids: DefaultPids}, true},
		{"opted out", &sb.SandboxConfig{Enabled: new(false), Network: &sb.SandboxNetwork{Off: true}}, true, Profile{}, false},
		{"required, no limits, no network, isolated",
			&sb.SandboxConfig{Enabled: new(true), Network: &sb.SandboxNetwork{Off: true}, MemoryMB: -1, Pids: -1, CPUSeconds: -1, Workspace: sb.WorkspaceIsolated}, false,
			Profile{Required: true, Isolated: true}, true},
		{"mounts get their path and mode, parents first",
			&sb.SandboxConfig{Mounts: []sb.Mount{{Host: "/srv/b", Path: "/data/sub", Mode: sb.MountReadWrite}, {Host: "/srv/a", Path: "/data"}, {Host: "/opt/x"}},
				MemoryMB: 64, CPUSeconds: 10}, false,
			Profile{Network: true, MemoryMB: 64, Pids: DefaultPids, CPUSeconds: 10, Mounts: []sb.Mount{
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
	if !ok || !tp.Isolated || tp.key() != lp.key() || tp.Network || len(tp.Mounts) != 1 {
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
	b, _ := Resolve(&sb.SandboxConfig{Enabled: new(true), Workspace: sb.WorkspaceIsolated}, false)
	c, _ := Resolve(&sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}}, false)
	d, _ := Resolve(&sb.SandboxConfig{Mounts: []sb.Mount{{Host: "/srv"}}}, false)
	if a.key() != b.key() {
		t.Error("required or isolated changed the profile's workspace key")
	}
	if a.key() == c.key() || a.key() == d.key() || c.key() == d.key() {
		t.Error("different sandboxes share a workspace")
	}
}

func TestArgvShowsOnlyWhatTheProfileNames(t *testing.T) {
	p, _ := Resolve(&sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}, Mounts: []sb.Mount{
		{Host: "/srv/data", Mode: sb.MountReadWrite}, {Host: "/home/me/.config/app", Path: "/config"}}}, false)
	a := argv(p, Command{Path: "/home/me/bin/server", Args: []string{"--flag", "x y"}, Dir: "/srv/data/project"}, "/state/ws", 1<<20, nil, nil)
	line := strings.Join(a, " ")
	for _, want := range []string{
		"--unshare-all --die-with-parent --cap-drop ALL",
		"--ro-bind /usr /usr",
		"--ro-bind-try /etc/resolv.conf /etc/resolv.conf",
		"--proc /proc --dev /dev --size 1048576 --tmpfs /tmp --bind /state/ws /workspace",
		"--ro-bind /home/me/.config/app /config",
		"--ro-bind /home/me/bin/server /home/me/bin/server", // the command, outside every mount
		"--bind /srv/data /srv/data",
		"--remount-ro / --chdir /srv/data/project --info-fd 3 --block-fd 4 -- /home/me/bin/server --flag x y",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("argv lacks %q:\n%s", want, line)
		}
	}
	for _, never := range []string{"--share-net", "/home/me ", "/root", "/etc/shadow", "/etc/npmrc", "--bind /home"} {
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
		[]string{"--ro-bind", "/state/network/resolv.conf", "/etc/resolv.conf"}, []string{"/bin/sh", "-c", "x", "sh"})
	line = strings.Join(a, " ")
	// Network on is a namespace of the sandbox's own too, with its
	// resolv.conf bound over the host's.
	if strings.Contains(line, "--share-net") ||
		!strings.Contains(line, "--ro-bind-try /etc/timezone /etc/timezone --ro-bind /state/network/resolv.conf /etc/resolv.conf --proc") || strings.Contains(line, "--ro-bind /usr/bin/npx") || strings.Contains(line, "--size") ||
		!strings.HasSuffix(line, "--chdir /workspace --info-fd 3 --block-fd 4 -- /bin/sh -c x sh /usr/bin/npx -y pkg") {
		t.Errorf("argv of the default profile for a system command:\n%s", line)
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
	if d := DescribeExit(xcpu); d != "was killed by signal CPU time limit exceeded" {
		t.Errorf("DescribeExit(152) = %q", d)
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

func TestWorkspacesAreSharedByProfileAndIsolatedOnesVanish(t *testing.T) {
	rt := &Runtime{StateDir: t.TempDir()}
	p, _ := Resolve(&sb.SandboxConfig{}, false)
	a, err := rt.workspace(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := rt.workspace(p)
	if a.dir != b.dir || a.isolated {
		t.Errorf("two servers of one profile got %s and %s", a.dir, b.dir)
	}
	if fi, err := os.Stat(a.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("shared workspace %v, %v; want a directory of mode 0700", fi, err)
	}
	p.Isolated = true
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

// run launches c in a sandbox as the caller (upstream) does and returns
// its stdout.
func run(t *testing.T, rt *Runtime, p Profile, c Command, env []string) (string, error) {
	t.Helper()
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
