package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
)

// escapeScript tries, from inside a sandbox, what the attack review of the
// sandbox did, and prints what it got. Opening a kernel file for appending
// and writing nothing changes nothing, even where it succeeds; the one
// real write is of a harmless sysctl, which the test restores.
const escapeScript = `
echo "uid=$(id -u) gid=$(id -g)"
echo "uid_map=$(tr -s ' ' < /proc/self/uid_map)"
grep -E '^Cap(Prm|Eff|Bnd|Amb):' /proc/self/status | tr -d '\t' | tr ':' '='
for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/printk_ratelimit /proc/sys/vm/drop_caches /proc/sysrq-trigger; do
	( : >> "$f" ) 2>/dev/null && echo "opened=$f"
done
echo "$1" > /proc/sys/kernel/printk_ratelimit 2>/dev/null && echo "wrote=printk_ratelimit"
unshare --user true 2>/dev/null && echo "userns=made"
unshare --user --map-root-user true 2>/dev/null && echo "userns=made as root"
dd if=/dev/zero of=/dev/shm/fill bs=1M count=96 2>/dev/null
echo "shm_mb=$(( $(wc -c < /dev/shm/fill) >> 20 ))"
dd if=/dev/zero of=/tmp/fill bs=1M count=96 2>/dev/null
echo "tmp_mb=$(( $(wc -c < /tmp/fill) >> 20 ))"
echo done
`

// The attacks of the sandbox review, against a real bubblewrap, whoever
// Switchboard runs as: as root (a system service, a container's default
// user; CI runs so), the server must not be host root, whose uid is what
// /proc/sys and sysrq-trigger check, not capabilities; as an ordinary
// user, the same checks (the test runs itself again as nobody).
func TestSandboxedServerCannotEscape(t *testing.T) {
	rt := requireBwrap(t)
	if os.Getenv("SWITCHBOARD_ESCAPE_TEST_AS_USER") != "" {
		rt.StateDir = os.Getenv("SWITCHBOARD_ESCAPE_TEST_STATE")
	}
	hostValue := readSysctl("kernel/printk_ratelimit")
	n, err := strconv.Atoi(hostValue)
	if err != nil {
		t.Fatalf("kernel.printk_ratelimit: %q", hostValue)
	}
	attempt := strconv.Itoa(n + 1)
	t.Cleanup(func() {
		// Only a broken sandbox changed it: put it back.
		if readSysctl("kernel/printk_ratelimit") != hostValue {
			os.WriteFile("/proc/sys/kernel/printk_ratelimit", []byte(hostValue), 0)
		}
	})

	p, _ := Resolve(&sb.SandboxConfig{MemoryMB: 64, Workspace: sb.WorkspaceIsolated}, false)
	out, err := run(t, rt, p, Command{Path: "/bin/sh", Args: []string{"-c", escapeScript, "sh", attempt}},
		Env(func(string) string { return "" }, nil))
	if err != nil || !strings.HasSuffix(out, "done\n") {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[string][]string{}
	for line := range strings.Lines(out) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		got[k] = append(got[k], v)
	}
	t.Logf("as uid %d:\n%s", os.Geteuid(), out)

	// Not host root: the uid the host sees is not 0. As root there is no
	// user namespace (the map is the host's own), so the uid inside is
	// the host's.
	uid := strings.Fields(got["uid"][0])[0]
	if os.Geteuid() == 0 {
		if uid == "0" || got["uid_map"][0] != " 0 0 4294967295" {
			t.Errorf("as root, the server runs as uid %s with the uid map %q; want an unprivileged host uid", uid, got["uid_map"][0])
		}
		want, _, _ := rt.user()
		if uid != strconv.Itoa(int(want.Uid)) {
			t.Errorf("the server runs as uid %s, want the sandbox user's %d", uid, want.Uid)
		}
	} else if f := strings.Fields(got["uid_map"][0]); len(f) != 3 || f[2] != "1" || uid != strconv.Itoa(os.Geteuid()) {
		// One uid mapped, Switchboard's own (bwrap's namespace for
		// --disable-userns maps it through one of its own: the middle
		// field is that namespace's).
		t.Errorf("the server runs as uid %s with the uid map %q; want Switchboard's own uid %d, alone", uid, got["uid_map"][0], os.Geteuid())
	}
	for _, c := range []string{"CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if v := got[c]; len(v) != 1 || v[0] != "0000000000000000" {
			t.Errorf("%s = %v; want no capabilities", c, v)
		}
	}
	if len(got["opened"]) > 0 {
		t.Errorf("kernel files open for writing: %v", got["opened"])
	}
	if len(got["wrote"]) > 0 || readSysctl("kernel/printk_ratelimit") != hostValue {
		t.Errorf("the server wrote kernel.printk_ratelimit (host value %s, now %s)", hostValue, readSysctl("kernel/printk_ratelimit"))
	}
	if len(got["userns"]) > 0 {
		t.Errorf("the server made user namespaces: %v", got["userns"])
	}
	// /dev/shm and /tmp are memory: each is bounded by the memory limit.
	for _, k := range []string{"shm_mb", "tmp_mb"} {
		if mb, err := strconv.Atoi(got[k][0]); err != nil || mb > 64 {
			t.Errorf("%s = %v; want at most the 64 MB memory limit", k, got[k])
		}
	}

	if os.Geteuid() == 0 && os.Getenv("SWITCHBOARD_ESCAPE_TEST_AS_USER") == "" {
		t.Run("as an ordinary user", func(t *testing.T) { runAsNobody(t, "TestSandboxedServerCannotEscape") })
	}
}

// runAsNobody runs the test named test of this binary again as nobody,
// with a state directory nobody can use, and fails if it fails.
func runAsNobody(t *testing.T, test string) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // testing's own directory for the test
	bin := filepath.Join(dir, "sandbox.test")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil || os.WriteFile(bin, data, 0o755) != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o700)
	os.Chown(state, nobodyID, nobodyID)
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SWITCHBOARD_ESCAPE_TEST_AS_USER=1",
		"SWITCHBOARD_ESCAPE_TEST_STATE=" + state, "SWITCHBOARD_SANDBOX_REQUIRED=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID}, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.Contains(out.String(), "no tests to run") {
		t.Fatalf("as nobody: %v\n%s", err, out.String())
	}
}
