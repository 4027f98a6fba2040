package switchboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Transport names a way to reach an MCP server.
type Transport string

const (
	// TransportStdio runs the server as a child process speaking
	// newline-delimited JSON-RPC on stdin and stdout.
	TransportStdio Transport = "stdio"
	// TransportRemote tries Streamable HTTP first and falls back to the
	// legacy HTTP+SSE transport when the server answers 400, 404 or 405.
	TransportRemote Transport = "remote"
	// TransportStreamableHTTP uses Streamable HTTP only.
	TransportStreamableHTTP Transport = "streamable-http"
	// TransportSSE uses the legacy HTTP+SSE transport only.
	TransportSSE Transport = "sse"
	// TransportInProcess is reported for a session connected to a server in
	// the same process (upstream.Options.Dial); it cannot be configured.
	TransportInProcess Transport = "in-process"
)

// Defaults for [ServerConfig] fields whose zero value means "the default".
const (
	DefaultStartupTimeoutStdio  = 120 * time.Second // package managers cold-start slowly
	DefaultStartupTimeoutRemote = 30 * time.Second
	DefaultCallTimeout          = 60 * time.Second
	DefaultMaxAttempts          = 4
	DefaultSlowRetry            = 60 * time.Second
)

// DefaultRetryDelays are the waits after the first, second and third failed
// attempt of a retry cycle.
var DefaultRetryDelays = []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}

// ServerConfig is one configured MCP server, as stored and as accepted by the
// API. The JSON field names are part of Switchboard's outward contract.
//
// Zero values mean "the default" wherever a default is documented, so a
// config decoded from `{"name":"x","transport":"stdio","command":"x"}` is
// complete. Use the accessor methods (StartupTimeout, CallTimeout, ...) to
// read effective values.
type ServerConfig struct {
	Name      string    `json:"name"`
	Enabled   *bool     `json:"enabled,omitempty"`
	Transport Transport `json:"transport"`

	// stdio only.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`

	// remote kinds only.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth, if set, says the server requires OAuth (oauth.go).
	OAuth *OAuthConfig `json:"oauth,omitempty"`

	StartupTimeoutMS  int64        `json:"startup_timeout_ms,omitempty"`
	CallTimeoutMS     int64        `json:"call_timeout_ms,omitempty"`
	MaxTotalTimeoutMS int64        `json:"max_total_timeout_ms,omitempty"`
	ProtocolVersion   string       `json:"protocol_version,omitempty"`
	Retry             *RetryConfig `json:"retry,omitempty"`

	// SessionScope says who shares the server's upstream session; empty
	// means SessionShared.
	SessionScope SessionScope `json:"session_scope,omitempty"`

	// Sandbox says how a stdio server is confined (bubblewrap). Nil means
	// the documented default profile, where the embedder applies it (see
	// upstream.Options.SandboxDefault).
	Sandbox *SandboxConfig `json:"sandbox,omitempty"`

	// Audit says what the audit log keeps of the server's calls beyond
	// what it always keeps (see AuditConfig). Nil: the defaults.
	Audit *AuditConfig `json:"audit,omitempty"`
}

