package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file works out, from the command a config names, what of the host
// its process needs to see: the derived mounts. A sandbox shows only the
// system directories, and real servers live elsewhere more often than not:
// a project's node_modules/.bin link into the package tree, an interpreter
// behind a pyenv or asdf shim, a venv, an nvm, volta or uv install, a
// script's #! interpreter. Each is found by reading the host's files (links,
// the first line of a script, a venv's pyvenv.cfg) and mounted read-only at
// its own path. Arguments that are absolute host paths (a filesystem
// server's directories) are mounted read-only too.
//
// It runs when a config is written (the registry's Create and Update), not
// at spawn: what a server sees is in its stored config, where a person can
// read it, and does not change behind their back when a file on the host
// does. It never mounts the user's home, their config or state
// directories, Switchboard's own, or /: those are refused, and said to be.

// Host is what derivation must know of the machine.
type Host struct {
	// Home is the home directory of the user Switchboard runs as. It is
	// never mounted, nor any directory that holds it; what is inside it
	// may be.
	Home string
	// Homes are the home directories of the machine's other people (root
	// and the accounts of /etc/passwd with a uid of 1000 or more), refused
	// as Home is: a daemon running as a service user must not mount the
	// home of the desktop user whose import named it.
	Homes []string
	// Private maps directories that are never mounted, nor anything
	// inside or above them, to what they are ("the user's config
	// directory").
	Private map[string]string
}

// HostOf returns the Host of this process: its home directory and those
// of the machine's people, each with its config, state and credential
// directories private (~/.config, ~/.local/state, ~/.ssh, ~/.gnupg,
// ~/.aws, and $XDG_CONFIG_HOME and $XDG_STATE_HOME where set), and each of
// own (Switchboard's state directory, its database's directory) private
// too.
func HostOf(own ...string) Host {
	h := Host{Private: map[string]string{}}
	private := func(dir, what string) {
		if filepath.IsAbs(dir) {
			h.Private[filepath.Clean(dir)] = what
		}
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir // a service started without HOME
		}
	}
	if filepath.IsAbs(home) && filepath.Clean(home) != "/" {
		h.Home = filepath.Clean(home)
	}
	for _, d := range passwdHomes() {
		if d != h.Home {
			h.Homes = append(h.Homes, d)
		}
	}
	for _, d := range append([]string{h.Home}, h.Homes...) {
		if d == "" {
			continue
		}
		private(filepath.Join(d, ".config"), "the user's config directory")
		private(filepath.Join(d, ".local", "state"), "the user's state directory")
		private(filepath.Join(d, ".ssh"), "the user's SSH keys")
		private(filepath.Join(d, ".gnupg"), "the user's GnuPG keys")
		private(filepath.Join(d, ".aws"), "the user's AWS credentials")
	}
	private(os.Getenv("XDG_CONFIG_HOME"), "the user's config directory")
	private(os.Getenv("XDG_STATE_HOME"), "the user's state directory")
	for _, d := range own {
		private(d, "Switchboard's own directory (its state or its database)")
	}
	return h
}

// passwdHomes returns the home directories of root and of the accounts of
// /etc/passwd with a uid of at least 1000 (people, not services), except
// nobody's.
func passwdHomes() []string {
	b, err := readHead("/etc/passwd", 4<<20)
	if err != nil {
		return nil
	}
	var homes []string
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) < 7 {
			continue
		}
		uid, err := strconv.Atoi(f[2])
		home := filepath.Clean(f[5])
		if err != nil || uid != 0 && (uid < 1000 || uid == 65534) || !filepath.IsAbs(f[5]) || home == "/" {
			continue
		}
		if !slices.Contains(homes, home) {
			homes = append(homes, home)
		}
	}
	return homes
}

