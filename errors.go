package switchboard

import (
	"errors"
	"strconv"
)

// Code is the stable, machine-readable name of a failure. It is the one
// vocabulary every surface speaks: the HTTP API's error "code", the
// switchboard/error "code" in the _meta of a failed /mcp call, the outcome
// label of the call metrics, and the "code" of a session's last error
// (RuntimeInfo.Error). Surfaces map a Code to an HTTP status or an MCP
// result; none of them decides the code itself: [CodeOf] does.
//
// A Code never changes meaning once released; new failures get new codes.
type Code string

// Codes of a request: what became of one API request, tool call or /mcp
// call. [CodeOf] returns one of these for any error a layer of Switchboard
// returns.
const (
	// CodeBadRequest: the request itself is malformed (not JSON, an
	// unknown field, a wrong type). Nothing was done.
	CodeBadRequest Code = "bad_request"
	// CodeTooLarge: the request body is over the API's limit.
	CodeTooLarge Code = "too_large"
	// CodeInvalidConfig: a server config (or toolset, or token) failed
	// validation; the *ValidationError names each field.
	CodeInvalidConfig Code = "invalid_config"
	// CodeBadAddress: a tool address is not "server/tool".
	CodeBadAddress Code = "bad_address"
	// CodeInvalidArguments: the arguments do not match the tool's input
	// schema. Nothing was sent to the server.
	CodeInvalidArguments Code = "invalid_arguments"
	// CodeInvalidOptions: the invoke options (timeouts) were rejected.
	// Nothing was sent to the server.
	CodeInvalidOptions Code = "invalid_options"
	// CodeMethodNotAllowed: the route exists but not for that method; the
	// Allow header lists those it takes.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeNotFound: no stored server (or other named object) by that name.
	CodeNotFound Code = "not_found"
	// CodeUnknownServer: a tool address names no configured server.
	CodeUnknownServer Code = "unknown_server"
	// CodeUnknownTool: the server lists no tool of that name.
	CodeUnknownTool Code = "unknown_tool"
	// CodeExists: a server by that name exists already.
	CodeExists Code = "exists"
	// CodeConflict: the object changed since the version the writer read.
	CodeConflict Code = "conflict"
	// CodeUnauthorized: the request lacks a valid credential.
	CodeUnauthorized Code = "unauthorized"
	// CodeForbidden: the credential is valid but its scopes do not reach
	// this endpoint (a token for one toolset used on /mcp or the API).
	CodeForbidden Code = "forbidden"
	// CodeForbiddenHost: the request named a Host the listener does not
	// answer to (a DNS-rebinding defence).
	CodeForbiddenHost Code = "forbidden_host"
	// CodeForbiddenOrigin: a state change came from another web origin.
	CodeForbiddenOrigin Code = "forbidden_origin"
	// CodeTimeout: a call's per-request timeout or total cap fired (the
	// server was sent notifications/cancelled), or, as a session's error,
	// a connection attempt took too long.
	CodeTimeout Code = "timeout"
	// CodeDisabled: the server is disabled; nothing runs for it.
	CodeDisabled Code = "disabled"
	// CodeUnavailable: the server is not connected (its last error says
	// why); the call was not sent.
	CodeUnavailable Code = "unavailable"
	// CodeConnectionLost: the connection dropped while the call was in
	// flight. The tool may or may not have run.
	CodeConnectionLost Code = "connection_lost"
	// CodeResultTooLarge: the tool's result is over the size limit.
	CodeResultTooLarge Code = "result_too_large"
	// CodeServerError: the server answered with a JSON-RPC error.
	CodeServerError Code = "server_error"
	// CodeToolError: the tool ran and reported failure (isError). Not a
	// failure of Switchboard: the result is returned whole.
	CodeToolError Code = "tool_error"
	// CodeCancelled: the caller went away or cancelled. The server was sent
	// notifications/cancelled.
	CodeCancelled Code = "cancelled"
	// CodeShuttingDown: the daemon, or the session the request needed, is
	// shutting down.
	CodeShuttingDown Code = "shutting_down"
	// CodeInternal: a failure Switchboard did not classify: a bug to report.
	CodeInternal Code = "internal"
)