// SandboxConfig confines a stdio server with bubblewrap: what of the host
// it sees, whether it reaches the network, where it may write, and how
// much it may use. Every zero field takes the default profile's value, so
// `{}` is the default profile and `{"network": false}` differs from it in
// one respect only.
//
// The default profile: the system directories (/usr, /bin, /lib*, /sbin
// and the parts of /etc that programs need to run and to reach the
// network) read-only; the user's home and the rest of the host hidden; a
// writable workspace of the server's own, which is also HOME and the
// working directory, at [SandboxWorkspacePath]; a private /tmp; a network
// namespace of its own with user-mode networking (the internet and DNS,
// not the host's loopback or its abstract unix sockets); memory 2048 MB
// and 512 processes; no CPU-time limit.
type SandboxConfig struct {
	// Enabled: nil runs the server sandboxed where bubblewrap works on
	// this machine and unsandboxed where it does not (the runtime view
	// says which); true runs it sandboxed or not at all (phase
	// sandbox_unavailable); false runs it unsandboxed.
	Enabled *bool `json:"enabled,omitempty"`
	// Network: nil (the default) or {} is the internet through user-mode
	// networking; see [SandboxNetwork] for false and an allowlist.
	Network *SandboxNetwork `json:"network,omitempty"`
	// Mounts are the host paths the server may see, beyond the system
	// directories: the user's own, as written.
	Mounts []Mount `json:"mounts,omitempty"`
	// DerivedMounts are the host paths the server's command needs, found
	// from it when the config is written (see sandbox.Derive): the
	// resolved executable's tree, the interpreter behind a shim or a
	// venv, a runtime's install root, and the absolute host paths among
	// the arguments. Always read-only (a mount in Mounts at the same path
	// widens one). Computed, never taken from a request: every write
	// replaces them.
	DerivedMounts []DerivedMount `json:"derived_mounts,omitempty"`
	// RefusedMounts are the paths derivation would have mounted but
	// refuses to (the user's home, config or state directories,
	// Switchboard's own, /), each with the reason. Computed like
	// DerivedMounts.
	RefusedMounts []DerivedMount `json:"refused_mounts,omitempty"`
	// MemoryMB caps the server's memory: 0 means the default (2048), -1
	// none.
	MemoryMB int64 `json:"memory_mb,omitempty"`
	// Pids caps the processes in the sandbox: 0 means the default (512),
	// -1 none. Only a cgroup can enforce it; the runtime view says when
	// this machine cannot.
	Pids int64 `json:"pids,omitempty"`
	// CPUSeconds caps the CPU time of each process of the server (not a
	// rate): 0 or -1 means none, the default, since a long-lived server
	// accumulates CPU time for as long as it runs.
	CPUSeconds int64 `json:"cpu_seconds,omitempty"`
	// Workspace: "per-server" (the default, also when empty) gives the
	// server a workspace of its own, kept across its restarts and config
	// changes and removed with it; "shared" keeps one workspace for every
	// server with the same profile, which lets those servers run code in
	// each other (a planted usercustomize.py, a poisoned npx cache);
	// "isolated" gives each process a fresh one, removed when it stops.
	Workspace SandboxWorkspace `json:"workspace,omitempty"`
}

// SandboxNetwork is what of the network a sandboxed server reaches. In
// JSON it is true (the zero value: the internet and DNS through user-mode
// networking, from a network namespace of the sandbox's own, so that
// nothing listening on the host's loopback or on an abstract unix socket
// is reachable), false (Off: a loopback interface of its own, nothing
// outside), or {"allow": [...]}: the internet as with true, but only the
// destinations listed (and DNS), as [ParseNetworkAllow] reads them.
type SandboxNetwork struct {
	Off   bool
	Allow []string
}

// MarshalJSON writes n as false, true or {"allow": [...]}.
func (n SandboxNetwork) MarshalJSON() ([]byte, error) {
	switch {
	case n.Off:
		return []byte("false"), nil
	case len(n.Allow) == 0:
		return []byte("true"), nil
	}
	return json.Marshal(struct {
		Allow []string `json:"allow"`
	}{n.Allow})
}

