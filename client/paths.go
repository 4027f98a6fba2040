package client

import (
	"path/filepath"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
)

// ResolvePaths makes the relative paths of a stdio config absolute against
// dir, the directory of the person who typed them, before the config goes
// to a daemon: the daemon runs in a directory of its own, where "./mytool"
// is another file or none. A relative cwd is taken against dir; a command
// with a slash is a path, taken against the cwd if there is one (as the
// daemon would) and against dir otherwise. A command without a slash is a
// name the daemon looks up in the server's PATH (its env's, else the
// daemon's own) and is left as it is.
func ResolvePaths(cfg *sb.ServerConfig, dir string) {
	if !cfg.IsStdio() {
		return
	}
	if cfg.Cwd != "" && !filepath.IsAbs(cfg.Cwd) {
		cfg.Cwd = filepath.Join(dir, cfg.Cwd)
	}
	if strings.Contains(cfg.Command, "/") && !filepath.IsAbs(cfg.Command) {
		base := dir
		if cfg.Cwd != "" {
			base = cfg.Cwd
		}
		cfg.Command = filepath.Join(base, cfg.Command)
	}
}