// Apply sets the derived and refused mounts of cfg from its command and
// arguments (see [Derive]), replacing any it had. A config that needs none
// is left with no sandbox field if it had nothing else there.
func Apply(cfg *sb.ServerConfig, h Host) {
	wasDefault := cfg.Sandbox.Derived()
	mounts, refused := Derive(cfg, h)
	if cfg.Sandbox == nil {
		if len(mounts) == 0 && len(refused) == 0 {
			return
		}
		cfg.Sandbox = &sb.SandboxConfig{}
	}
	cfg.Sandbox.DerivedMounts, cfg.Sandbox.RefusedMounts = mounts, refused
	if wasDefault && !cfg.Sandbox.Derived() {
		cfg.Sandbox = nil // it held derived mounts only, and now none
	}
}

// Derive returns the host paths cfg's process needs, to be mounted
// read-only at their own paths, and those it would need but that are
// refused, each with the reason. Nothing is derived for a server that is
// not stdio or whose sandbox is off, for paths the sandbox shows anyway
// (the system directories) or makes itself, or for paths inside one of
// cfg's own mounts. The command is looked up as a sandboxed spawn looks it
// up: on the PATH of cfg's env, else the sandbox's default PATH.
func Derive(cfg *sb.ServerConfig, h Host) (mounts, refused []sb.DerivedMount) {
	if !cfg.IsStdio() || cfg.Sandbox != nil && cfg.Sandbox.Enabled != nil && !*cfg.Sandbox.Enabled {
		return nil, nil
	}
	d := &deriver{host: h, path: defaultPath, env: cfg.Env}
	if v, ok := cfg.Env["PATH"]; ok {
		d.path = v
	}
	if cfg.Sandbox != nil {
		for _, m := range cfg.Sandbox.Mounts {
			if m.Path == "" {
				m.Path = m.Host
			}
			d.own = append(d.own, m)
		}
	}
	if exe := lookCommand(cfg.Command, d.path, cfg.Cwd); exe != "" {
		if real, err := filepath.EvalSymlinks(exe); err == nil && real == exe {
			d.command = exe // mounted by the sandbox itself (a link's target is not)
		}
		d.executable(exe, "the command", 0)
	}
	script := interpreters[strings.TrimRight(filepath.Base(cfg.Command), "0123456789.")]
	for i, a := range cfg.Args {
		if script && !strings.HasPrefix(a, "-") {
			// The script an interpreter runs imports what is beside it
			// (its package, its node_modules): its tree, as a command's.
			script = false
			if p := filepath.Clean(a); filepath.IsAbs(a) && !Provides(p) && isFile(p) {
				d.tree(p, fmt.Sprintf("the script of argument %d", i+1))
				continue
			}
		}
		d.arg(i, a)
	}
	return d.result()
}

// interpreters are the commands whose first argument that is not a flag
// is a script they run (python3.11 and node20 count by their stem).
var interpreters = map[string]bool{"node": true, "nodejs": true, "python": true, "python3": true, "pypy3": true,
	"deno": true, "bun": true, "ruby": true, "perl": true, "php": true, "sh": true, "bash": true}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// deriver collects the mounts of one config.
type deriver struct {
	host    Host
	path    string            // the sandbox's PATH
	env     map[string]string // the config's env
	own     []sb.Mount        // the config's own mounts
	command string            // the command's path, if it is no link
	mounts  []sb.DerivedMount
	refused []sb.DerivedMount
}

// maxHops bounds the links followed and the interpreters chained, so that
// a loop of links or of #! lines ends.
const maxHops = 16

// executable derives what running the file p needs: the tree it lives in
// (following links to where they lead), every venv on the way, and the
// interpreter its #! line names. why says what p is, for the reasons.
func (d *deriver) executable(p, why string, depth int) {
	if depth > maxHops/2 {
		return
	}
	// Each hop of a link chain counts: a venv's bin/python is a link to
	// the interpreter the venv was made from, and the venv is needed too.
	hop := p
	for range maxHops {
		d.venv(hop)
		fi, err := os.Lstat(hop)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		t, err := os.Readlink(hop)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(hop), t)
		}
		hop = filepath.Clean(t)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return
	}
	if real != p {
		d.venv(real)
	}
	d.tree(real, why)
	d.interpreter(real, why, depth)
	d.shim(real, depth)
}

