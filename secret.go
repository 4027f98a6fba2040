package switchboard

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// SecretMask replaces every secret value (env and header values, the OAuth
// client secret) on reads.
// A write that sends it back keeps the stored value.
const SecretMask = "***"

// Masked returns a copy of c with every env and header value and the OAuth
// client secret replaced by SecretMask, and the credentials in its URL (a userinfo password,
// credential-like query parameters) and its arguments (MaskArgs) too.
func (c *ServerConfig) Masked() *ServerConfig {
	m := c.Clone()
	m.URL = MaskURL(c.URL)
	m.Args = MaskArgs(c.Args)
	for k := range m.Env {
		m.Env[k] = SecretMask
	}
	for k := range m.Headers {
		m.Headers[k] = SecretMask
	}
	if m.OAuth != nil && m.OAuth.ClientSecret != "" {
		m.OAuth.ClientSecret = SecretMask
	}
	return m
}

// Unmask returns a copy of c in which every value equal to SecretMask is
// replaced by the value stored under the same key in prev. A masked value
// with no stored counterpart is an error: the caller sent back a mask for a
// secret that does not exist. So is a masked value for a new destination:
// a stored secret goes only where it went before (the same URL origin, the
// same command and arguments), or changing the URL of a server would hand
// its stored credentials to whoever runs the new one.
func (c *ServerConfig) Unmask(prev *ServerConfig) (*ServerConfig, error) {
	out := c.Clone()
	if err := unmaskArgs(out, prev); err != nil {
		return nil, err
	}
	moved := ""
	if prev != nil {
		moved = movedDestination(prev, out)
	}
	restore := func(field string, dst, src map[string]string) error {
		for k, v := range dst {
			if v != SecretMask {
				continue
			}
			old, ok := src[k]
			switch {
			case !ok:
				return &ValidationError{Fields: []*FieldError{{Field: field,
					Message: "value of " + k + ` is "***" but no secret is stored under that name`}}}
			case moved != "":
				return &ValidationError{Fields: []*FieldError{{Field: field,
					Message: "value of " + k + ` is "***" but the ` + moved + ` changed: a stored secret is kept only for the same destination; send the value again`}}}
			}
			dst[k] = old
		}
		return nil
	}
	var penv, phdr map[string]string
	if prev != nil {
		penv, phdr = prev.Env, prev.Headers
		// A URL sent back as it was shown keeps its stored credentials.
		if out.URL != prev.URL && out.URL == MaskURL(prev.URL) {
			out.URL = prev.URL
		}
	}
	if err := restore("env", out.Env, penv); err != nil {
		return nil, err
	}
	if err := restore("headers", out.Headers, phdr); err != nil {
		return nil, err
	}
	if out.OAuth != nil && out.OAuth.ClientSecret == SecretMask {
		var stored map[string]string
		if prev != nil && prev.OAuth != nil && prev.OAuth.ClientSecret != "" {
			stored = map[string]string{"client_secret": prev.OAuth.ClientSecret}
		}
		secret := map[string]string{"client_secret": SecretMask}
		if err := restore("oauth", secret, stored); err != nil {
			return nil, err
		}
		out.OAuth.ClientSecret = secret["client_secret"]
	}
	return out, nil
}

// movedDestination names what makes c send its secrets somewhere other
// than prev did ("URL's origin", "command", "arguments", "transport", a
// loader-affecting variable, "sandbox"), or returns "" if they go to the
// same place. The same command is another destination when what it loads
// may change (LD_PRELOAD=/tmp/x.so, NODE_OPTIONS=--require ...: code of
// the writer's choosing runs with the secrets in its environment), or when
// its sandbox lets it reach more (turned off, more mounts, write access,
// the network).
func movedDestination(prev, c *ServerConfig) string {
	switch {
	case prev.Transport != c.Transport && (prev.IsStdio() || c.IsStdio()):
		return "transport"
	case c.IsStdio() && prev.Command != c.Command:
		return "command"
	case c.IsStdio() && !slices.Equal(prev.Args, c.Args):
		return "arguments"
	case !c.IsStdio() && origin(prev.URL) != origin(c.URL):
		return "URL's origin"
	}
	if !c.IsStdio() {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		if v := c.Env[k]; LoaderVariable(k) && v != SecretMask && v != prev.Env[k] {
			return "loader-affecting variable " + k
		}
	}
	if sandboxLoosened(prev.Sandbox, c.Sandbox) {
		return "sandbox (turned off or given more mounts, write access or the network)"
	}
	return ""
}

// loaderPrefixes and loaderNames are the environment variables that change
// what a command loads or runs before its own code: the dynamic loader's,
// and the interpreters' startup hooks.
var (
	loaderPrefixes = []string{"LD_", "DYLD_"}
	loaderNames    = []string{"NODE_OPTIONS", "NODE_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE",
		"PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "BASH_ENV", "ENV", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
		"JDK_JAVA_OPTIONS", "CLASSPATH", "GCONV_PATH", "PATH", "GIT_EXEC_PATH", "DENO_DIR", "BUN_OPTIONS", "NPM_CONFIG_PREFIX"}
)

