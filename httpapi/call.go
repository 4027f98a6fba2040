package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/internal/sse"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// invokeOptions converts the wire's options to the domain's.
func invokeOptions(c api.CallOptions) (sb.InvokeOptions, error) {
	if c.TimeoutMS < 0 || c.MaxTotalTimeoutMS < 0 {
		return sb.InvokeOptions{}, fmt.Errorf("%w: timeouts must not be negative", upstream.ErrInvalidOptions)
	}
	// Checked before converting: a huge value would overflow the Duration
	// and read as negative.
	if maxMS := sb.MaxInvokeTimeout.Milliseconds(); c.TimeoutMS > maxMS || c.MaxTotalTimeoutMS > maxMS {
		return sb.InvokeOptions{}, fmt.Errorf("%w: timeouts must be at most %d ms (%s)", upstream.ErrInvalidOptions, maxMS, sb.MaxInvokeTimeout)
	}
	return sb.InvokeOptions{
		Timeout:                time.Duration(c.TimeoutMS) * time.Millisecond,
		MaxTotalTimeout:        time.Duration(c.MaxTotalTimeoutMS) * time.Millisecond,
		ResetTimeoutOnProgress: c.ResetTimeoutOnProgress,
	}, nil
}

func (a *handler) call(w http.ResponseWriter, r *http.Request) {
	var req api.CallRequest
	if err := decode(w, r, DefaultMaxCallBytes, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	opts, err := invokeOptions(req.Options)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var args any
	if len(req.Arguments) > 0 && string(req.Arguments) != "null" {
		args = req.Arguments
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		a.streamCall(w, r, req.Tool, args, opts)
		return
	}
	res, err := a.ex.Execute(r.Context(), req.Tool, args, opts)
	if err != nil && !errors.Is(err, upstream.ErrToolError) {
		a.writeError(w, r, err)
		return
	}
	// api.CallResponse with the result as the server wrote it.
	writeJSON(w, http.StatusOK, struct {
		Result json.RawMessage `json:"result"`
	}{res.Raw})
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data any
}

// progressBacklog bounds the progress events queued for a slow HTTP
// client. Progress is delivered on the upstream session's reader, which
// must never wait on a client: past this many, progress events are dropped
// (the result never is).
const progressBacklog = 1024

// streamCall answers with server-sent events: "progress" events, then one
// "result" or "error" event. Elicitation requests become "elicitation"
// events, answered through POST /api/v1/elicitations/{id}.
func (a *handler) streamCall(w http.ResponseWriter, r *http.Request, tool string, args any, opts sb.InvokeOptions) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		a.writeError(w, r, errors.New("streaming is not supported by this connection"))
		return
	}
	events := make(chan sseEvent, progressBacklog)
	opts.OnProgress = func(p sb.Progress) {
		select {
		case events <- sseEvent{api.EventProgress, p}:
		default:
		}
	}
	opts.OnElicitation = func(ctx context.Context, req sb.ElicitationRequest) (sb.ElicitationResponse, error) {
		id := newID()
		answer := make(chan sb.ElicitationResponse, 1)
		a.pending.Store(id, answer)
		defer a.pending.Delete(id)
		select {
		case events <- sseEvent{api.EventElicitation, api.ElicitationEvent{ID: id, ElicitationRequest: req}}:
		case <-ctx.Done():
			return sb.ElicitationResponse{}, ctx.Err()
		}
		select {
		case resp := <-answer:
			return resp, nil
		case <-ctx.Done():
			return sb.ElicitationResponse{}, ctx.Err()
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := a.ex.Execute(r.Context(), tool, args, opts)
		if err != nil && !errors.Is(err, upstream.ErrToolError) {
			_, info := classify(err)
			events <- sseEvent{api.EventError, info}
		} else {
			events <- sseEvent{api.EventResult, res.Raw}
		}
		close(events)
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	gone := false
	for ev := range events {
		if gone {
			continue // drain, so that the call's last send never blocks
		}
		if err := writeEvent(w, ev); err != nil {
			gone = true // the client is gone; r.Context() ends the call
			continue
		}
		flusher.Flush()
	}
	<-done
}

func writeEvent(w http.ResponseWriter, ev sseEvent) error {
	b, err := json.Marshal(ev.data)
	if err != nil {
		return err
	}
	return sse.Write(w, ev.name, b)
}

func (a *handler) answerElicitation(w http.ResponseWriter, r *http.Request) {
	var resp api.ElicitationAnswer
	if err := decode(w, r, DefaultMaxConfigBytes, &resp); err != nil {
		a.writeError(w, r, err)
		return
	}
	switch resp.Action {
	case "accept", "decline", "cancel":
	default:
		a.writeError(w, r, fmt.Errorf(`%w: action must be "accept", "decline" or "cancel"`, errBadRequest))
		return
	}
	v, ok := a.pending.Load(r.PathValue("id"))
	if !ok {
		writeJSON(w, http.StatusNotFound, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeNotFound,
			Message: "no elicitation is waiting under that id (answered already, or its call ended)"}})
		return
	}
	select {
	case v.(chan sb.ElicitationResponse) <- resp:
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusConflict, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeConflict, Message: "this elicitation was answered already"}})
	}
}

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// eventsKeepAlive is how often an idle event stream gets a comment line,
// so that proxies and clients do not time it out.
const eventsKeepAlive = 15 * time.Second

func (a *handler) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		a.writeError(w, r, errors.New("streaming is not supported by this connection"))
		return
	}
	ch, cancel := a.reg.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	tick := time.NewTicker(eventsKeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if err := writeEvent(w, sseEvent{api.EventStatus, ev}); err != nil {
				return
			}
		}
		flusher.Flush()
	}
}