// shim derives the interpreter behind a pyenv-style shim (pyenv, rbenv,
// nodenv: ROOT/shims/NAME runs ROOT/versions/VERSION/bin/NAME, VERSION
// from $PYENV_VERSION (and kin) in the config's env, else ROOT/version).
// That interpreter may be a link out of the root (a version that is a
// link to another install), which the root's mount does not show.
func (d *deriver) shim(p string, depth int) {
	dir := filepath.Dir(p)
	if filepath.Base(dir) != "shims" {
		return
	}
	root := filepath.Dir(dir)
	version := ""
	for _, k := range []string{"PYENV_VERSION", "RBENV_VERSION", "NODENV_VERSION"} {
		if v := d.env[k]; v != "" {
			version, _, _ = strings.Cut(v, ":")
			break
		}
	}
	if version == "" {
		b, err := readHead(filepath.Join(root, "version"), 256)
		if err != nil {
			return
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			version = f[0]
		}
	}
	if version == "" || version == "system" || strings.Contains(version, "/") || version == ".." {
		return
	}
	real := filepath.Join(root, "versions", version, "bin", filepath.Base(p))
	if _, err := os.Stat(real); err == nil {
		d.executable(real, "the interpreter behind the shim "+p, depth+1)
	}
}

// tree mounts the install tree of the file p: a runtime's install root,
// the outermost node_modules, a venv, an install prefix (the parent of a
// bin directory), else p's directory. Where that tree is refused (it is
// the home directory, say), p's directory or p alone does instead.
func (d *deriver) tree(p, why string) {
	if visible(p, nil) {
		return
	}
	root, what := treeRoot(p)
	for _, c := range []struct{ path, what string }{
		{root, what}, {filepath.Dir(p), "the directory of " + why}, {p, why},
	} {
		if d.refusal(c.path) == "" {
			d.add(c.path, c.what+" ("+why+" is "+p+")")
			return
		}
	}
	if p == d.command {
		// The sandbox mounts the command itself in any case (argv.go):
		// what is refused is what lies beside it.
		dir := filepath.Dir(p)
		if !slices.ContainsFunc(d.refused, func(m sb.DerivedMount) bool { return m.Host == dir }) {
			d.refused = append(d.refused, sb.DerivedMount{Host: dir, Why: "the directory of the command (" + p + "): " + d.refusal(dir) +
				"; Switchboard mounts the command alone, never this directory"})
		}
		return
	}
	d.refuse(p, why+" ("+p+"): "+d.refusal(p))
}

// A layout is where a runtime manager keeps its installs: the path
// components that mark it (any one for "*") and how many of them the
// install root keeps.
type layout struct {
	marks []string
	keep  int
	what  string
}

// layouts are the runtime managers' trees, first match wins. A shim
// directory needs the manager's whole root (a pyenv shim runs pyenv
// itself, which picks the version); an install needs only its own tree.
var layouts = []layout{
	{[]string{".pyenv", "versions", "*"}, 3, "a pyenv Python install"},
	{[]string{".pyenv"}, 1, "pyenv's root (its shims run pyenv, which runs versions/*/bin)"},
	{[]string{".rbenv", "versions", "*"}, 3, "an rbenv Ruby install"},
	{[]string{".rbenv"}, 1, "rbenv's root (its shims run rbenv)"},
	{[]string{".nodenv", "versions", "*"}, 3, "a nodenv Node.js install"},
	{[]string{".nodenv"}, 1, "nodenv's root (its shims run nodenv)"},
	{[]string{".asdf", "installs", "*", "*"}, 4, "an asdf install"},
	{[]string{".asdf"}, 1, "asdf's root (its shims run asdf)"},
	{[]string{".nvm", "versions", "node", "*"}, 4, "an nvm Node.js install"},
	{[]string{".volta"}, 1, "Volta's root (its shims pick the tool at run time)"},
	{[]string{".local", "share", "uv", "tools", "*"}, 5, "a uv tool install"},
	{[]string{".local", "share", "uv", "python", "*"}, 5, "a uv-managed Python"},
	{[]string{".local", "share", "fnm", "node-versions", "*"}, 5, "an fnm Node.js install"},
	{[]string{"node_modules"}, 1, "the package tree (node_modules)"},
}

