package api

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// CallRequest is the body of POST /api/v1/call.
type CallRequest struct {
	// Tool is the address of the tool to call: "server/tool".
	Tool string `json:"tool"`
	// Arguments is the JSON object of arguments; absent or null means
	// none.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Options bound the call.
	Options CallOptions `json:"options"`
}

// CallOptions are sb.InvokeOptions on the wire, in milliseconds. Zero
// fields take the server's defaults; negative ones are refused with
// sb.CodeInvalidOptions.
type CallOptions struct {
	// TimeoutMS is the per-request timeout. If zero, the server's
	// call_timeout_ms is used, else 60 s.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// MaxTotalTimeoutMS is a hard cap on the whole call, progress and
	// elicitation included. If zero, the server's max_total_timeout_ms is
	// used, else none.
	MaxTotalTimeoutMS int64 `json:"max_total_timeout_ms,omitempty"`
	// ResetTimeoutOnProgress restarts the per-request timeout on every
	// progress notification.
	ResetTimeoutOnProgress bool `json:"reset_timeout_on_progress,omitempty"`
}

// CallResponse is the answer (200) of a POST /api/v1/call that is not
// streamed: the result, with isError set if the tool ran and reported
// failure. A call that produced no result is answered with an ErrorBody
// and the status of its code instead; Error is for a daemon or a proxy
// that puts the error in a 200 body, which clients accept too.
type CallResponse struct {
	Result *mcp.CallToolResult `json:"result,omitempty"`
	Error  *ErrorInfo          `json:"error,omitempty"`
}

// The events of a streamed call (POST /api/v1/call with Accept:
// text/event-stream): any number of EventProgress and EventElicitation,
// then exactly one EventResult or EventError, and the stream ends.
const (
	// EventProgress is a progress notification; its data is an
	// sb.Progress. Under back-pressure the daemon drops progress events,
	// never the result.
	EventProgress = "progress"
	// EventElicitation is the server asking for input; its data is an
	// ElicitationEvent, to be answered with POST
	// /api/v1/elicitations/{id} while the call waits.
	EventElicitation = "elicitation"
	// EventResult is the call's result; its data is an
	// mcp.CallToolResult (isError set if the tool reported failure).
	EventResult = "result"
	// EventError is a call that produced no result; its data is an
	// ErrorInfo.
	EventError = "error"
)

// EventStatus is the one event of GET /api/v1/events: a change of a
// server's state. Its data is an sb.Event. The stream also carries
// comment lines as keep-alives.
const EventStatus = "status"

// ElicitationEvent is the data of an EventElicitation.
type ElicitationEvent struct {
	// ID names this request in POST /api/v1/elicitations/{id}.
	ID string `json:"id"`
	sb.ElicitationRequest
}

// ElicitationAnswer is the body of POST /api/v1/elicitations/{id}: the
// action ("accept", "decline" or "cancel") and, to accept a form, the
// content. The API answers 204, or 404 (sb.CodeNotFound) once the call no
// longer waits for it.
type ElicitationAnswer = sb.ElicitationResponse
