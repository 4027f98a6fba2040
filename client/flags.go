package client

// This file parses what a person types for a server's config, as the
// CLI's flags take it: K=V pairs, headers, and host paths to mount. The
// errors quote the value, not the flag: the caller names it.

import (
	"fmt"
	"path/filepath"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
)

// ParseEnv parses environment values: K=V, or a bare K, which takes the
// value of K in this process's own environment (lookup), as "docker run
// -e K" does: a secret given so is not on the command line, which every
// local user can read. A bare K that is not set is refused.
func ParseEnv(pairs []string, lookup func(string) (string, bool)) (map[string]string, error) {
	var named []string
	for _, p := range pairs {
		k := strings.TrimSpace(p)
		if strings.Contains(p, "=") || k == "" {
			named = append(named, p)
			continue
		}
		v, ok := lookup(k)
		if !ok {
			return nil, fmt.Errorf("%s: %s is not set in this environment (give K=V, or set %s)", k, k, k)
		}
		named = append(named, k+"="+v)
	}
	return ParsePairs(named, "=")
}

// ParsePairs parses "K<sep>V" values into a map (nil for none), the keys
// and values trimmed; a value without sep or with an empty key is refused.
func ParsePairs(pairs []string, sep string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want K%sV", p, sep)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m, nil
}

// ParseMount parses a mount of a sandbox, HOST[:PATH][:ro|rw]. A relative
// HOST is taken from the working directory, as a shell user would mean it.
func ParseMount(v string) (sb.Mount, error) {
	parts := strings.Split(v, ":")
	var m sb.Mount
	if n := len(parts); n > 1 && (parts[n-1] == sb.MountReadOnly || parts[n-1] == sb.MountReadWrite) {
		m.Mode, parts = parts[n-1], parts[:n-1]
	}
	switch len(parts) {
	case 1:
	case 2:
		m.Path = parts[1]
	default:
		return m, fmt.Errorf("%q: want HOST, HOST:PATH, HOST:ro|rw or HOST:PATH:ro|rw", v)
	}
	if parts[0] == "" {
		return m, fmt.Errorf("%q: the host path is empty", v)
	}
	host, err := filepath.Abs(parts[0])
	if err != nil {
		return m, fmt.Errorf("%q: %w", v, err)
	}
	m.Host = host
	return m, nil
}

// ParseSelector parses a selector of a toolset, SERVER/ITEM[=EXPOSED],
// where item names what it picks (TOOL or PROMPT) in its error.
func ParseSelector(item, spec string) (sb.Selector, error) {
	server, rest, ok := strings.Cut(spec, "/")
	name, as, _ := strings.Cut(rest, "=")
	if !ok || server == "" || name == "" {
		return sb.Selector{}, fmt.Errorf("%q: want SERVER/%s or SERVER/%s=EXPOSED, such as github/search_* or fs/read_file=read", spec, item, item)
	}
	return sb.Selector{Server: server, Tool: name, As: as}, nil
}

// ParseResourceSelector parses a resource selector of a toolset,
// SERVER/URI, the URI a pattern or not.
func ParseResourceSelector(spec string) (sb.ResourceSelector, error) {
	server, uri, ok := strings.Cut(spec, "/")
	if !ok || server == "" || uri == "" {
		return sb.ResourceSelector{}, fmt.Errorf("%q: want SERVER/URI, such as fs/file:///repo/*", spec)
	}
	return sb.ResourceSelector{Server: server, URI: uri}, nil
}