// treeRoot returns the install tree of the file p and what it is.
func treeRoot(p string) (string, string) {
	parts := strings.Split(p, string(filepath.Separator))
	for _, l := range layouts {
		for i := 1; i+len(l.marks) <= len(parts); i++ {
			if matches(parts[i:i+len(l.marks)], l.marks) && i+l.keep < len(parts) {
				return strings.Join(parts[:i+l.keep], string(filepath.Separator)), l.what
			}
		}
	}
	dir := filepath.Dir(p)
	if venvRoot(dir) != "" {
		return filepath.Dir(dir), "a Python venv"
	}
	if b := filepath.Base(dir); b == "bin" || b == "sbin" {
		return filepath.Dir(dir), "the install prefix"
	}
	return dir, "the directory"
}

func matches(parts, marks []string) bool {
	for i, m := range marks {
		if m != "*" && parts[i] != m {
			return false
		}
	}
	return true
}

// venvRoot returns the venv whose bin directory is dir, or "".
func venvRoot(dir string) string {
	if b := filepath.Base(dir); b != "bin" {
		return ""
	}
	root := filepath.Dir(dir)
	if fi, err := os.Stat(filepath.Join(root, "pyvenv.cfg")); err == nil && fi.Mode().IsRegular() {
		return root
	}
	return ""
}

// venv mounts the venv whose bin directory holds p, if any, and the
// interpreter tree it was made from (pyvenv.cfg's "home"): a venv made
// with --copies still reads its standard library there.
func (d *deriver) venv(p string) {
	root := venvRoot(filepath.Dir(p))
	if root == "" {
		return
	}
	if r := d.refusal(root); r != "" {
		d.refuse(root, "the Python venv of "+p+": "+r)
	} else {
		d.add(root, "a Python venv")
	}
	cfg, err := readHead(filepath.Join(root, "pyvenv.cfg"), 4096)
	if err != nil {
		return
	}
	for line := range strings.Lines(string(cfg)) {
		k, v, ok := strings.Cut(line, "=")
		if home := strings.TrimSpace(v); ok && strings.TrimSpace(k) == "home" && filepath.IsAbs(home) {
			if real, err := filepath.EvalSymlinks(home); err == nil {
				d.tree(filepath.Join(real, "python"), "the interpreter of the venv "+root)
			}
		}
	}
}

// interpreter derives the interpreter that the #! line of p names, found
// on the sandbox's PATH for "#!/usr/bin/env NAME".
func (d *deriver) interpreter(p, why string, depth int) {
	head, err := readHead(p, 256)
	if err != nil || !bytes.HasPrefix(head, []byte("#!")) {
		return
	}
	line, _, _ := bytes.Cut(head[2:], []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) == 0 {
		return
	}
	interp := f[0]
	if filepath.Base(interp) == "env" {
		interp = ""
		for _, a := range f[1:] {
			if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
				interp = lookCommand(a, d.path, "")
				break
			}
		}
	}
	if filepath.IsAbs(interp) {
		d.executable(interp, "the interpreter of "+why, depth+1)
	}
}

// arg mounts the i'th argument if it is an absolute path that exists on
// the host, alone or as the value of --flag=PATH.
func (d *deriver) arg(i int, a string) {
	if strings.HasPrefix(a, "-") {
		_, v, ok := strings.Cut(a, "=")
		if !ok {
			return
		}
		a = v
	}
	if !filepath.IsAbs(a) {
		return
	}
	p := filepath.Clean(a)
	why := fmt.Sprintf("argument %d", i+1)
	if p != "/" && Provides(p) {
		return
	}
	if _, err := os.Stat(p); err != nil {
		return // not a path of this machine, or not one yet
	}
	if r := d.refusal(p); r != "" {
		d.refuse(p, why+": "+r)
		return
	}
	d.add(p, why)
}

