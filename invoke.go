package switchboard

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// MaxInvokeTimeout bounds every timeout of a tool call: anything longer is a
// typo (milliseconds given as seconds, an extra zero) rather than a wish.
const MaxInvokeTimeout = 24 * time.Hour

// InvokeOptions bound and observe one tool call. The zero value uses the
// server's call_timeout_ms (else 60 s), no total cap and no callbacks.
//
// Plugins map these fields onto their own transports; the MCP plugin maps
// them onto MCP requests (progress tokens, notifications/cancelled).
type InvokeOptions struct {
	// Timeout is the per-request timeout. If zero, the server's
	// call_timeout_ms is used, else 60 s.
	Timeout time.Duration
	// MaxTotalTimeout is a hard wall-clock cap on the whole call, including
	// time added by progress and time spent waiting for an elicitation
	// answer. It is enforced by a timer, not only when progress arrives. If
	// zero, the server's max_total_timeout_ms is used, else no cap.
	MaxTotalTimeout time.Duration
	// ResetTimeoutOnProgress restarts the per-request timer on every
	// progress notification of this call.
	ResetTimeoutOnProgress bool
	// OnProgress, if set, receives this call's progress notifications, in
	// order, before the call returns. Setting it requests progress. It runs
	// on the session's notification goroutine and must not block.
	OnProgress func(Progress)
	// OnElicitation, if set, answers the server's requests for user input
	// during this call. Time spent in it does not count against Timeout; it
	// does count against MaxTotalTimeout, whose context it receives.
	OnElicitation func(context.Context, ElicitationRequest) (ElicitationResponse, error)
	// OnSampling, if set, answers the server's sampling/createMessage
	// requests during this call. Request and answer are the protocol's JSON
	// (CreateMessageParams and CreateMessageResult), passed through as is:
	// Switchboard relays them and never calls a model itself. Time spent in
	// it counts like time spent in OnElicitation.
	OnSampling func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// OnRoots, if set, answers the server's roots/list requests during this
	// call with the caller's roots (a ListRootsResult, as JSON). Without
	// it the server's request is refused: Switchboard has no roots of its
	// own, and never makes any up. Time spent in it counts like time spent
	// in OnElicitation.
	OnRoots func(ctx context.Context) (json.RawMessage, error)
	// Input, if set, is the call of a client of the 2026-07-28 protocol,
	// which answers a server's requests for input itself (SEP-2322). To a
	// server of that protocol, the call's _meta names the client's
	// capabilities, and a request for input (resultType "input_required")
	// is the call's result, for the client to answer and call again: it
	// is not answered with OnElicitation, OnSampling and OnRoots. A server of an
	// older protocol is called as without it.
	Input *InputRound
	// Parked, if set, reports whether the call waits for its caller to
	// come back with answers to the server's requests it holds (a
	// 2026-07-28 client's retry): such a call sends the server nothing
	// until then, so a server request that names no call (stdio) is not
	// its, and goes to the one other call that can take it.
	Parked func() bool
}

// InputRound is a 2026-07-28 client's part in a call's requests for input
// (InvokeOptions.Input).
type InputRound struct {
	// Capabilities are the capabilities the client declared (a JSON
	// object), which the server is told in place of Switchboard's own, so
	// that it can refuse what the client cannot do.
	Capabilities json.RawMessage
	// Responses (a JSON object) and State are the inputResponses and
	// requestState of the client's retry, as it sent them; empty on a
	// first call.
	Responses json.RawMessage
	State     string
}

// Validate rejects negative and absurd values before anything is sent.
func (o *InvokeOptions) Validate() error {
	check := func(name string, d time.Duration) error {
		switch {
		case d < 0:
			return fmt.Errorf("invalid invoke options: %s must not be negative (got %s)", name, d)
		case d > MaxInvokeTimeout:
			return fmt.Errorf("invalid invoke options: %s must be at most %s (got %s)", name, MaxInvokeTimeout, d)
		case d > 0 && d < time.Millisecond:
			return fmt.Errorf("invalid invoke options: %s must be at least 1ms (got %s)", name, d)
		}
		return nil
	}
	if err := check("timeout", o.Timeout); err != nil {
		return err
	}
	return check("max total timeout", o.MaxTotalTimeout)
}

// Progress is one progress notification of a tool call.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"` // zero if unknown
	Message  string  `json:"message,omitempty"`
}

// ElicitationRequest is a server's request for user input during a call.
type ElicitationRequest struct {
	Message         string          `json:"message"`
	Mode            string          `json:"mode,omitempty"` // "form" (default) or "url"
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
	URL             string          `json:"url,omitempty"`
}

// ElicitationResponse answers an ElicitationRequest.
type ElicitationResponse struct {
	Action  string         `json:"action"` // "accept", "decline" or "cancel"
	Content map[string]any `json:"content,omitempty"`
}