// UnmarshalJSON reads true, false or {"allow": [...]}. An empty allow
// list is refused: it would read as "nothing" to one person and "no
// list" to another.
func (n *SandboxNetwork) UnmarshalJSON(b []byte) error {
	var on bool
	if err := json.Unmarshal(b, &on); err == nil {
		*n = SandboxNetwork{Off: !on}
		return nil
	}
	var obj struct {
		Allow []string `json:"allow"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf(`sandbox network must be true, false or {"allow": ["host[:port]", "cidr[:port]", ...]}: %w`, err)
	}
	if obj.Allow != nil && len(obj.Allow) == 0 {
		return fmt.Errorf(`sandbox network {"allow": []} allows nothing: write false for no network, true for all of it`)
	}
	*n = SandboxNetwork{Allow: obj.Allow}
	return nil
}

// NetworkAllow is one entry of a sandbox's network allowlist: a host name
// (resolved when the sandbox is created) or an IPv4 prefix, and a port (0
// for every port).
type NetworkAllow struct {
	Host   string       // a DNS name; empty when Prefix is set
	Prefix netip.Prefix // an IPv4 address (/32) or network
	Port   uint16
}

// hostnameRE is a DNS name: dot-separated labels of letters, digits and
// inner hyphens.
var hostnameRE = regexp.MustCompile(`^(?i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.(?i:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?))*$`)

// ParseNetworkAllow reads an allowlist entry: HOST, HOST:PORT, an IPv4
// address, ADDRESS:PORT, a CIDR (10.1.2.0/24) or CIDR:PORT. The sandbox's
// user-mode network is IPv4, so IPv6 is refused rather than ignored.
func ParseNetworkAllow(s string) (NetworkAllow, error) {
	var a NetworkAllow
	target := s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.Count(s, ":") > 1 || strings.HasPrefix(s, "[") {
			return a, fmt.Errorf("%q is IPv6; the sandbox's network is IPv4 only", s)
		}
		port, err := parsePort(s[i+1:])
		if err != nil {
			return a, fmt.Errorf("%q: %v", s, err)
		}
		target, a.Port = s[:i], port
	}
	if p, err := netip.ParsePrefix(target); err == nil {
		if !p.Addr().Is4() {
			return a, fmt.Errorf("%q is not an IPv4 network", s)
		}
		if p.Masked() != p {
			return a, fmt.Errorf("%q has host bits set; the network is %s", s, p.Masked())
		}
		a.Prefix = p
		return a, nil
	}
	if ip, err := netip.ParseAddr(target); err == nil {
		if !ip.Is4() {
			return a, fmt.Errorf("%q is not an IPv4 address", s)
		}
		a.Prefix = netip.PrefixFrom(ip, 32)
		return a, nil
	}
	if strings.Contains(target, "/") {
		return a, fmt.Errorf("%q is not a network such as 10.1.2.0/24", s)
	}
	if last := target[strings.LastIndexByte(target, '.')+1:]; len(target) > 253 || !hostnameRE.MatchString(target) ||
		strings.Trim(last, "0123456789") == "" {
		return a, fmt.Errorf("%q is not a host name, an IPv4 address or a CIDR, each with an optional :PORT", s)
	}
	a.Host = strings.ToLower(target)
	return a, nil
}

func parsePort(s string) (uint16, error) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 65535 {
			return 0, fmt.Errorf("the port must be a number from 1 to 65535")
		}
		n = n*10 + int(c-'0')
	}
	if s == "" || n < 1 || n > 65535 {
		return 0, fmt.Errorf("the port must be a number from 1 to 65535")
	}
	return uint16(n), nil
}

// String writes a as ParseNetworkAllow reads it.
func (a NetworkAllow) String() string {
	s := a.Host
	if s == "" {
		s = a.Prefix.String()
		if a.Prefix.IsSingleIP() {
			s = a.Prefix.Addr().String()
		}
	}
	if a.Port != 0 {
		s += ":" + fmt.Sprint(a.Port)
	}
	return s
}

// Mount makes a host path visible in a sandbox.
type Mount struct {
	Host string `json:"host"`           // absolute path on the host
	Path string `json:"path,omitempty"` // absolute path in the sandbox; empty means Host
	Mode string `json:"mode,omitempty"` // MountReadOnly (the default) or MountReadWrite
}

// DerivedMount is a host path that derivation mounts read-only at the
// same path in a sandbox, or refuses to, and why.
type DerivedMount struct {
	Host string `json:"host"`
	Why  string `json:"why"` // what needs it ("the command's package tree"), or why it is refused
}

// Derived reports whether s says nothing of its own: every field the
// user sets is zero and only the computed ones (DerivedMounts,
// RefusedMounts) may be set. Such a config is the default profile where
// the embedder applies it, as if it were nil. A nil s is derived.
func (s *SandboxConfig) Derived() bool {
	if s == nil {
		return true
	}
	own := *s
	own.DerivedMounts, own.RefusedMounts = nil, nil
	return reflect.DeepEqual(own, SandboxConfig{}) && (s.DerivedMounts != nil || s.RefusedMounts != nil)
}

// Mount modes.
const (
	MountReadOnly  = "ro"
	MountReadWrite = "rw"
)

// SandboxWorkspace says whose a sandbox's workspace is.
type SandboxWorkspace string

const (
	// WorkspacePerServer: one workspace per server, named after it, kept
	// across restarts and config changes, removed when the server is
	// deleted. The default.
	WorkspacePerServer SandboxWorkspace = "per-server"
	// WorkspaceShared: one workspace per profile, kept across restarts
	// and shared by every server whose sandbox looks the same (network,
	// mounts, limits): each can write what the others run.
	WorkspaceShared SandboxWorkspace = "shared"
	// WorkspaceIsolated: a fresh workspace per process, removed after it.
	// Test sessions always get one.
	WorkspaceIsolated SandboxWorkspace = "isolated"
)

// SandboxWorkspacePath is where a sandboxed server finds its workspace;
// HOME points there. A config can name it (e.g. in env) to put a file in
// the workspace.
const SandboxWorkspacePath = "/workspace"

// Limits of the sandbox config, so that a typo cannot ask for something
// absurd.
const (
	minSandboxMemoryMB = 16
	maxSandboxMemoryMB = 1 << 22 // 4 TiB
	maxSandboxPids     = 1 << 22
	maxSandboxCPU      = 1 << 31
	maxSandboxMounts   = 64
	maxSandboxAllow    = 64
)

// SessionScope says who shares a server's upstream session.
type SessionScope string

const (
	// SessionShared: one upstream session (one process, for stdio) serves
	// every client.
	SessionShared SessionScope = "shared"
	// SessionPerClient: each downstream MCP session gets an upstream
	// session of its own for its tool calls, so that a server's
	// elicitation and sampling requests reach the client whose call caused
	// them even where the transport cannot say which call that was
	// (stdio, legacy SSE).
	SessionPerClient SessionScope = "per-client"
)

// RetryConfig tunes a server's retry cycle. Zero fields take the defaults
// (4 attempts, 2/4/8 s, slow retry every 60 s doubling to 10 min).
type RetryConfig struct {
	MaxAttempts int     `json:"max_attempts,omitempty"`
	DelaysMS    []int64 `json:"delays_ms,omitempty"`
	SlowRetryMS int64   `json:"slow_retry_ms,omitempty"`
}

// IsEnabled reports whether the server should run; a missing field means true.
func (c *ServerConfig) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// MarshalJSON writes the view with "enabled" always present, true or
// false: a config may leave it out (meaning true), but a script that reads
// views (jq 'select(.enabled)') must not have to know that.
func (v ServerView) MarshalJSON() ([]byte, error) {
	type plain ServerView // without this method
	p := plain(v)
	on := v.IsEnabled()
	p.Enabled = &on
	// Without HTML escaping: the encoder that called this escapes (or
	// not) as it was told to.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// IsStdio reports whether the server runs as a child process.
func (c *ServerConfig) IsStdio() bool { return c.Transport == TransportStdio }

// StartupTimeout is how long Start waits for a first connection, and how long
// one connection attempt may take.
func (c *ServerConfig) StartupTimeout() time.Duration {
	if c.StartupTimeoutMS > 0 {
		return ms(c.StartupTimeoutMS)
	}
	if c.IsStdio() {
		return DefaultStartupTimeoutStdio
	}
	return DefaultStartupTimeoutRemote
}

// CallTimeout is the per-request timeout of a tool call that sets none.
func (c *ServerConfig) CallTimeout() time.Duration {
	if c.CallTimeoutMS > 0 {
		return ms(c.CallTimeoutMS)
	}
	return DefaultCallTimeout
}

// MaxTotalTimeout is the hard cap on one tool call; zero means no cap.
func (c *ServerConfig) MaxTotalTimeout() time.Duration { return ms(c.MaxTotalTimeoutMS) }

// MaxAttempts is the number of failed attempts before the session reports
// status error and falls back to the slow retry.
func (c *ServerConfig) MaxAttempts() int {
	if c.Retry != nil && c.Retry.MaxAttempts > 0 {
		return c.Retry.MaxAttempts
	}
	return DefaultMaxAttempts
}

// RetryDelays are the waits after each failed attempt of a cycle; the last
// one repeats if MaxAttempts exceeds their number.
func (c *ServerConfig) RetryDelays() []time.Duration {
	if c.Retry == nil || len(c.Retry.DelaysMS) == 0 {
		return DefaultRetryDelays
	}
	d := make([]time.Duration, len(c.Retry.DelaysMS))
	for i, v := range c.Retry.DelaysMS {
		d[i] = ms(v)
	}
	return d
}

// SlowRetry is the first wait of the background retry that runs once the
// fast retries are spent; it doubles up to [MaxSlowRetry].
func (c *ServerConfig) SlowRetry() time.Duration {
	if c.Retry != nil && c.Retry.SlowRetryMS > 0 {
		return ms(c.Retry.SlowRetryMS)
	}
	return DefaultSlowRetry
}

// MaxSlowRetry caps the doubling slow retry, so a server that comes back is
// noticed within ten minutes without anyone pressing a button.
const MaxSlowRetry = 10 * time.Minute

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// Limits on config values: a typo such as an extra three zeros must be
// refused rather than silently disabling a timeout for a month.
const (
	maxTimeoutMS    = int64(24 * time.Hour / time.Millisecond)
	maxRetryDelayMS = int64(time.Hour / time.Millisecond)
	maxAttempts     = 100
)

// IsName reports whether name is a valid name of a server, a toolset or a
// token: 1 to 48 of lowercase letters, digits and '-', not starting with
// '-'.
func IsName(name string) bool { return nameRE.MatchString(name) }

var (
	nameRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,47}$`)
	envKeyRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerKeyRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	versionRE   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// nameRule says what a name must be, with the nearest valid name to the
// one given, if there is one ("GitHub": "github").
func nameRule(name string) string {
	msg := "must be lowercase letters, digits and '-' (at most 48, the first a letter or digit)"
	if like := nameLike(name); like != "" && like != name {
		msg += fmt.Sprintf(": try %q", like)
	}
	return msg
}

// nameLike maps name onto the name rule: lowercased, each run of other
// characters one '-', '-' trimmed from both ends, cut to 48; "" if
// nothing is left.
func nameLike(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	s := b.String()
	if len(s) > 48 {
		s = strings.TrimRight(s[:48], "-")
	}
	return s
}

// FieldError is a validation failure of one config field.
type FieldError struct {
	Field   string // JSON name, e.g. "retry.delays_ms"
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ValidationError lists every invalid field of a config.
type ValidationError struct{ Fields []*FieldError }

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Error()
	}
	return "invalid server config: " + strings.Join(parts, "; ")
}

