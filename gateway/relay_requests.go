package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// A relayed call carries the upstream's requests to its client
// (elicitation/create and sampling/createMessage if the client declared
// them, roots/list always) on the call's own event stream, as the go-sdk
// does for Gateway.call, with ids of the gateway's own, and takes the
// client's answer from the POST that carries it (serveRelay: the id is
// one the gateway issued, pending on that session).
//
// The gateway makes the checks the go-sdk's ServerSession.Elicit and
// CreateMessage make of these requests and their answers, so that an
// upstream gets the same verdict on either path: an elicitation is asked
// only of a client that declared it, in a mode it declared (form unless a
// URL is named; a client that declares neither mode takes form); an
// accepted answer must fit the requested schema (a flat object of
// primitive properties, as the spec allows), whose defaults are then
// applied; a sampling answer has at most one content block.
//
// roots/list goes to every client: the go-sdk's server cannot tell a
// client that declared roots from one that did not (ClientCapabilities'
// Roots is a struct, and every go-sdk client sends it), and
// ServerSession.ListRoots asks any. A client without roots answers with
// its own error, which the upstream gets; Switchboard never answers for
// it.
//
// When the upstream gives up on its request (it cancelled it, or its call
// ended), the client is told with notifications/cancelled on the stream, as
// the go-sdk tells it.

// serverRequestPrefixes start the ids of the requests the gateway sends
// to clients: a namespace the go-sdk, which numbers its requests, never
// uses.
var serverRequestPrefixes = map[string]string{
	"elicitation/create":     "sb-elicit-",
	"sampling/createMessage": "sb-sample-",
	"roots/list":             "sb-roots-",
}

// elicitParams is the go-sdk's form of an upstream's elicitation request.
func elicitParams(er sb.ElicitationRequest) (*mcp.ElicitParams, error) {
	p := &mcp.ElicitParams{Message: er.Message, Mode: er.Mode, URL: er.URL}
	if len(er.RequestedSchema) > 0 {
		var schema any
		if err := json.Unmarshal(er.RequestedSchema, &schema); err != nil {
			return nil, err
		}
		p.RequestedSchema = schema
	}
	return p, nil
}

// elicitParamsFor is elicitParams with the mode made explicit (form, or
// url for a request that names one), refused unless the client's
// capabilities (of its initialize, or of a 2026-07-28 request) allow it.
func elicitParamsFor(er sb.ElicitationRequest, client *mcp.InitializeParams) (*mcp.ElicitParams, error) {
	p, err := elicitParams(er)
	if err != nil {
		return nil, err
	}
	if p.Mode == "" {
		p.Mode = "form"
		if p.URL != "" || p.ElicitationID != "" {
			p.Mode = "url"
		}
	}
	if err := elicitationAllowed(client, p.Mode); err != nil {
		return nil, err
	}
	return p, nil
}

// askElicitation asks ss's client what er asks, through the go-sdk's
// server (Gateway.call), and returns its answer as the go-sdk checked it.
func askElicitation(ctx context.Context, ss *mcp.ServerSession, er sb.ElicitationRequest) (sb.ElicitationResponse, error) {
	p, err := elicitParams(er)
	if err != nil {
		return sb.ElicitationResponse{}, err
	}
	res, err := ss.Elicit(ctx, p)
	if err != nil {
		return sb.ElicitationResponse{}, err
	}
	return sb.ElicitationResponse{Action: res.Action, Content: res.Content}, nil
}

