package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
)

// tree makes files under root: each key is a path relative to root; a
// value starting with "->" makes a symlink to the rest, any other a file
// with that content (executable), "/" a directory.
func tree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		v := files[name]
		var err error
		switch {
		case v == "/":
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(v, "->"):
			err = os.Symlink(strings.ReplaceAll(v[2:], "$ROOT", root), p)
		default:
			err = os.WriteFile(p, []byte(strings.ReplaceAll(v, "$ROOT", root)), 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// testHost is a Host whose home is root/home, with its config and state
// directories and root/state (Switchboard's) private.
func testHost(root string) Host {
	home := filepath.Join(root, "home")
	return Host{Home: home, Homes: []string{filepath.Join(root, "people", "me")}, Private: map[string]string{
		filepath.Join(home, ".config"):         "the user's config directory",
		filepath.Join(home, ".local", "state"): "the user's state directory",
		filepath.Join(home, ".ssh"):            "the user's SSH keys",
		filepath.Join(root, "state"):           "Switchboard's own directory",
	}}
}

func hosts(ms []sb.DerivedMount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Host)
	}
	return out
}

func TestDeriveFindsWhatACommandRuns(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	tree(t, root, map[string]string{
		// A project-local npm install: the .bin link leads into the
		// package tree, whose dependencies are beside it.
		"proj/node_modules/.bin/mcp-x":          "->../pkg-x/dist/index.js",
		"proj/node_modules/pkg-x/dist/index.js": "#!/usr/bin/env node\n",
		"proj/node_modules/dep/index.js":        "",
		// pyenv: a shim runs pyenv itself, which needs its whole root.
		"home/.pyenv/shims/python3":                        "#!/bin/sh\nexec \"$ROOT/home/.pyenv/libexec/pyenv\" exec python3 \"$@\"\n",
		"home/.pyenv/libexec/pyenv":                        "#!/bin/sh\n",
		"home/.pyenv/version":                              "3.11.7\n",
		"home/.pyenv/versions/3.11.7/bin/python3":          "\x7fELF",
		"home/.pyenv/versions/3.11.7/lib/python3.11/os.py": "",
		"home/.pyenv/versions/linked":                      "->$ROOT/opt/python",
		"opt/python/bin/python3":                           "\x7fELF",
		// A venv made from pyenv's Python: the venv and the
		// interpreter's install, not the rest of pyenv.
		"venv/pyvenv.cfg": "home = $ROOT/home/.pyenv/versions/3.11.7/bin\ninclude-system-site-packages = false\n",
		"venv/bin/python": "->$ROOT/home/.pyenv/versions/3.11.7/bin/python3",
		"venv/bin/server": "#!$ROOT/venv/bin/python\n",
		// nvm: a global package in the Node.js install.
		"home/.nvm/versions/node/v20.1.0/bin/node":                    "\x7fELF",
		"home/.nvm/versions/node/v20.1.0/bin/mcp-n":                   "->../lib/node_modules/n/index.js",
		"home/.nvm/versions/node/v20.1.0/lib/node_modules/n/index.js": "#!/usr/bin/env node\n",
		// A uv tool: its link in ~/.local/bin, its venv in uv's tools,
		// its Python in uv's pythons.
		"home/.local/bin/mcp-u":                                   "->../share/uv/tools/mcp-u/bin/mcp-u",
		"home/.local/share/uv/tools/mcp-u/bin/mcp-u":              "#!$ROOT/home/.local/share/uv/tools/mcp-u/bin/python\n",
		"home/.local/share/uv/tools/mcp-u/bin/python":             "->$ROOT/home/.local/share/uv/python/cpython-3.12/bin/python3.12",
		"home/.local/share/uv/tools/mcp-u/pyvenv.cfg":             "home = $ROOT/home/.local/share/uv/python/cpython-3.12/bin\n",
		"home/.local/share/uv/python/cpython-3.12/bin/python3.12": "\x7fELF",
		// A script in the home directory itself: only the file.
		"home/server.py": "#!/usr/bin/python3\n",
		// A tool in ~/bin: ~/bin, since its prefix would be the home.
		"home/bin/tool": "\x7fELF",
		// Volta's shims pick the tool at run time: its root.
		"home/.volta/bin/node":                     "\x7fELF",
		"home/.volta/tools/image/node/20/bin/node": "\x7fELF",
		// Inside the config directory: refused.
		"home/.config/evil/server": "\x7fELF",
	})
	nvmBin := filepath.Join(home, ".nvm/versions/node/v20.1.0/bin")
	for _, tc := range []struct {
		name, command string
		args          []string
		env           map[string]string
		want          []string
		refused       []string
	}{
		{name: "node_modules link", command: root + "/proj/node_modules/.bin/mcp-x",
			want: []string{root + "/proj/node_modules"}},
		{name: "pyenv shim", command: home + "/.pyenv/shims/python3",
			want: []string{home + "/.pyenv"}},
		{name: "pyenv shim of a version linked elsewhere", command: home + "/.pyenv/shims/python3",
			env:  map[string]string{"PYENV_VERSION": "linked"},
			want: []string{home + "/.pyenv", root + "/opt/python"}},
		{name: "venv console script", command: root + "/venv/bin/server",
			want: []string{home + "/.pyenv/versions/3.11.7", root + "/venv"}},
		{name: "nvm global package on PATH", command: "mcp-n", env: map[string]string{"PATH": nvmBin + ":/usr/bin"},
			want: []string{home + "/.nvm/versions/node/v20.1.0"}},
		{name: "uv tool", command: home + "/.local/bin/mcp-u",
			want: []string{home + "/.local/share/uv/python/cpython-3.12", home + "/.local/share/uv/tools/mcp-u"}},
		{name: "script in the home directory", command: home + "/server.py",
			want: []string{home + "/server.py"}},
		{name: "tool in ~/bin", command: home + "/bin/tool",
			want: []string{home + "/bin"}},
		{name: "volta shim", command: home + "/.volta/bin/node",
			want: []string{home + "/.volta"}},
		// The sandbox mounts the command alone: its directory is what is
		// refused.
		{name: "inside the config directory", command: home + "/.config/evil/server",
			refused: []string{home + "/.config/evil"}},
		{name: "system command", command: "sh"},
		{name: "script of an interpreter in node_modules", command: "node",
			args: []string{"--enable-source-maps", root + "/proj/node_modules/pkg-x/dist/index.js", root + "/venv/pyvenv.cfg"},
			want: []string{root + "/proj/node_modules", root + "/venv/pyvenv.cfg"}},
		{name: "script of an interpreter in the home directory", command: "python3", args: []string{home + "/server.py"},
			want: []string{home + "/server.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &sb.ServerConfig{Name: "x", Transport: sb.TransportStdio, Command: tc.command, Args: tc.args, Env: tc.env}
			mounts, refused := Derive(cfg, testHost(root))
			if got := hosts(mounts); !slices.Equal(got, tc.want) {
				t.Errorf("mounts = %q (%v), want %q", got, mounts, tc.want)
			}
			if got := hosts(refused); !slices.Equal(got, tc.refused) {
				t.Errorf("refused = %q (%v), want %q", got, refused, tc.refused)
			}
		})
	}
}

