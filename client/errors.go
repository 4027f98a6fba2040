package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// Error is a failure the daemon reported: an answer with an error status
// and the API's error body, or the error event of a streamed call. Its
// code and phase are those of the wire (api.ErrorInfo), so sb.CodeOf and
// sb.PhaseOf read them, and errors.Is(err, sb.ErrNotFound) does not: match
// on the code.
type Error struct {
	// Status is the HTTP status of the answer, or 0 when the error is the
	// outcome of a call whose answer had begun with 200: the error event
	// of a streamed call.
	Status int
	// Code, Message and Phase are the wire error's. An answer without
	// the API's error body (from a proxy, say) gets the code
	// sb.HTTPStatus(Status), or sb.CodeUnauthorized for a 401, and a
	// message quoting the start of the body.
	Code    sb.Code
	Message string
	Phase   sb.Phase
}

// Error reads "CODE: MESSAGE (phase PHASE)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Phase != "" {
		fmt.Fprintf(&b, " (phase %s)", e.Phase)
	}
	return b.String()
}

// ErrorCode returns e.Code, for sb.CodeOf.
func (e *Error) ErrorCode() sb.Code { return e.Code }

// ErrorPhase returns e.Phase, for sb.PhaseOf.
func (e *Error) ErrorPhase() sb.Phase { return e.Phase }

// Info returns the error as the wire has it.
func (e *Error) Info() api.ErrorInfo {
	return api.ErrorInfo{Code: e.Code, Message: e.Message, Phase: e.Phase}
}

func fromInfo(status int, info api.ErrorInfo) *Error {
	return &Error{Status: status, Code: info.Code, Message: info.Message, Phase: info.Phase}
}

// readError turns a non-2xx answer into an *Error: the API's error body
// when there is one, else the status and the start of the body.
func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Error *api.ErrorInfo `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error != nil && body.Error.Code != "" {
		return fromInfo(resp.StatusCode, *body.Error)
	}
	msg := truncate(string(b), 200)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	code := sb.HTTPStatus(resp.StatusCode)
	if resp.StatusCode == http.StatusUnauthorized {
		code = sb.CodeUnauthorized
	}
	return &Error{Status: resp.StatusCode, Code: code,
		Message: fmt.Sprintf("HTTP %d from %s: %s", resp.StatusCode, resp.Request.URL.Redacted(), msg)}
}
