package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/oauthclient"
)

// This file turns what went wrong (a command that cannot start, an HTTP
// status, an error of the go-sdk, a process exit) into a failure: the phase,
// the code, how to retry, and a message a person can act on. The go-sdk
// reports most conditions as text or wrapped sentinels; the predicates at
// the end of the file are where that text is read.

// failure is a classified failure of one connection attempt or of a live
// connection. msg is already scrubbed of secrets.
type failure struct {
	phase sb.Phase
	code  sb.Code
	msg   string
	retry retryClass
	err   error
}

func (f *failure) Error() string { return f.msg }
func (f *failure) Unwrap() error { return f.err }

func (f *failure) info(now time.Time) *sb.ErrorInfo {
	return &sb.ErrorInfo{Message: f.msg, Phase: f.phase, Code: f.code, At: now}
}

func fail(phase sb.Phase, code sb.Code, retry retryClass, err error, format string, args ...any) *failure {
	return &failure{phase: phase, code: code, retry: retry, err: err, msg: fmt.Sprintf(format, args...)}
}

// scrubbed returns f with its message scrubbed of r's secrets.
func (f *failure) scrubbed(r *sb.Redactor) *failure {
	if f == nil {
		return nil
	}
	g := *f
	g.msg = r.String(f.msg)
	return &g
}

// classifySpawn turns an error from starting a stdio command into a failure.
func classifySpawn(command string, err error) *failure {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return fail(sb.PhaseSpawn, sb.CodeCommandNotFound, retrySlow, err,
			"%s: command not found (is it installed and on PATH?)", command)
	case errors.Is(err, fs.ErrPermission):
		return fail(sb.PhaseSpawn, sb.CodePermissionDenied, retrySlow, err,
			"%s: permission denied (is it executable?)", command)
	case errors.Is(err, syscall.ENOEXEC):
		return fail(sb.PhaseSpawn, sb.CodeExecFormat, retrySlow, err,
			"%s: not an executable for this machine", command)
	}
	return fail(sb.PhaseSpawn, sb.CodeSpawnFailed, retryFast, err, "starting %s: %v", command, err)
}

// classifyRemote turns an error from connecting to a remote server into a
// failure. status is the last HTTP error status the server answered with
// during the attempt, or 0; page is the HTTP status of the last web page
// (HTML) it answered with, or 0.
func classifyRemote(phase sb.Phase, endpoint string, status, page int, err error) *failure {
	switch status {
	case 401:
		return fail(sb.PhaseAuth, sb.HTTPStatus(status), retryNever, &HTTPStatusError{status, endpoint},
			"HTTP 401 from %s: check the Authorization header", endpoint)
	case 403:
		return fail(sb.PhaseAuth, sb.HTTPStatus(status), retryNever, &HTTPStatusError{status, endpoint},
			"HTTP 403 from %s: the credentials are not allowed to use this server", endpoint)
	case 429:
		return fail(sb.PhaseConnect, sb.HTTPStatus(status), retryFast, &HTTPStatusError{status, endpoint},
			"HTTP 429 from %s: the server is rate limiting; retrying later", endpoint)
	case http.StatusLoopDetected:
		// What a Switchboard answers a request that names it in its
		// Switchboard-Via (egress/loop.go). Retrying cannot help: the config must
		// change.
		return fail(sb.PhaseConfig, sb.CodeLoop, retryNever, &HTTPStatusError{status, endpoint},
			"HTTP 508 Loop Detected from %s: this server is Switchboard itself (its /mcp), or leads back to it through other Switchboards; "+
				"serving it would feed Switchboard its own tools without end, so point the server at another MCP server", endpoint)
	}
	if page != 0 && page < 500 {
		// A web page where MCP was expected: the site's home page, its 404
		// page, a single-page app answering every path. What the go-sdk
		// makes of it ("malformed line in SSE stream", "the server closed
		// the connection", "Not Found") sends people looking for a broken
		// server when the URL is wrong. An error status keeps its code, as
		// any HTTP error status of an attempt does; a 5xx page is left to
		// the status (a proxy's "502 Bad Gateway" page is about the server
		// behind it, not the URL).
		code, cause := sb.CodeConnectFailed, err
		if page >= 400 {
			code, cause = sb.HTTPStatus(page), &HTTPStatusError{page, endpoint}
		}
		return fail(sb.PhaseConnect, code, retryFast, cause,
			"%s answered with an HTML page, not MCP: is this the server's MCP endpoint? (it usually ends in /mcp or /sse)", endpoint)
	}
	if status >= 400 {
		return fail(sb.PhaseConnect, sb.HTTPStatus(status), retryFast, &HTTPStatusError{status, endpoint},
			"HTTP %d from %s", status, endpoint)
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fail(sb.PhaseConnect, sb.CodeConnectionRefused, retryFast, err,
			"connection refused by %s: is the server running?", hostOf(endpoint))
	case errors.As(err, &dnsErr):
		return fail(sb.PhaseConnect, sb.CodeDNS, retryFast, err, "cannot resolve host %s", dnsErr.Name)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fail(phase, sb.CodeTimeout, retryFast, err, "%s timed out", phaseVerb(phase))
	case errors.As(err, &opErr):
		return fail(sb.PhaseConnect, sb.CodeNetwork, retryFast, err, "cannot reach %s: %v", hostOf(endpoint), opErr.Err)
	}
	code := sb.CodeInitializeFailed
	if phase == sb.PhaseConnect {
		code = sb.CodeConnectFailed
	}
	return fail(phase, code, retryFast, err, "%s failed: %s", phaseVerb(phase), describe(err))
}

