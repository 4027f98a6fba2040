package upstream

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
)

// This file holds every error the package exports: the sentinels, matched
// with errors.Is, and the typed errors that carry the details, matched with
// errors.As. How a failed connection attempt or a dropped connection is
// classified and worded is in classify.go.

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
// It wraps the sentinel that tells what became of the request:
// ErrUnavailable, ErrStartupTimeout or ErrDisabled.
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

// Errors of CallTool. Each failure is a typed value (*TimeoutError,
// *CallError, *ToolError, *ArgumentError, *UnknownToolError) that matches
// one of these with errors.Is.
var (
	// ErrTimeout: the per-request timeout or the total cap fired. The
	// server was sent notifications/cancelled.
	ErrTimeout = sb.NewError(sb.CodeTimeout, "tool call timed out")
	// ErrCancelled: the caller's context ended. The server was sent
	// notifications/cancelled.
	ErrCancelled = sb.NewError(sb.CodeCancelled, "tool call cancelled")
	// ErrConnectionLost: the connection dropped while the call was in
	// flight. The call is not retried: the tool may have run.
	ErrConnectionLost = sb.NewError(sb.CodeConnectionLost, "connection lost during the tool call")
	// ErrToolError: the tool ran and reported failure (isError). The
	// *ToolError keeps the whole result.
	ErrToolError = sb.NewError(sb.CodeToolError, "tool reported an error")
	// ErrInvalidArguments: the arguments do not match the tool's input
	// schema; nothing was sent.
	ErrInvalidArguments = sb.NewError(sb.CodeInvalidArguments, "invalid tool arguments")
	// ErrUnknownTool: the server has no tool of that name; nothing was sent.
	ErrUnknownTool = sb.NewError(sb.CodeUnknownTool, "unknown tool")
	// ErrResultTooLarge: the result exceeded Options.MaxResultBytes.
	ErrResultTooLarge = sb.NewError(sb.CodeResultTooLarge, "tool result too large")
	// ErrInvalidOptions: the InvokeOptions were rejected; nothing was sent.
	ErrInvalidOptions = sb.NewError(sb.CodeInvalidOptions, "invalid invoke options")
	// ErrServerError: the server answered the call with a JSON-RPC error.
	ErrServerError = sb.NewError(sb.CodeServerError, "server rejected the tool call")
)

// Which limit ended a timed-out call.
const (
	LimitRequest = "request" // the per-request timeout (InvokeOptions.Timeout)
	LimitTotal   = "total"   // the hard cap (InvokeOptions.MaxTotalTimeout)
)

// TimeoutError is a call ended by one of its limits.
type TimeoutError struct {
	Server, Tool string
	Limit        string        // LimitRequest or LimitTotal
	Timeout      time.Duration // the limit's value
	Elapsed      time.Duration // since the call started
	LastProgress *sb.Progress  // nil if none arrived
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("%s/%s: %s timeout of %s fired after %s", e.Server, e.Tool, e.Limit, e.Timeout, e.Elapsed.Round(time.Millisecond))
	if p := e.LastProgress; p != nil {
		msg += fmt.Sprintf("; last progress %g", p.Progress)
		if p.Total > 0 {
			msg += fmt.Sprintf("/%g", p.Total)
		}
		if p.Message != "" {
			msg += " (" + p.Message + ")"
		}
	}
	return msg
}

func (e *TimeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}

// ErrorCode reports sb.CodeTimeout to sb.CodeOf.
func (e *TimeoutError) ErrorCode() sb.Code { return sb.CodeTimeout }

// ErrorPhase reports sb.PhaseToolCall to sb.PhaseOf.
func (e *TimeoutError) ErrorPhase() sb.Phase { return sb.PhaseToolCall }

// CallError is a call that failed without a result: cancelled, connection
// lost, session unavailable, or rejected by the server.
type CallError struct {
	Server, Tool string
	Phase        sb.Phase
	Kind         error // one of the Err values above
	Message      string
	Err          error // the underlying cause
}

func (e *CallError) Error() string { return fmt.Sprintf("%s/%s: %s", e.Server, e.Tool, e.Message) }

// Unwrap returns Kind first, so that sb.CodeOf names the call's kind of
// failure rather than its cause's.
func (e *CallError) Unwrap() []error { return []error{e.Kind, e.Err} }

// ErrorPhase reports Phase to sb.PhaseOf.
func (e *CallError) ErrorPhase() sb.Phase { return e.Phase }

// ToolError is a result with isError set. The result is kept whole.
type ToolError struct {
	Server, Tool string
	Result       *Result
}

func (e *ToolError) Error() string {
	msg := "the tool reported an error"
	res, err := e.Result.Decode()
	if err != nil {
		return fmt.Sprintf("%s/%s: %s", e.Server, e.Tool, msg)
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text != "" {
			msg = t.Text
			break
		}
	}
	return fmt.Sprintf("%s/%s: %s", e.Server, e.Tool, msg)
}

func (e *ToolError) Is(target error) bool { return target == ErrToolError }

// ErrorCode reports sb.CodeToolError to sb.CodeOf.
func (e *ToolError) ErrorCode() sb.Code { return sb.CodeToolError }

// ErrorPhase reports sb.PhaseToolCall to sb.PhaseOf.
func (e *ToolError) ErrorPhase() sb.Phase { return sb.PhaseToolCall }

// ArgumentError is a call refused before sending because its arguments do
// not match the tool's input schema.
type ArgumentError struct {
	Server, Tool string
	Field        string // the offending argument, when it can be named
	Message      string
}

func (e *ArgumentError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s/%s: invalid argument %q: %s", e.Server, e.Tool, e.Field, e.Message)
	}
	return fmt.Sprintf("%s/%s: invalid arguments: %s", e.Server, e.Tool, e.Message)
}

func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }

// ErrorCode reports sb.CodeInvalidArguments to sb.CodeOf.
func (e *ArgumentError) ErrorCode() sb.Code { return sb.CodeInvalidArguments }

// ErrorPhase reports sb.PhaseToolCall to sb.PhaseOf.
func (e *ArgumentError) ErrorPhase() sb.Phase { return sb.PhaseToolCall }

// UnknownToolError is a call to a tool the server does not list.
type UnknownToolError struct {
	Server, Tool string
	Suggestions  []string // the closest tool names, best first
}

func (e *UnknownToolError) Error() string {
	msg := fmt.Sprintf("%s has no tool %q", e.Server, e.Tool)
	if len(e.Suggestions) > 0 {
		msg += "; did you mean " + quoteList(e.Suggestions) + "?"
	}
	return msg
}

func (e *UnknownToolError) Is(target error) bool { return target == ErrUnknownTool }

// ErrorCode reports sb.CodeUnknownTool to sb.CodeOf.
func (e *UnknownToolError) ErrorCode() sb.Code { return sb.CodeUnknownTool }

// ErrorPhase reports sb.PhaseToolCall to sb.PhaseOf.
func (e *UnknownToolError) ErrorPhase() sb.Phase { return sb.PhaseToolCall }

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