// Unwrap lets callers test for [ErrInvalidConfig].
func (e *ValidationError) Unwrap() error { return ErrInvalidConfig }

// Validate checks c against the contract and returns a *ValidationError
// naming every bad field, or nil.
func (c *ServerConfig) Validate() error {
	var fs []*FieldError
	bad := func(field, format string, args ...any) {
		fs = append(fs, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case c.Name == "":
		bad("name", "is required")
	case strings.Contains(c.Name, "__"):
		bad("name", `must not contain "__" (it separates server and tool in aggregated names)`)
	case !nameRE.MatchString(c.Name):
		bad("name", "%s", nameRule(c.Name))
	}
	switch c.Transport {
	case TransportStdio:
		if strings.TrimSpace(c.Command) == "" {
			bad("command", "is required for transport stdio")
		} else if strings.ContainsAny(c.Command, "\x00\n") {
			bad("command", "must not contain NUL or newline")
		}
		for k := range c.Env {
			if !envKeyRE.MatchString(k) {
				bad("env", "key %q is not a valid environment variable name", k)
			}
		}
		if c.URL != "" {
			bad("url", "is only valid for remote transports")
		}
		if len(c.Headers) > 0 {
			bad("headers", "are only valid for remote transports")
		}
	case TransportRemote, TransportStreamableHTTP, TransportSSE:
		if c.URL == "" {
			bad("url", "is required for transport %s", c.Transport)
		} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "must be an absolute http:// or https:// URL")
		}
		for k, v := range c.Headers {
			if !headerKeyRE.MatchString(k) {
				bad("headers", "%q is not a valid header name", k)
			}
			if strings.ContainsAny(v, "\r\n") {
				bad("headers", "value of %q must not contain CR or LF", k)
			}
		}
		if c.Command != "" || len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != "" {
			bad("command", "command, args, env and cwd are only valid for transport stdio")
		}
	case "":
		bad("transport", `is required: "stdio", "remote", "streamable-http" or "sse"`)
	default:
		bad("transport", `must be "stdio", "remote", "streamable-http" or "sse", not %q`, c.Transport)
	}
	// NUL cannot travel in an argv, an environment or an HTTP header, and
	// PostgreSQL's JSONB refuses it; bytes that are not UTF-8 would be
	// stored as U+FFFD and run as something else than was written. Refuse
	// both here, naming the field.
	noNUL := func(field string, vals ...string) {
		for _, v := range vals {
			if strings.ContainsRune(v, 0) {
				bad(field, "must not contain a NUL character")
				return
			}
			if !utf8.ValidString(v) {
				bad(field, "must be valid UTF-8")
				return
			}
		}
	}
	noNUL("name", c.Name)
	noNUL("command", c.Command)
	noNUL("args", c.Args...)
	noNUL("cwd", c.Cwd)
	noNUL("url", c.URL)
	noNUL("protocol_version", c.ProtocolVersion)
	for k, v := range c.Env {
		noNUL("env", k, v)
	}
	for k, v := range c.Headers {
		noNUL("headers", k, v)
	}
	checkMS := func(field string, v, max int64) {
		if v < 0 {
			bad(field, "must not be negative")
		} else if v > max {
			bad(field, "must be at most %d (%s)", max, ms(max))
		}
	}
	checkMS("startup_timeout_ms", c.StartupTimeoutMS, maxTimeoutMS)
	checkMS("call_timeout_ms", c.CallTimeoutMS, maxTimeoutMS)
	checkMS("max_total_timeout_ms", c.MaxTotalTimeoutMS, maxTimeoutMS)
	if c.ProtocolVersion != "" && !versionRE.MatchString(c.ProtocolVersion) {
		bad("protocol_version", `must be empty (auto) or a version date such as "2025-11-25"`)
	}
	switch c.SessionScope {
	case "", SessionShared, SessionPerClient:
	default:
		bad("session_scope", `must be "shared" (the default) or "per-client", not %q`, c.SessionScope)
	}
	if c.OAuth != nil {
		c.OAuth.validate(c.Transport != TransportStdio, bad)
	}
	if c.Sandbox != nil {
		if c.Transport != TransportStdio {
			bad("sandbox", "is only valid for transport stdio")
		}
		c.Sandbox.validate(bad)
	}
	if r := c.Retry; r != nil {
		if r.MaxAttempts < 0 || r.MaxAttempts > maxAttempts {
			bad("retry.max_attempts", "must be between 1 and %d (0 = default %d)", maxAttempts, DefaultMaxAttempts)
		}
		for i, d := range r.DelaysMS {
			if d < 0 || d > maxRetryDelayMS {
				bad(fmt.Sprintf("retry.delays_ms[%d]", i), "must be between 0 and %d", maxRetryDelayMS)
			}
		}
		if len(r.DelaysMS) > maxAttempts {
			bad("retry.delays_ms", "has more than %d entries", maxAttempts)
		}
		checkMS("retry.slow_retry_ms", r.SlowRetryMS, int64(MaxSlowRetry/time.Millisecond))
	}
	if len(fs) == 0 {
		return nil
	}
	return &ValidationError{Fields: fs}
}

