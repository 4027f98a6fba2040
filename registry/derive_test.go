package registry_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/registry"
)

// These tests run real servers sandboxed with the default profile and no
// mounts in their configs: what they need is derived from their commands
// when the registry stores them (sandbox.Derive).

// createConnected creates cfg through the registry, as the API and the CLI
// do, and waits until it connects sandboxed with no mounts of its own.
func createConnected(t *testing.T, reg *registry.Registry, cfg *sb.ServerConfig) sb.ServerView {
	t.Helper()
	v, err := reg.Create(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v.Sandbox == nil || len(v.Sandbox.DerivedMounts) == 0 {
		t.Fatalf("%s: no derived mounts stored: %+v", cfg.Name, v.Sandbox)
	}
	t.Logf("%s: derived mounts %+v, refused %+v", cfg.Name, v.Sandbox.DerivedMounts, v.Sandbox.RefusedMounts)
	v = waitConnected(t, reg, cfg.Name)
	if v.Runtime.Sandbox == nil || !v.Runtime.Sandbox.Enabled {
		t.Fatalf("%s runs unsandboxed: %+v", cfg.Name, v.Runtime.Sandbox)
	}
	if len(v.Sandbox.Mounts) != 0 {
		t.Fatalf("%s has mounts of its own: %+v", cfg.Name, v.Sandbox.Mounts)
	}
	return v
}

func callText(t *testing.T, reg *registry.Registry, server, tool string, args map[string]any) string {
	t.Helper()
	s, ok := reg.Session(server)
	if !ok {
		t.Fatalf("no session of %s", server)
	}
	res, err := s.CallTool(context.Background(), tool, args, sb.InvokeOptions{})
	if err != nil {
		t.Fatalf("%s %s: %v", server, tool, err)
	}
	var text strings.Builder
	for _, c := range res.MustDecode().Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s %s: tool error %s", server, tool, text.String())
	}
	return text.String()
}

func hasTool(v sb.ServerView, name string) bool {
	for _, tl := range v.Runtime.Tools {
		if tl.Name == name {
			return true
		}
	}
	return false
}

// The npm servers installed in a project (the sandbox setup's cache is
// one), started from their node_modules/.bin links: the link leads into
// the package tree, which the sandbox must show.
func TestNPMServersFromAProjectRunSandboxedWithNoMounts(t *testing.T) {
	rt := sandboxRuntime(t)
	bin := filepath.Join(npmServers(t), "node_modules", ".bin")
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "hello.txt"), []byte("hello from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := sandboxRegistry(t, rt)
	everything := createConnected(t, reg, &sb.ServerConfig{Name: "everything", Transport: sb.TransportStdio,
		Command: filepath.Join(bin, "mcp-server-everything"), Env: nodeEnv(map[string]string{})})
	if !hasTool(everything, "echo") {
		t.Errorf("server-everything lists no echo tool: %+v", everything.Runtime.Tools)
	}
	files := createConnected(t, reg, &sb.ServerConfig{Name: "files", Transport: sb.TransportStdio,
		Command: filepath.Join(bin, "mcp-server-filesystem"), Args: []string{data}, Env: nodeEnv(map[string]string{})})
	if !hasTool(files, "read_text_file") {
		t.Errorf("server-filesystem lists no read_text_file tool: %+v", files.Runtime.Tools)
	}
	if text := callText(t, reg, "files", "read_text_file", map[string]any{"path": filepath.Join(data, "hello.txt")}); !strings.Contains(text, "hello from the host") {
		t.Errorf("read_text_file = %q", text)
	}
	// The directory argument is derived read-only: the server cannot
	// write through it.
	s, _ := reg.Session("files")
	res, err := s.CallTool(context.Background(), "write_file",
		map[string]any{"path": filepath.Join(data, "x.txt"), "content": "x"}, sb.InvokeOptions{})
	if err == nil && !res.IsError {
		t.Error("write_file through a derived (read-only) mount succeeded")
	}
	if _, err := os.Stat(filepath.Join(data, "x.txt")); err == nil {
		t.Error("the server wrote into the directory its argument names")
	}
}