// Reasons a session failed: the Code of RuntimeInfo.Error, read with its
// Phase. CodeTimeout, CodeInvalidConfig and CodeDisabled serve here too, and
// an HTTP error status during a connection attempt is [HTTPStatus]'s code.
const (
	// CodeCommandNotFound: the stdio command is not installed or not on PATH.
	CodeCommandNotFound Code = "command_not_found"
	// CodePermissionDenied: the stdio command is not executable.
	CodePermissionDenied Code = "permission_denied"
	// CodeExecFormat: the stdio command is not an executable for this machine.
	CodeExecFormat Code = "exec_format"
	// CodeBadCwd: the configured working directory does not exist.
	CodeBadCwd Code = "bad_cwd"
	// CodePipe: the pipes to the child process could not be created.
	CodePipe Code = "pipe"
	// CodeSpawnFailed: the stdio command could not be started otherwise.
	CodeSpawnFailed Code = "spawn_failed"
	// CodeProcessExited: the stdio process ended (before or after the
	// handshake); the message says how, with the tail of its stderr.
	CodeProcessExited Code = "process_exited"
	// CodeBadTransport: the config names a transport this build lacks.
	CodeBadTransport Code = "bad_transport"
	// CodeConnectionRefused: nothing listens at the remote server's address.
	CodeConnectionRefused Code = "connection_refused"
	// CodeDNS: the remote server's host name does not resolve.
	CodeDNS Code = "dns"
	// CodeNetwork: another network failure reaching the remote server.
	CodeNetwork Code = "network"
	// CodeDialFailed: the transport to the remote server could not be set up.
	CodeDialFailed Code = "dial_failed"
	// CodeConnectFailed: connecting to the remote server failed otherwise.
	CodeConnectFailed Code = "connect_failed"
	// CodeInitializeFailed: the MCP initialize handshake failed.
	CodeInitializeFailed Code = "initialize_failed"
	// CodeListFailed: listing the server's tools, resources or prompts failed.
	CodeListFailed Code = "list_failed"
	// CodeSessionExpired: a Streamable HTTP server forgot the session (HTTP
	// 404 for its id); the session reconnects at once.
	CodeSessionExpired Code = "session_expired"
	// CodeConnectionClosed: a connected session's connection closed.
	CodeConnectionClosed Code = "connection_closed"
	// CodeProbeTimeout: a health probe got no answer in time.
	CodeProbeTimeout Code = "probe_timeout"
	// CodeProbeFailed: a health probe failed.
	CodeProbeFailed Code = "probe_failed"
	// CodeStartupTimeout: the first connection took longer than the startup
	// timeout; the session keeps trying.
	CodeStartupTimeout Code = "startup_timeout"
	// CodeNotConnected: the session has no connection right now.
	CodeNotConnected Code = "not_connected"
)

// Reasons a remote session was refused for safety (issue #19, "Safe by
// default"): what Switchboard will not do on a remote server's behalf. Read
// with the Phase of RuntimeInfo.Error, like the codes above.
const (
	// CodeRedirect: the remote server pointed Switchboard at another origin
	// (an HTTP redirect, or a legacy SSE endpoint on another host).
	// Configured headers are never sent to another origin, so it was not
	// followed; the message names where it pointed.
	CodeRedirect Code = "redirect"
	// CodeBlockedAddress: the remote server's address is link-local or a
	// cloud metadata service (169.254.169.254 and the like), or
	// unspecified; no connection was attempted. An allow-list re-allows
	// it (switchboard serve --allow-upstream-network).
	CodeBlockedAddress Code = "blocked_address"
	// CodeLoop: the remote server is this Switchboard itself (its /mcp
	// endpoint), directly or through other Switchboards: serving it would
	// feed the aggregate its own tools without end.
	CodeLoop Code = "loop"
)