// validate reports every bad field of s through bad.
func (s *SandboxConfig) validate(bad func(field, format string, args ...any)) {
	limit := func(field string, v, lo, hi int64) {
		if v != 0 && v != -1 && (v < lo || v > hi) {
			bad(field, "must be between %d and %d (0 = default, -1 = no limit)", lo, hi)
		}
	}
	limit("sandbox.memory_mb", s.MemoryMB, minSandboxMemoryMB, maxSandboxMemoryMB)
	limit("sandbox.pids", s.Pids, 1, maxSandboxPids)
	limit("sandbox.cpu_seconds", s.CPUSeconds, 1, maxSandboxCPU)
	switch s.Workspace {
	case "", WorkspacePerServer, WorkspaceShared, WorkspaceIsolated:
	default:
		bad("sandbox.workspace", `must be "per-server" (the default), "shared" or "isolated", not %q`, s.Workspace)
	}
	if n := s.Network; n != nil {
		if n.Off && len(n.Allow) > 0 {
			bad("sandbox.network", "is off and has an allowlist; give one or the other")
		}
		if len(n.Allow) > maxSandboxAllow {
			bad("sandbox.network.allow", "has more than %d entries", maxSandboxAllow)
		}
		for i, e := range n.Allow {
			if _, err := ParseNetworkAllow(e); err != nil {
				bad(fmt.Sprintf("sandbox.network.allow[%d]", i), "%v", err)
			}
		}
	}
	if len(s.Mounts) > maxSandboxMounts {
		bad("sandbox.mounts", "has more than %d entries", maxSandboxMounts)
	}
	if len(s.DerivedMounts) > maxSandboxMounts || len(s.RefusedMounts) > maxSandboxMounts {
		bad("sandbox.derived_mounts", "has more than %d entries", maxSandboxMounts)
	}
	for i, m := range s.DerivedMounts {
		if !path.IsAbs(m.Host) || path.Clean(m.Host) != m.Host || m.Host == "/" || strings.ContainsRune(m.Host, 0) {
			bad(fmt.Sprintf("sandbox.derived_mounts[%d]", i), "host must be an absolute path other than /, not %q", m.Host)
		}
	}
	seen := map[string]bool{}
	for i, m := range s.Mounts {
		field := fmt.Sprintf("sandbox.mounts[%d]", i)
		// Paths are compared and bound as written: a relative or unclean
		// one ("..", "//") would bind something else than it seems to.
		absClean := func(what, p string) bool {
			switch {
			case strings.ContainsRune(p, 0) || !utf8.ValidString(p):
				bad(field, "%s must be valid UTF-8 without NUL", what)
			case !path.IsAbs(p) || path.Clean(p) != p:
				bad(field, "%s must be an absolute path without . or .. components, not %q", what, p)
			default:
				return true
			}
			return false
		}
		if m.Host == "" {
			bad(field, "host is required")
		} else {
			absClean("host", m.Host)
		}
		dst := m.Path
		if dst == "" {
			dst = m.Host
		}
		if dst != "" && absClean("path", dst) {
			switch {
			case dst == "/":
				bad(field, "path must not be / (the sandbox's root is made of the system directories)")
			case within(dst, "/proc") || within(dst, "/dev"):
				bad(field, "path %s is inside /proc or /dev, which the sandbox provides itself", dst)
			case within(dst, SandboxWorkspacePath):
				bad(field, "path %s is inside the workspace (%s), which is the sandbox's own", dst, SandboxWorkspacePath)
			case seen[dst]:
				bad(field, "path %s is mounted twice", dst)
			}
			seen[dst] = true
		}
		switch m.Mode {
		case "", MountReadOnly, MountReadWrite:
		default:
			bad(field, `mode must be "ro" (the default) or "rw", not %q`, m.Mode)
		}
	}
}

