package switchboard

import (
	"encoding/json"
	"time"
)

// Status is the state of an upstream session.
type Status string

const (
	StatusConnecting Status = "connecting" // initial, between attempts, or reconnecting
	StatusConnected  Status = "connected"  // initialized; tools are listed
	StatusError      Status = "error"      // fast retries spent or not retriable; see RuntimeInfo.Error
	StatusDisabled   Status = "disabled"   // configured but not enabled; nothing runs
)

// Phase says where a session failed.
type Phase string

const (
	PhaseConfig             Phase = "config"     // the config cannot work as written
	PhaseSpawn              Phase = "spawn"      // the stdio command could not start or died before initialize
	PhaseConnect            Phase = "connect"    // the remote server could not be reached
	PhaseInitialize         Phase = "initialize" // the MCP handshake failed or timed out
	PhaseDiscover           Phase = "discover"   // listing tools, resources or prompts failed
	PhaseRuntime            Phase = "runtime"    // a connected session dropped
	PhaseAuth               Phase = "auth"       // HTTP 401/403: credentials are needed or wrong
	PhaseSandboxUnavailable Phase = "sandbox_unavailable"
	PhaseSandboxCreate      Phase = "sandbox_create"
	PhaseDepInstall         Phase = "dep_install"
	PhaseToolCall           Phase = "tool_call"
)

// ErrorInfo is the last failure of a session.
type ErrorInfo struct {
	Message string    `json:"message"` // the real cause, in words a person can act on, secrets removed
	Phase   Phase     `json:"phase"`
	Code    Code      `json:"code"` // stable machine-readable reason, e.g. "command_not_found", "http_401"
	At      time.Time `json:"at"`
}

// ServerInfo is what the server said about itself in initialize.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ToolInfo is one tool as listed by an upstream server.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// RuntimeInfo is the live view of one upstream session, included in every
// server view of the API as "runtime".
type RuntimeInfo struct {
	Status Status     `json:"status"`
	Error  *ErrorInfo `json:"error"`
	// LastDrop is why the last connected session was lost (phase runtime),
	// kept after a reconnect clears Error; nil if it never dropped.
	LastDrop        *ErrorInfo  `json:"last_drop"`
	Attempt         int         `json:"attempt"`
	Reconnects      int         `json:"reconnects"`
	NextRetryAt     *time.Time  `json:"next_retry_at"`
	ConnectedSince  *time.Time  `json:"connected_since"`
	Transport       Transport   `json:"transport,omitempty"`
	ProtocolVersion string      `json:"protocol_version,omitempty"`
	ServerInfo      *ServerInfo `json:"server_info,omitempty"`
	PID             int         `json:"pid,omitempty"`
	ToolCount       int         `json:"tool_count"`
	Tools           []ToolInfo  `json:"tools"`
	ResourceCount   int         `json:"resource_count"`
	PromptCount     int         `json:"prompt_count"`
	// StartupTimedOut is set when Start gave up waiting for the first
	// connection; the session keeps trying in the background.
	StartupTimedOut bool `json:"startup_timed_out,omitempty"`
	// Sandbox says whether and how a stdio server runs sandboxed; nil for
	// remote servers and for stdio servers to which no sandbox config
	// applies.
	Sandbox *SandboxInfo `json:"sandbox,omitempty"`
}

// SandboxInfo is the sandbox of a stdio server as it applies on this
// machine: for a running process, as it was set up; otherwise, as the next
// attempt will set it up.
type SandboxInfo struct {
	// Enabled says whether the server runs in a sandbox. A config that
	// leaves it to the default runs unsandboxed where bubblewrap does not
	// work; Reason then says why.
	Enabled bool   `json:"enabled"`
	Reason  string `json:"reason,omitempty"`
	// User is who the server runs as, e.g. "uid 999 (switchboard-sandbox)":
	// never root; a Switchboard running as root runs its servers as an
	// unprivileged user.
	User string `json:"user,omitempty"`
	// Workspace is the host directory of the workspace (HOME in the
	// sandbox): the server's own, the profile's shared one, or, once a
	// process has one, an isolated one. WorkspaceMode is "per-server",
	// "shared" or "isolated" (see SandboxConfig.Workspace).
	Workspace     string           `json:"workspace,omitempty"`
	WorkspaceMode SandboxWorkspace `json:"workspace_mode,omitempty"`
	// Network says whether the server reaches anything outside the
	// sandbox (through user-mode networking, never the host's loopback);
	// NetworkAllow is its allowlist as configured, and NetworkAllowed, for
	// a running process, what that was enforced as: each entry with the
	// IPv4 addresses its host name resolved to when the sandbox was
	// created, e.g. "api.github.com:443 = 140.82.112.6". Without an
	// allowlist every destination is reachable. An unsandboxed server's
	// JSON has no "network": false would say it cannot reach the network,
	// when it reaches all of it.
	Network        bool     `json:"network"`
	NetworkAllow   []string `json:"network_allow,omitempty"`
	NetworkAllowed []string `json:"network_allowed,omitempty"`
	// Limits says how the memory and process limits are enforced:
	// "cgroup" (cgroup v2), "rlimit" (memory as RLIMIT_DATA; processes
	// cannot be limited), or "none". CPU time is always an rlimit.
	Limits string `json:"limits,omitempty"`
	// Unenforced lists what of the limits the config asks for this
	// machine cannot enforce: without a cgroup, "pids", and of the memory
	// limit "memory_total" (RLIMIT_DATA bounds each process, not their
	// sum) and "shared_memory" (MAP_SHARED and memfd_create memory, which
	// RLIMIT_DATA does not count; /tmp and /dev/shm are bounded tmpfs).
	Unenforced []string `json:"unenforced,omitempty"`
}

// MarshalJSON leaves "network" out of an unsandboxed server's info (see
// Network).
func (s SandboxInfo) MarshalJSON() ([]byte, error) {
	type plain SandboxInfo
	if s.Enabled {
		return json.Marshal(plain(s))
	}
	return json.Marshal(struct {
		plain
		Network *bool `json:"network,omitempty"` // shadows plain's
	}{plain: plain(s)})
}