// LoaderVariable reports whether the environment variable name changes
// what a command loads (LD_PRELOAD, NODE_OPTIONS, PYTHONPATH, ...).
func LoaderVariable(name string) bool {
	n := strings.ToUpper(name)
	return slices.Contains(loaderNames, n) || slices.ContainsFunc(loaderPrefixes, func(p string) bool { return strings.HasPrefix(n, p) })
}

// sandboxLoosened reports whether next lets a server reach more than prev:
// the sandbox off (or only where bubblewrap works, where it was required),
// the network where it had none, a mount it did not have, or write access
// where it could only read.
func sandboxLoosened(prev, next *SandboxConfig) bool {
	var p, n SandboxConfig
	if prev != nil {
		p = *prev
	}
	if next != nil {
		n = *next
	}
	rank := func(b *bool, nilRank int) int {
		switch {
		case b == nil:
			return nilRank
		case *b:
			return 2
		}
		return 0
	}
	// The network: none, an allowlist, everything (the default).
	netRank := func(nw *SandboxNetwork) int {
		switch {
		case nw == nil:
			return 2
		case nw.Off:
			return 0
		case len(nw.Allow) > 0:
			return 1
		}
		return 2
	}
	if rank(n.Enabled, 1) < rank(p.Enabled, 1) || netRank(n.Network) > netRank(p.Network) {
		return true
	}
	if netRank(n.Network) == 1 && netRank(p.Network) == 1 {
		for _, a := range n.Network.Allow {
			if !slices.Contains(p.Network.Allow, a) {
				return true // a destination the allowlist did not have
			}
		}
	}
	for _, m := range n.Mounts {
		if !slices.ContainsFunc(p.Mounts, func(o Mount) bool {
			return o.Host == m.Host && o.Path == m.Path && (o.Mode == MountReadWrite || m.Mode != MountReadWrite)
		}) {
			return true
		}
	}
	return false
}

// secretFlagRE matches the name of a flag whose value is a credential
// (--token, --api-key, --client-secret, --password), the value following
// it after "=" or as the next argument.
var secretFlagRE = regexp.MustCompile(`(?i)^--?(?:[a-z0-9]+[-_])*(?:token|api[-_]?key|apikey|key|secret|password|passwd|pwd|pass|auth|credentials?)$`)

// secretValuePrefixes begin the values of well-known credentials: OpenAI
// and Anthropic (sk-), GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_),
// Slack (xoxb-, xoxp-, xapp-), GitLab (glpat-), Switchboard's own tokens
// (sbt_).
var secretValuePrefixes = []string{"sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xoxb-", "xoxp-", "xapp-", "glpat-", "sbt_"}

// secretValue reports whether an argument looks like a credential by
// itself: a well-known prefix followed by a dozen characters or more.
func secretValue(arg string) bool {
	for _, p := range secretValuePrefixes {
		if rest, ok := strings.CutPrefix(arg, p); ok && len(rest) >= 12 {
			return true
		}
	}
	return false
}

// MaskArgs returns a copy of args with what looks like a credential
// replaced: the value of a credential-like flag (--token=x, or --api-key
// x), a value with a well-known credential prefix (sk-..., ghp_...), and
// the credentials of a URL (MaskURL). A false positive only hides an
// argument from views; a write that sends the masked arguments back keeps
// the stored ones.
func MaskArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch name, _, hasValue := strings.Cut(a, "="); {
		case hasValue && secretFlagRE.MatchString(name):
			out[i] = name + "=" + SecretMask
		case secretValue(a):
			out[i] = SecretMask
		case i > 0 && secretFlagRE.MatchString(args[i-1]) && !strings.HasPrefix(a, "-"):
			out[i] = SecretMask
		case strings.Contains(a, "://"):
			out[i] = MaskURL(a)
		}
	}
	return out
}

// argSecrets returns the parts of args that MaskArgs hides, for the
// Redactor.
func argSecrets(args []string) []string {
	var s []string
	masked := MaskArgs(args)
	for i, a := range args {
		if masked[i] == a {
			continue
		}
		if name, v, ok := strings.Cut(a, "="); ok && masked[i] == name+"="+SecretMask {
			s = append(s, v)
		} else if !strings.Contains(a, "://") {
			s = append(s, a)
		}
	}
	return s
}

// unmaskArgs puts back into out's arguments the stored ones of prev that
// a write sent as they were shown (masked). A masked argument that does
// not stand where the same argument was shown is an error.
func unmaskArgs(out, prev *ServerConfig) error {
	if !slices.ContainsFunc(out.Args, func(a string) bool { return strings.Contains(a, SecretMask) }) {
		return nil
	}
	var shown []string
	if prev != nil {
		shown = MaskArgs(prev.Args)
	}
	for i, a := range out.Args {
		if !strings.Contains(a, SecretMask) {
			continue
		}
		if i >= len(shown) || shown[i] != a || len(shown) != len(out.Args) {
			return &ValidationError{Fields: []*FieldError{{Field: "args",
				Message: fmt.Sprintf(`argument %d is masked ("***") but the stored arguments differ: a stored secret is kept only for the same arguments; send the value again`, i+1)}}}
		}
		out.Args[i] = prev.Args[i]
	}
	return nil
}