func TestDeriveMountsPathArgumentsAndRefusesTheDangerousOnes(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	tree(t, root, map[string]string{
		"home/files/a.txt":     "a",
		"home/.ssh/id_ed25519": "key",
		"home/.config/x":       "",
		"state/switchboard.db": "",
		"data/in/b.txt":        "b",
		"people/me/x":          "",
		"other/c.txt":          "c",
	})
	cfg := &sb.ServerConfig{Name: "fs", Transport: sb.TransportStdio, Command: "npx",
		Args: []string{"-y", "@modelcontextprotocol/server-filesystem",
			home + "/files", home, home + "/.ssh", "/", root + "/state", "--root=" + root + "/data",
			root + "/data/in", "/usr/share", root + "/missing", "relative/path", root + "/other/c.txt",
			home + "/files/", root + "/people/me", root + "/people"}}
	mounts, refused := Derive(cfg, testHost(root))
	if got, want := hosts(mounts), []string{root + "/data", home + "/files", root + "/other/c.txt"}; !slices.Equal(got, want) {
		t.Errorf("mounts = %q, want %q", got, want)
	}
	if got, want := hosts(refused), []string{"/", root + "/home", home + "/.ssh", root + "/people", root + "/people/me", root + "/state"}; !slices.Equal(got, want) {
		t.Errorf("refused = %q, want %q", got, want)
	}
	for _, r := range refused {
		if !strings.Contains(r.Why, "argument") || !strings.Contains(r.Why, "never mounts") {
			t.Errorf("refusal of %s does not say which argument and that it is never mounted: %q", r.Host, r.Why)
		}
	}
	// A mount of the user's own at the same path widens the derived one:
	// no derived mount is left beside it.
	cfg.Sandbox = &sb.SandboxConfig{Mounts: []sb.Mount{{Host: home + "/files", Mode: sb.MountReadWrite}}}
	mounts, _ = Derive(cfg, testHost(root))
	if got, want := hosts(mounts), []string{root + "/data", root + "/other/c.txt"}; !slices.Equal(got, want) {
		t.Errorf("with --mount %s/files:rw, mounts = %q, want %q", home, got, want)
	}
	cfg.Sandbox.DerivedMounts = mounts
	p, _ := Resolve(cfg.Sandbox, true)
	want := []sb.Mount{{Host: root + "/data", Path: root + "/data", Mode: "ro"},
		{Host: home + "/files", Path: home + "/files", Mode: "rw"},
		{Host: root + "/other/c.txt", Path: root + "/other/c.txt", Mode: "ro"}}
	if !slices.Equal(p.Mounts, want) {
		t.Errorf("profile mounts = %v, want %v", p.Mounts, want)
	}
}