// Reasons about OAuth (issue #17): the Code of RuntimeInfo.Error with phase
// auth, and of the API's authorization routes.
const (
	// CodeAuthorizationRequired: the server requires OAuth and Switchboard
	// holds no usable token for it (never authorized, the refresh token was
	// revoked, or the server asks for more scopes). The session waits, without
	// retrying, until a person runs `switchboard server auth NAME` (or the
	// web page's button); the message says so.
	CodeAuthorizationRequired Code = "authorization_required"
	// CodeAuthorizationFailed: an authorization flow failed: discovery,
	// client registration, the token endpoint, or the person declined. The
	// message quotes the authorization server.
	CodeAuthorizationFailed Code = "authorization_failed"
)

// Reasons a sandboxed stdio server failed: the Code of RuntimeInfo.Error,
// read with its Phase.
const (
	// CodeSandboxUnavailable: the server must run sandboxed and bubblewrap
	// is missing or cannot create namespaces here; the message says what
	// to install or enable. Nothing ran.
	CodeSandboxUnavailable Code = "sandbox_unavailable"
	// CodeSandboxCreate: the sandbox could not be set up (a mount's host
	// path is missing, the workspace cannot be created, bubblewrap refused
	// the profile). Nothing of the server ran.
	CodeSandboxCreate Code = "sandbox_create_failed"
	// CodeMemoryLimit: the server ran out of memory at its sandbox's
	// memory limit (sandbox.memory_mb) and died.
	CodeMemoryLimit Code = "memory_limit"
	// CodeCPULimit: the server used up its sandbox's CPU time
	// (sandbox.cpu_seconds) and was killed.
	CodeCPULimit Code = "cpu_limit"
	// CodeDepInstallFailed: the package manager that starts the server
	// (npx, uvx, ...) could not install it; the message quotes its error.
	CodeDepInstallFailed Code = "dep_install_failed"
)

// HTTPStatus returns the code of a connection attempt that a remote server
// answered with an HTTP error status: "http_401", "http_503", ...
func HTTPStatus(status int) Code { return Code("http_" + strconv.Itoa(status)) }

// RequestCodes lists every code of a request, for documentation and for the
// tests that check that every surface agrees on them.
func RequestCodes() []Code {
	return []Code{
		CodeBadRequest, CodeMethodNotAllowed, CodeTooLarge, CodeInvalidConfig, CodeBadAddress, CodeInvalidArguments,
		CodeInvalidOptions, CodeNotFound, CodeUnknownServer, CodeUnknownTool, CodeExists,
		CodeConflict, CodeUnauthorized, CodeForbidden, CodeForbiddenHost, CodeForbiddenOrigin, CodeTimeout,
		CodeDisabled, CodeUnavailable, CodeConnectionLost, CodeResultTooLarge, CodeServerError,
		CodeToolError, CodeCancelled, CodeShuttingDown, CodeInternal,
	}
}

// NewError returns a sentinel error with a code: the stable identity of one
// kind of failure, matched with errors.Is and named by [CodeOf]. Each layer
// declares its own (ErrNotFound here, upstream.ErrTimeout, ...); typed
// errors wrap one of them or report their code with an ErrorCode method.
func NewError(code Code, message string) error { return &kind{code: code, msg: message} }

type kind struct {
	code Code
	msg  string
}

func (k *kind) Error() string   { return k.msg }
func (k *kind) ErrorCode() Code { return k.code }

// CodeOf returns the code of err: that of the first error in its chain (as
// errors.As walks it) with an ErrorCode method, else CodeInternal. A nil
// error has no code: "".
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var c interface{ ErrorCode() Code }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return CodeInternal
}

// PhaseOf returns where err happened: the phase of the first error in its
// chain with an ErrorPhase method, else "".
func PhaseOf(err error) Phase {
	var p interface{ ErrorPhase() Phase }
	if errors.As(err, &p) {
		return p.ErrorPhase()
	}
	return ""
}

// Errors of a Store, matched with errors.Is.
var (
	ErrNotFound = NewError(CodeNotFound, "server not found")
	ErrExists   = NewError(CodeExists, "a server with that name already exists")
	// ErrConflict: the server changed since the version the writer read.
	ErrConflict = NewError(CodeConflict, "the server was changed by someone else; reload it and try again")
)

// ErrInvalidConfig is wrapped by every error [ServerConfig.Validate]
// returns (a *ValidationError).
var ErrInvalidConfig = NewError(CodeInvalidConfig, "invalid server config")