// refusedCall classifies a call that the HTTP client refused before it
// reached the server (wire.KindTransport), or returns nil: OAuth's refusal
// (no token, or more scopes wanted), or a redirect to another origin
// (egress/origin.go).
func (s *Session) refusedCall(tool string, err error) *CallError {
	var are *oauthclient.RequiredError
	if errors.As(err, &are) {
		// No token, or the server wants more scopes (oauthclient): the call
		// was not sent, or was refused; it did not run.
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseAuth, Kind: ErrUnavailable,
			Message: s.redact.String(are.Error()), Err: err}
	}
	var re *egress.RedirectError
	if errors.As(err, &re) {
		return &CallError{Server: s.cfg.Name, Tool: tool, Phase: sb.PhaseToolCall, Kind: ErrServerError,
			Message: "the server answered the call with an " + re.Error() + "; the call did not run", Err: re}
	}
	return nil
}

func phaseVerb(p sb.Phase) string {
	switch p {
	case sb.PhaseInitialize:
		return "the MCP initialize handshake"
	case sb.PhaseDiscover:
		return "listing the server's tools"
	case sb.PhaseConnect:
		return "connecting"
	}
	return string(p)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

func hostOf(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}

// exitDescription tells how a process ended, e.g. "exited with status 3" or
// "was killed by SIGKILL".
func exitDescription(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			name := unix.SignalName(ws.Signal())
			if name == "" {
				name = fmt.Sprintf("signal %d", int(ws.Signal()))
			}
			return "was killed by " + name
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if err == nil {
		return "exited with status 0"
	}
	return "ended: " + err.Error()
}

// describe shortens an SDK error chain to its informative part: the go-sdk
// prefixes every error with `calling "initialize": sending "initialize":`.
//
// A nil err is what the go-sdk's Wait returns for a connection whose reading
// ended in EOF with nothing else failing: the server closed its end (a
// stdio server its stdout, an SSE server its event stream, an in-process
// server its stream), which is said as an EOF is.
func describe(err error) string {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return "the server closed the connection"
	}
	return err.Error()
}

// pipeClosed reports whether err says the other end closed the stream:
// the go-sdk's closed connection, or the end of the input. "Client is
// closing" alone is not that: the go-sdk also closes its side on its own,
// after malformed JSON for one.
func pipeClosed(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