// origin returns the scheme, host and port of a URL, normalised, or the
// raw string if it does not parse.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// credentialWords are the parts of a name (a query parameter, mostly) that
// say its value is a credential. One list serves masking (MaskURL) and
// redaction (Redactor), so a view and a log line hide the same things.
const credentialWords = `token|key|secret|pass|pwd|auth|signature|sig|credential`

var (
	// credentialParam matches query parameter names that carry credentials.
	credentialParam = regexp.MustCompile(`(?i)(` + credentialWords + `)`)
	// userinfoRE and credentialQueryRE find the same credentials in free
	// text (an error message, a URL inside one).
	userinfoRE        = regexp.MustCompile(`(https?://)[^/@\s]+@`)
	credentialQueryRE = regexp.MustCompile(`(?i)([?&](?:[a-z0-9_-]*(?:` + credentialWords + `)[a-z0-9_-]*)=)[^&\s"']+`)
)

// MaskURL returns raw with its credentials replaced by SecretMask: the
// password of its userinfo (or the user name, when it comes alone: a token
// given as https://TOKEN@host), the values of credential-like query
// parameters, and path segments that look like keys (secretSegment). A
// string that does not parse as a URL is returned as is.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	// url.User and url.UserPassword would escape the mask ("%2A%2A%2A"):
	// a placeholder is put there instead, and replaced at the end.
	const mark = "switchboard-masked"
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), mark)
		} else if u.User.Username() != "" {
			u.User = url.User(mark)
		}
	}
	segs, masked := strings.Split(u.EscapedPath(), "/"), false
	for i, seg := range segs {
		if p, err := url.PathUnescape(seg); err == nil && secretSegment(p) {
			segs[i], masked = SecretMask, true
		}
	}
	if masked {
		u.RawPath = strings.Join(segs, "/")
		u.Path, _ = url.PathUnescape(u.RawPath)
	}
	if u.RawQuery != "" {
		// Value by value, in place: re-encoding would reorder the query.
		pairs := strings.Split(u.RawQuery, "&")
		for i, p := range pairs {
			k, _, ok := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); ok && err == nil && credentialParam.MatchString(name) {
				pairs[i] = k + "=" + SecretMask
			}
		}
		u.RawQuery = strings.Join(pairs, "&")
	}
	return strings.Replace(u.String(), mark+"@", SecretMask+"@", 1)
}

// secretSegment reports whether a URL path segment looks like a key rather
// than a name: 20 or more characters of a token alphabet, with both letters
// and digits. Hosted MCP servers put keys in paths
// (https://host/mcp/sk-ab12.../sse); a false positive only hides a name
// from views, which a write that sends the view back restores.
func secretSegment(seg string) bool {
	if len(seg) < 20 {
		return false
	}
	letters, digits := false, false
	for _, r := range seg {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letters = true
		case r == '-', r == '_', r == '.', r == '~':
		default:
			return false
		}
	}
	return letters && digits
}

// urlRE finds URLs in free text, for the Redactor.
var urlRE = regexp.MustCompile(`https?://[^\s"'<>]+`)

// Redactor removes a server's secrets from text shown to people (error
// messages, logs): every env and header value and the OAuth client secret
// of its config, URL userinfo,
// and credential-like query parameters. It is safe for concurrent use.
type Redactor struct{ secrets []string }

// minSecretLen avoids scrubbing short values ("1", "on") that would mangle
// every message while protecting nothing.
const minSecretLen = 4

// NewRedactor returns a redactor for cfg's secrets.
func NewRedactor(cfg *ServerConfig) *Redactor {
	var s []string
	for _, v := range cfg.Secrets() {
		if len(v) >= minSecretLen {
			s = append(s, v)
		}
	}
	// Longest first, so a secret containing another is removed whole.
	slices.SortFunc(s, func(a, b string) int { return len(b) - len(a) })
	return &Redactor{secrets: s}
}

// String returns s with every secret replaced by SecretMask.
func (r *Redactor) String(s string) string {
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, SecretMask)
	}
	// Most lines (a server's stderr, line by line) hold no URL and no
	// query: they skip the regexps, which cost a stdio server's every
	// logged line several allocations even when nothing matches.
	if strings.Contains(s, "://") { // what urlRE and userinfoRE start with
		s = urlRE.ReplaceAllStringFunc(s, MaskURL)
		s = userinfoRE.ReplaceAllString(s, "${1}"+SecretMask+"@")
	}
	if strings.ContainsAny(s, "?&") && strings.Contains(s, "=") { // what credentialQueryRE needs
		s = credentialQueryRE.ReplaceAllString(s, "${1}"+SecretMask)
	}
	return s
}