// askRoots asks ss's client for its roots, through the go-sdk's server.
func askRoots(ctx context.Context, ss *mcp.ServerSession) (json.RawMessage, error) {
	res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// askSampling asks ss's client for the completion raw (CreateMessageParams)
// asks for, and returns the result the go-sdk decoded and checked.
func askSampling(ctx context.Context, ss *mcp.ServerSession, raw json.RawMessage) (json.RawMessage, error) {
	var p mcp.CreateMessageParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	res, err := ss.CreateMessage(ctx, &p)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// callRequests carries the server requests of one relayed call.
type callRequests struct {
	g   *Gateway
	s   *session
	sse *sseWriter

	mu     sync.Mutex
	ended  bool
	active sync.WaitGroup // requests in progress; none begins once ended
	// ctx ends when the call does (its parent, the call's, or end). Made
	// by the first request: most calls have none, and need no context.
	parent context.Context
	ctx    context.Context
	stop   context.CancelFunc
}

// serverRequests returns the carrier of s's server requests for one call
// that answers on sse, and sets opts to send them through it. The caller
// calls end before it writes the call's response.
func (g *Gateway) serverRequests(ctx context.Context, s *session, sse *sseWriter, opts *sb.InvokeOptions) *callRequests {
	cr := &callRequests{g: g, s: s, sse: sse, parent: ctx}
	if asksClient(s.ss.InitializeParams()) {
		opts.OnElicitation = func(ctx context.Context, er sb.ElicitationRequest) (sb.ElicitationResponse, error) {
			p, err := elicitParamsFor(er, s.ss.InitializeParams())
			if err != nil {
				return sb.ElicitationResponse{}, err
			}
			params, err := json.Marshal(p)
			if err != nil {
				return sb.ElicitationResponse{}, err
			}
			raw, err := cr.ask(ctx, "elicitation/create", params)
			if err != nil {
				return sb.ElicitationResponse{}, err
			}
			return checkElicitation(er.RequestedSchema, raw)
		}
		opts.OnSampling = func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
			var p mcp.CreateMessageParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			if p.Messages == nil {
				p.Messages = []*mcp.SamplingMessage{} // as the go-sdk sends it: not null
			}
			params, err := json.Marshal(&p)
			if err != nil {
				return nil, err
			}
			res, err := cr.ask(ctx, "sampling/createMessage", params)
			if err != nil {
				return nil, err
			}
			return checkSampling(res)
		}
	}
	opts.OnRoots = func(ctx context.Context) (json.RawMessage, error) {
		res, err := cr.ask(ctx, "roots/list", json.RawMessage(`{}`))
		if err != nil {
			return nil, err
		}
		var roots mcp.ListRootsResult
		if err := json.Unmarshal(res, &roots); err != nil {
			return nil, fmt.Errorf("the client's roots: %w", err)
		}
		return res, nil
	}
	return cr
}

// elicitationAllowed refuses an elicitation in mode that the client of p
// did not declare, as ServerSession.Elicit does.
func elicitationAllowed(p *mcp.InitializeParams, mode string) error {
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return errors.New("client does not support elicitation")
	}
	caps := p.Capabilities.Elicitation
	switch mode {
	case "form":
		// A client that declares neither mode takes form, for backward
		// compatibility.
		if caps.Form == nil && caps.URL != nil {
			return errors.New(`client does not support "form" elicitation`)
		}
	case "url":
		if caps.URL == nil {
			return errors.New(`client does not support "url" elicitation`)
		}
	}
	return nil
}

// checkElicitation decodes a client's elicitation result and, if it
// accepts with content, checks the content against the requested schema
// and applies its defaults, as ServerSession.Elicit does.
func checkElicitation(requested json.RawMessage, raw json.RawMessage) (sb.ElicitationResponse, error) {
	var res mcp.ElicitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return sb.ElicitationResponse{}, fmt.Errorf("the client's elicitation result: %w", err)
	}
	out := sb.ElicitationResponse{Action: res.Action, Content: res.Content}
	if res.Action != "accept" || res.Content == nil || len(requested) == 0 || string(requested) == "null" {
		return out, nil
	}
	schema, err := elicitSchema(requested)
	if err != nil {
		return sb.ElicitationResponse{}, err
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return sb.ElicitationResponse{}, err
	}
	if err := resolved.Validate(out.Content); err != nil {
		return sb.ElicitationResponse{}, fmt.Errorf("elicitation result content does not match requested schema: %v", err)
	}
	if err := resolved.ApplyDefaults(&out.Content); err != nil {
		return sb.ElicitationResponse{}, fmt.Errorf("failed to apply schema defaults to elicitation result: %v", err)
	}
	return out, nil
}

// elicitSchema decodes a requested schema and checks its shape: an object
// whose properties are primitives (string, number, integer, boolean, or
// an array of them), none nested.
func elicitSchema(requested json.RawMessage) (*jsonschema.Schema, error) {
	var schema jsonschema.Schema
	if err := json.Unmarshal(requested, &schema); err != nil {
		return nil, fmt.Errorf("the requested schema: %w", err)
	}
	if schema.Type != "" && schema.Type != "object" {
		return nil, fmt.Errorf("elicit schema must be of type 'object', got %q", schema.Type)
	}
	for name, prop := range schema.Properties {
		if prop == nil {
			continue
		}
		if len(prop.Properties) > 0 {
			return nil, fmt.Errorf("elicit schema property %q contains nested properties, only primitive properties are allowed", name)
		}
		switch prop.Type {
		case "string", "number", "integer", "boolean", "array":
		default:
			return nil, fmt.Errorf("elicit schema property %q has unsupported type %q, only string, number, integer, boolean, and array are allowed", name, prop.Type)
		}
	}
	return &schema, nil
}

