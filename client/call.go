package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/internal/sse"
)

// CallOptions bound and observe one call: sb.InvokeOptions as the API
// offers them. The zero value uses the server's call timeout (else 60 s),
// no total cap, and no callbacks.
type CallOptions struct {
	// Timeout is the per-request timeout, sent in whole milliseconds
	// (rounded up). If zero, the server's call_timeout_ms is used, else
	// 60 s. A negative one is refused with sb.CodeInvalidOptions.
	Timeout time.Duration
	// MaxTotalTimeout is a hard cap on the whole call, progress and
	// elicitations included. If zero, the server's max_total_timeout_ms
	// is used, else none.
	MaxTotalTimeout time.Duration
	// ResetTimeoutOnProgress restarts the per-request timeout on every
	// progress notification.
	ResetTimeoutOnProgress bool
	// OnProgress, if set, receives the call's progress notifications, in
	// order, on the goroutine that called Call. The daemon drops progress
	// a slow reader cannot keep up with, never the result.
	OnProgress func(sb.Progress)
	// OnElicitation, if set, answers the server's requests for input
	// during the call; the answer is posted to the daemon (POST
	// /api/v1/elicitations/{id}) while the call waits. It runs on the
	// goroutine that called Call, with Call's context. If it returns an
	// error, the call is abandoned (closing the stream cancels it on the
	// daemon) and Call returns that error. Without it, a streamed call
	// declines every request.
	OnElicitation func(context.Context, sb.ElicitationRequest) (sb.ElicitationResponse, error)
}

// streamed reports whether the call needs server-sent events.
func (o *CallOptions) streamed() bool { return o.OnProgress != nil || o.OnElicitation != nil }

func (o *CallOptions) wire() api.CallOptions {
	return api.CallOptions{
		TimeoutMS:              milliseconds(o.Timeout),
		MaxTotalTimeoutMS:      milliseconds(o.MaxTotalTimeout),
		ResetTimeoutOnProgress: o.ResetTimeoutOnProgress,
	}
}

// milliseconds rounds d up to whole milliseconds, so that a short timeout
// never becomes zero, which means "the default".
func milliseconds(d time.Duration) int64 {
	if d <= 0 {
		return d.Milliseconds()
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// Call calls tool ("server/tool") with args (anything that encodes as a
// JSON object; nil for none) and returns its result. A result with
// IsError set (the tool ran and reported failure) is a result, not an
// error. A call that produced no result is an *Error: with the HTTP
// status of the answer, or with status 0 if it ended a streamed call.
//
// The call is streamed (Accept: text/event-stream) when o has a callback,
// and is one request and one answer otherwise.
func (c *Client) Call(ctx context.Context, tool string, args any, o CallOptions) (*mcp.CallToolResult, error) {
	raw, err := c.CallRaw(ctx, tool, args, o)
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("calling %s: unreadable result: %w", tool, err)
	}
	return &res, nil
}

// CallRaw is Call returning the result as the daemon sent it: the JSON of
// an MCP CallToolResult, for callers that pass it on or must read content
// kinds the SDK does not know yet.
func (c *Client) CallRaw(ctx context.Context, tool string, args any, o CallOptions) (json.RawMessage, error) {
	creq := api.CallRequest{Tool: tool, Options: o.wire()}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("calling %s: encoding the arguments: %w", tool, err)
		}
		creq.Arguments = b
	}
	req, err := c.newRequest(ctx, http.MethodPost, "/api/v1/call", creq)
	if err != nil {
		return nil, err
	}
	if o.streamed() {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	// An answer that is not streamed (the call was not, or a proxy in
	// between did not pass the stream on) is one body.
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		var body struct {
			Result json.RawMessage `json:"result"`
			Error  *api.ErrorInfo  `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			if ctx.Err() != nil {
				return nil, c.reachError(req, err)
			}
			return nil, fmt.Errorf("calling %s: unexpected answer from %s: %v", tool, req.URL.Redacted(), err)
		}
		switch {
		case body.Error != nil:
			return nil, fromInfo(0, *body.Error)
		case len(body.Result) == 0:
			return nil, fmt.Errorf("calling %s: the answer has neither a result nor an error", tool)
		}
		return body.Result, nil
	}

	events := sse.NewReader(resp.Body)
	for {
		ev, err := events.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.reachError(req, err)
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the connection closed before the call finished")
			}
			return nil, fmt.Errorf("calling %s: %w", tool, err)
		}
		switch ev.Name {
		case api.EventProgress:
			var p sb.Progress
			if o.OnProgress != nil && json.Unmarshal(ev.Data, &p) == nil {
				o.OnProgress(p)
			}
		case api.EventElicitation:
			if err := c.elicit(ctx, tool, ev.Data, o.OnElicitation); err != nil {
				return nil, err
			}
		case api.EventResult:
			return json.RawMessage(ev.Data), nil
		case api.EventError:
			var info api.ErrorInfo
			if err := json.Unmarshal(ev.Data, &info); err != nil || info.Code == "" {
				return nil, fmt.Errorf("calling %s: unreadable error event: %s", tool, truncate(string(ev.Data), 80))
			}
			return nil, fromInfo(0, info)
		}
	}
}

// elicit answers one elicitation event of a call with ask, or declines it
// if ask is nil.
func (c *Client) elicit(ctx context.Context, tool string, data []byte, ask func(context.Context, sb.ElicitationRequest) (sb.ElicitationResponse, error)) error {
	var ev api.ElicitationEvent
	if err := json.Unmarshal(data, &ev); err != nil || ev.ID == "" {
		return fmt.Errorf("calling %s: unreadable elicitation event: %s", tool, truncate(string(data), 80))
	}
	answer := sb.ElicitationResponse{Action: "decline"}
	if ask != nil {
		var err error
		if answer, err = ask(ctx, ev.ElicitationRequest); err != nil {
			return err
		}
	}
	err := c.AnswerElicitation(ctx, ev.ID, answer)
	if sb.CodeOf(err) == sb.CodeNotFound {
		// The call ended (timed out, say) while the answer was being
		// made: its error or result follows on the stream.
		return nil
	}
	return err
}

// AnswerElicitation answers the elicitation request id of a streamed call.
// Call does this itself with what OnElicitation returns; this is for
// callers that read the stream some other way. An id no call waits for
// (answered already, or its call ended) is an *Error with code
// sb.CodeNotFound.
func (c *Client) AnswerElicitation(ctx context.Context, id string, answer sb.ElicitationResponse) error {
	return c.do(ctx, http.MethodPost, "/api/v1/elicitations/"+pathName(id), answer, nil)
}
