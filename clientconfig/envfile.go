package clientconfig

import (
	"strings"
)

// maxEnvFileSize bounds an envFile read: a "dotenv" file larger than this is
// a wrong path, not a list of variables.
const maxEnvFileSize = 1 << 20

// parseEnvFile reads the dotenv subset that VS Code and Cursor accept for
// "envFile": one KEY=VALUE a line, blank lines and lines starting with '#'
// ignored, an optional leading "export ", values optionally in single quotes
// (literal) or double quotes (with \n, \r, \t, \" and \\ escapes), and a
// " #" comment after an unquoted value.
//
// On a malformed line it returns that line's 1-based number and no map; it
// never returns the line itself, which may hold a secret.
func parseEnvFile(data string) (map[string]string, int) {
	env := map[string]string{}
	for n, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line) // also drops a CR of CRLF files
		if line == "" || line[0] == '#' {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			line = strings.TrimSpace(rest)
		}
		key, val, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, n + 1
		}
		val, ok = envValue(strings.TrimSpace(val))
		if !ok {
			return nil, n + 1
		}
		env[key] = val // a later line wins, as in dotenv
	}
	return env, 0
}

// envValue decodes the right-hand side of one KEY=VALUE line.
func envValue(v string) (string, bool) {
	if v == "" {
		return "", true
	}
	switch v[0] {
	case '\'':
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 || !onlyComment(v[end+2:]) {
			return "", false
		}
		return v[1 : end+1], true
	case '"':
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			switch c := v[i]; c {
			case '"':
				return b.String(), onlyComment(v[i+1:])
			case '\\':
				if i+1 == len(v) {
					return "", false
				}
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				default: // \" and \\, and any other escaped byte as itself
					b.WriteByte(v[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", false // unterminated; multi-line values are not supported
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	if i := strings.Index(v, "\t#"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v), true
}

// onlyComment reports whether s, the text after a closing quote, is empty or
// a comment.
func onlyComment(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || s[0] == '#'
}