// checkSampling decodes a client's sampling result as ServerSession.
// CreateMessage does, which takes at most one content block, and returns
// it encoded.
func checkSampling(raw json.RawMessage) (json.RawMessage, error) {
	var res mcp.CreateMessageWithToolsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the client's sampling result: %w", err)
	}
	if len(res.Content) > 1 {
		return nil, fmt.Errorf("CreateMessage result has %d content blocks; use CreateMessageWithTools for multiple content", len(res.Content))
	}
	out := &mcp.CreateMessageResult{Meta: res.Meta, Model: res.Model, Role: res.Role, StopReason: res.StopReason}
	if len(res.Content) == 1 {
		out.Content = res.Content[0]
	}
	return json.Marshal(out)
}

// errCallEnded refuses a server request that comes after its call ended.
var errCallEnded = errors.New("the call this request belongs to has ended")

// end ends every request of the call still open and waits for them: after
// it, nothing more is written on the call's stream but its response.
func (cr *callRequests) end() {
	cr.mu.Lock()
	cr.ended = true
	stop := cr.stop
	cr.mu.Unlock()
	if stop != nil {
		stop()
	}
	cr.active.Wait()
}

// ask sends the client the request method with params on the call's
// stream, under an id of the gateway's own, and returns the client's
// result. ctx is the upstream's; the request ends with it or with the
// call, and the client is then told it is cancelled.
func (cr *callRequests) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	cr.mu.Lock()
	if cr.ended {
		cr.mu.Unlock()
		return nil, errCallEnded
	}
	cr.active.Add(1)
	if cr.ctx == nil {
		cr.ctx, cr.stop = context.WithCancel(cr.parent)
	}
	callCtx := cr.ctx
	cr.mu.Unlock()
	defer cr.active.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(callCtx, cancel)()

	id := serverRequestPrefixes[method] + strconv.FormatUint(cr.g.asked.Add(1), 10)
	rawID, _ := json.Marshal(id)
	reply := cr.s.expect(rawID)
	defer cr.s.forget(rawID)
	jid, _ := jsonrpc.MakeID(id)
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: jid, Method: method, Params: params})
	if err != nil {
		return nil, err
	}
	cr.sse.event(b)
	select {
	case r := <-reply:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		// As the go-sdk does when a request's context ends.
		params, _ := json.Marshal(&mcp.CancelledParams{Reason: ctx.Err().Error(), RequestID: id})
		if b, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: "notifications/cancelled", Params: params}); err == nil {
			cr.sse.event(b)
		}
		return nil, ctx.Err()
	}
}

// expect registers a request of the gateway's to the client of s with the
// raw id, and returns where its response will be delivered.
func (s *session) expect(rawID []byte) <-chan *jsonrpc.Response {
	reply := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	s.asks[string(rawID)] = reply
	s.mu.Unlock()
	return reply
}

// forget drops a request of expect's once it is answered or given up.
func (s *session) forget(rawID []byte) {
	s.mu.Lock()
	delete(s.asks, string(rawID))
	s.mu.Unlock()
}

// deliver hands msg, a client's response, to the request of s it answers,
// if one is pending, answers the POST that carried it as the go-sdk does
// (202 Accepted), and reports whether it did. A request takes one
// response: another one with the same id, or one that cannot be decoded,
// goes to the session's transport.
func (s *session) deliver(rawID, msg []byte, w http.ResponseWriter) bool {
	decoded, err := jsonrpc.DecodeMessage(msg)
	resp, ok := decoded.(*jsonrpc.Response)
	if err != nil || !ok {
		return false
	}
	s.mu.Lock()
	reply := s.asks[string(rawID)]
	delete(s.asks, string(rawID))
	s.mu.Unlock()
	if reply == nil {
		return false
	}
	reply <- resp
	w.WriteHeader(http.StatusAccepted)
	return true
}