// pythonMCP is the stdlib-only MCP server of testdata.
func pythonMCP(t *testing.T) string {
	p, err := filepath.Abs(filepath.Join("testdata", "mcpserver.py"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hostPython is the real python3 interpreter of this machine, behind any
// shim (pyenv's python3 is a script that runs pyenv).
func hostPython(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here")
	}
	out, err := exec.Command(sh, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("%s: %v", sh, err)
	}
	p, err := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPythonServersRunSandboxedWithNoMounts(t *testing.T) {
	rt := sandboxRuntime(t)
	server := pythonMCP(t)
	python := hostPython(t)
	reg := sandboxRegistry(t, rt)
	whoami := func(name string) map[string]string {
		var w map[string]string
		if err := json.Unmarshal([]byte(callText(t, reg, name, "whoami", map[string]any{})), &w); err != nil {
			t.Fatal(err)
		}
		return w
	}

	t.Run("venv", func(t *testing.T) {
		venv := filepath.Join(t.TempDir(), "venv")
		if out, err := exec.Command(python, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
			t.Fatalf("python3 -m venv: %v\n%s", err, out)
		}
		createConnected(t, reg, &sb.ServerConfig{Name: "venv", Transport: sb.TransportStdio,
			Command: filepath.Join(venv, "bin", "python"), Args: []string{server}})
		if w := whoami("venv"); w["prefix"] != venv {
			t.Errorf("the server runs in %q, not the venv %s", w["prefix"], venv)
		}
	})

	// A pyenv-style layout of its own, so that the test does not depend on
	// this machine's: the shim runs "pyenv exec", which picks the version
	// from the root's version file and runs that version's interpreter.
	t.Run("pyenv-style shim", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), ".pyenv")
		files := map[string]string{
			"shims/python3": "#!/bin/sh\nexport PYENV_ROOT=\"" + root + "\"\nexec \"" + root + "/libexec/pyenv\" exec python3 \"$@\"\n",
			"libexec/pyenv": "#!/bin/sh\n[ \"$1\" = exec ] || exit 2\nprog=$2; shift 2\nv=$(cat \"$PYENV_ROOT/version\")\n" +
				"exec \"$PYENV_ROOT/versions/$v/bin/$prog\" \"$@\"\n",
			"version": "3.99.0\n",
		}
		for name, text := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		bin := filepath.Join(root, "versions", "3.99.0", "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(python, filepath.Join(bin, "python3")); err != nil {
			t.Fatal(err)
		}
		v := createConnected(t, reg, &sb.ServerConfig{Name: "shim", Transport: sb.TransportStdio,
			Command: filepath.Join(root, "shims", "python3"), Args: []string{server}})
		if !derives(v, root) {
			t.Errorf("the shim's root %s is not among the derived mounts %+v", root, v.Sandbox.DerivedMounts)
		}
		if w := whoami("shim"); w["executable"] != filepath.Join(bin, "python3") {
			t.Errorf("the shim ran %q, not %s", w["executable"], filepath.Join(bin, "python3"))
		}
	})

	// This machine's own pyenv, where it has one.
	t.Run("pyenv", func(t *testing.T) {
		home, _ := os.UserHomeDir()
		shim := filepath.Join(home, ".pyenv", "shims", "python3")
		if _, err := os.Stat(shim); err != nil {
			t.Skip("no pyenv here")
		}
		createConnected(t, reg, &sb.ServerConfig{Name: "pyenv", Transport: sb.TransportStdio,
			Command: shim, Args: []string{server}})
		whoami("pyenv")
	})
}

func derives(v sb.ServerView, host string) bool {
	for _, m := range v.Sandbox.DerivedMounts {
		if m.Host == host {
			return true
		}
	}
	return false
}

// The registry's private directories (serve's database directory) are
// never derived, nor anything inside them; every write works the mounts
// out afresh, and a request cannot choose them.
func TestDerivedMountsAreRecomputedOnEveryWriteAndRefusePrivateDirs(t *testing.T) {
	private, data := t.TempDir(), t.TempDir()
	reg := registry.New(sqlitetest.Store(t), &registry.Options{PrivateDirs: []string{private}})
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Shutdown(context.Background()) })
	off := false
	cfg := &sb.ServerConfig{Name: "x", Transport: sb.TransportStdio, Command: "sh", Enabled: &off,
		Args:    []string{private, data},
		Sandbox: &sb.SandboxConfig{DerivedMounts: []sb.DerivedMount{{Host: "/etc", Why: "asked for"}}}}
	v, err := reg.Create(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s := v.Sandbox; s == nil || len(s.DerivedMounts) != 1 || s.DerivedMounts[0].Host != data ||
		len(s.RefusedMounts) != 1 || s.RefusedMounts[0].Host != private {
		t.Fatalf("sandbox %+v; want %s derived and %s refused, and not the /etc the request named", v.Sandbox, data, private)
	}
	cfg = v.ServerConfig.Clone()
	cfg.Args = nil
	if v, err = reg.Update(context.Background(), "x", cfg, v.Version); err != nil {
		t.Fatal(err)
	}
	if v.Sandbox != nil {
		t.Errorf("with no arguments left, sandbox %+v; want none", v.Sandbox)
	}
}