// refusal says why the host path p must not be mounted, or "".
func (d *deriver) refusal(p string) string {
	switch {
	case p == "/":
		return "it is the host's root"
	case d.host.Home != "" && p == d.host.Home:
		return "it is the home directory"
	case d.host.Home != "" && within(d.host.Home, p):
		return "it holds the home directory " + d.host.Home
	}
	for _, h := range d.host.Homes {
		switch {
		case p == h:
			return "it is a user's home directory"
		case within(h, p):
			return "it holds the home directory " + h
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(d.host.Private)) {
		what := d.host.Private[dir]
		switch {
		case p == dir:
			return fmt.Sprintf("it is %s", what)
		case within(p, dir):
			return fmt.Sprintf("it is inside %s, %s", dir, what)
		case within(dir, p):
			return fmt.Sprintf("it holds %s, %s", dir, what)
		}
	}
	return ""
}

// add mounts p read-only unless the sandbox or a mount shows it already.
func (d *deriver) add(p, why string) {
	if visible(p, d.own) {
		return
	}
	for _, m := range d.mounts {
		if within(p, m.Host) {
			return
		}
	}
	d.mounts = slices.DeleteFunc(d.mounts, func(m sb.DerivedMount) bool { return within(m.Host, p) })
	d.mounts = append(d.mounts, sb.DerivedMount{Host: p, Why: why})
}

func (d *deriver) refuse(p, why string) {
	if !slices.ContainsFunc(d.refused, func(m sb.DerivedMount) bool { return m.Host == p }) {
		d.refused = append(d.refused, sb.DerivedMount{Host: p, Why: why + "; Switchboard never mounts it"})
	}
}

// result returns the mounts and refusals sorted by path, nil when none.
func (d *deriver) result() (mounts, refused []sb.DerivedMount) {
	byHost := func(a, b sb.DerivedMount) int { return strings.Compare(a.Host, b.Host) }
	slices.SortFunc(d.mounts, byHost)
	slices.SortFunc(d.refused, byHost)
	if len(d.mounts) > maxDerived {
		d.mounts = d.mounts[:maxDerived]
	}
	if len(d.refused) > maxDerived {
		d.refused = d.refused[:maxDerived]
	}
	return d.mounts, d.refused
}

// maxDerived is the config's bound on derived mounts (64).
const maxDerived = 64

// lookCommand resolves command as a sandboxed spawn does (see
// upstream's lookPath): a command with a slash is a path, relative to cwd;
// any other is looked up on path. It returns "" if nothing is found.
func lookCommand(command, path, cwd string) string {
	executable := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
	}
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) {
			if cwd == "" {
				return ""
			}
			p = filepath.Join(cwd, p)
		}
		p, err := filepath.Abs(p)
		if err != nil || !executable(p) {
			return ""
		}
		return p
	}
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) && command != "" {
			if p := filepath.Join(dir, command); executable(p) {
				return p
			}
		}
	}
	return ""
}

// readHead returns at most n bytes from the start of the regular file p.
func readHead(p string, n int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// pathInText finds absolute paths in a message: after a space, a quote, a
// parenthesis, a colon or an equals sign, up to the next of those.
var pathInText = regexp.MustCompile(`(?:^|[\s'"(:=` + "`" + `])(/[^\s'"():,;` + "`" + `]+)`)

// HiddenPath returns a path that one of lines (a server's last stderr
// lines, "No such file or directory", "Cannot find module '/x'") names,
// that exists on the host, and that a sandbox of profile p does not show:
// most likely what the server failed on. It returns "" if there is none.
// The last line is looked at first, and the last path in a line.
func (p Profile) HiddenPath(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		found := pathInText.FindAllStringSubmatch(lines[i], -1)
		for j := len(found) - 1; j >= 0; j-- { // "x: exec: y: not found" failed on y
			m := found[j]
			c := filepath.Clean(strings.TrimRight(m[1], "."))
			if c == "/" || Provides(c) || visible(c, p.Mounts) {
				continue
			}
			if _, err := os.Lstat(c); err == nil {
				return c
			}
		}
	}
	return ""
}