// within reports whether path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Clone returns a deep copy of s.
func (s *SandboxConfig) Clone() *SandboxConfig {
	if s == nil {
		return nil
	}
	out := *s
	if s.Enabled != nil {
		v := *s.Enabled
		out.Enabled = &v
	}
	if s.Network != nil {
		out.Network = &SandboxNetwork{Off: s.Network.Off, Allow: slices.Clone(s.Network.Allow)}
	}
	out.Mounts = slices.Clone(s.Mounts)
	out.DerivedMounts = slices.Clone(s.DerivedMounts)
	out.RefusedMounts = slices.Clone(s.RefusedMounts)
	return &out
}

// Secrets returns every secret value of c (env and header values, the
// OAuth client secret), for
// scrubbing from messages and logs.
func (c *ServerConfig) Secrets() []string {
	var s []string
	for _, v := range c.Env {
		s = append(s, v)
	}
	for _, v := range c.Headers {
		s = append(s, v)
	}
	if c.OAuth != nil && c.OAuth.ClientSecret != "" {
		s = append(s, c.OAuth.ClientSecret)
	}
	return append(s, argSecrets(c.Args)...)
}

// Clone returns a deep copy of c.
func (c *ServerConfig) Clone() *ServerConfig {
	out := *c
	if c.Enabled != nil {
		v := *c.Enabled
		out.Enabled = &v
	}
	out.Args = slices.Clone(c.Args)
	out.Env = maps.Clone(c.Env)
	out.Headers = maps.Clone(c.Headers)
	if c.Retry != nil {
		r := *c.Retry
		r.DelaysMS = slices.Clone(c.Retry.DelaysMS)
		out.Retry = &r
	}
	out.Sandbox = c.Sandbox.Clone()
	out.OAuth = c.OAuth.Clone()
	if c.Audit != nil {
		a := *c.Audit
		out.Audit = &a
	}
	return &out
}