func TestApplyKeepsADefaultConfigDefault(t *testing.T) {
	root := t.TempDir()
	tree(t, root, map[string]string{"data/x": ""})
	h := testHost(root)
	cfg := &sb.ServerConfig{Name: "x", Transport: sb.TransportStdio, Command: "sh"}
	Apply(cfg, h)
	if cfg.Sandbox != nil {
		t.Fatalf("a system command got a sandbox field: %+v", cfg.Sandbox)
	}
	cfg.Args = []string{root + "/data"}
	Apply(cfg, h)
	if cfg.Sandbox == nil || !cfg.Sandbox.Derived() || len(cfg.Sandbox.DerivedMounts) != 1 {
		t.Fatalf("sandbox = %+v, want derived mounts only", cfg.Sandbox)
	}
	// Derived mounts alone do not sandbox a server where the embedder
	// applies no default; they do where it does.
	if _, ok := Resolve(cfg.Sandbox, false); ok {
		t.Error("derived mounts alone made a sandbox where no default applies")
	}
	if p, ok := Resolve(cfg.Sandbox, true); !ok || len(p.Mounts) != 1 {
		t.Errorf("Resolve = %+v, %t; want the derived mount", p, ok)
	}
	cfg.Args = nil
	Apply(cfg, h)
	if cfg.Sandbox != nil {
		t.Errorf("with nothing derived any more, sandbox = %+v, want none", cfg.Sandbox)
	}
	cfg.Args = []string{root + "/data"}
	cfg.Sandbox = &sb.SandboxConfig{Enabled: new(false)}
	Apply(cfg, h)
	if len(cfg.Sandbox.DerivedMounts) != 0 {
		t.Errorf("an unsandboxed server got derived mounts: %+v", cfg.Sandbox.DerivedMounts)
	}
}

// BenchmarkDerive measures one write's derivation for a project-local npm
// server with a directory argument (links followed, the #! read, the
// argument stat'ed).
func BenchmarkDerive(b *testing.B) {
	root := b.TempDir()
	tree(b, root, map[string]string{
		"proj/node_modules/.bin/mcp-x":          "->../pkg-x/dist/index.js",
		"proj/node_modules/pkg-x/dist/index.js": "#!/usr/bin/env node\n",
		"data/a.txt":                            "",
	})
	cfg := &sb.ServerConfig{Name: "x", Transport: sb.TransportStdio, Command: root + "/proj/node_modules/.bin/mcp-x",
		Args: []string{root + "/data"}}
	h := HostOf()
	for b.Loop() {
		if m, _ := Derive(cfg, h); len(m) != 2 {
			b.Fatalf("mounts %v", m)
		}
	}
}
