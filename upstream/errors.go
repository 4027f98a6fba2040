package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
)

// Errors returned by [Session] methods. They are stable values: test them
// with errors.Is.
var (
	// ErrShutdown is returned for a session that has been shut down.
	ErrShutdown = sb.NewError(sb.CodeShuttingDown, "upstream session is shut down")
	// ErrStartupTimeout is returned by Start when the session did not connect
	// within the server's startup timeout. The session keeps trying.
	ErrStartupTimeout = sb.NewError(sb.CodeStartupTimeout, "upstream session did not connect within its startup timeout")
	// ErrDisabled is returned by Start for a server whose config is disabled.
	ErrDisabled = sb.NewError(sb.CodeDisabled, "upstream server is disabled")
	// ErrUnavailable is wrapped by errors for a session that is not
	// connected (status error or disabled). The wrapping *Error tells why,
	// with the phase.
	ErrUnavailable = sb.NewError(sb.CodeUnavailable, "upstream server is unavailable")
)

// Error is a session failure as a caller sees it: the server, the phase
// where it failed and a message a person can act on (secrets removed).
// It wraps the underlying cause.
type Error struct {
	Server  string
	Phase   sb.Phase
	Code    sb.Code // why the session failed (not the code of the request: see sb.CodeOf)
	Message string
	err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (phase %s)", e.Server, e.Message, e.Phase)
}

func (e *Error) Unwrap() error { return e.err }

// ErrorPhase reports Phase to sb.PhaseOf.
func (e *Error) ErrorPhase() sb.Phase { return e.Phase }

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

// HTTPStatusError is the HTTP status a remote server answered a connection
// attempt with. The go-sdk reports statuses as text only, so the session
// records them with a wrapping http.RoundTripper.
type HTTPStatusError struct {
	StatusCode int
	URL        string // scrubbed
}

func (e *HTTPStatusError) Error() string {
	return fmt.Sprintf("HTTP %d from %s", e.StatusCode, e.URL)
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
// during the attempt, or 0.
func classifyRemote(phase sb.Phase, endpoint string, status int, err error) *failure {
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

// describe shortens an SDK error chain to its informative part: the go-sdk
// prefixes every error with `calling "initialize": sending "initialize":`.
func describe(err error) string {
	if err == nil {
		return "unknown error"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return "the server closed the connection"
	}
	return err.Error()
}

func hostOf(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return endpoint
}

// exitDescription tells how a process ended, e.g. "exited with status 3" or
// "was killed by signal killed".
func exitDescription(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if err == nil {
		return "exited with status 0"
	}
	return "ended: " + err.Error()
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

// isProcessGone reports whether err says a process no longer exists.
func isProcessGone(err error) bool {
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}
