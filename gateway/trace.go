package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/rawjson"
	"github.com/switchboard-mcp/switchboard/telemetry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// The spans of the MCP requests the gateway serves: one per request, of
// kind server, named "{method} {target}" as OpenTelemetry's MCP
// conventions name them, a child of the client's trace when the request
// carries one (params._meta's traceparent, else the HTTP header). The
// upstream call it makes is a child span of it (upstream/trace.go), so a
// trace crosses the gateway. Nothing here runs while tracing is off.

// relaySpan starts the span of a relayed tools/call (relay.go); s is nil
// for a stateless request.
func (g *Gateway) relaySpan(ctx context.Context, r *http.Request, s *session, env relayEnvelope, o origin) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return telemetry.Start(ctx, "", trace.SpanKindServer)
	}
	ctx = telemetry.Extract(ctx, r.Header, env.traceparent, env.tracestate)
	ctx, span := telemetry.Start(ctx, "tools/call "+env.name, trace.SpanKindServer)
	version := r.Header.Get("Mcp-Protocol-Version")
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", env.name),
		attribute.String("jsonrpc.request.id", strings.Trim(string(env.id), `"`)),
		attribute.String("mcp.protocol.version", version),
		attribute.String("url.path", r.URL.Path),
		attribute.String("switchboard.server", o.server),
		attribute.String("switchboard.principal", principalName(r)),
	}
	if s != nil {
		attrs = append(attrs, attribute.String("mcp.session.id", s.id))
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endRelaySpan ends the span of a relayed call that Execute answered with
// res and err; ctx is the call's.
func endRelaySpan(ctx context.Context, span trace.Span, res *upstream.Result, err error) {
	if errors.Is(context.Cause(ctx), errCancelledByClient) {
		span.AddEvent("cancelled", trace.WithAttributes(attribute.String("by", "client")))
	}
	outcome := "ok"
	switch {
	case err != nil:
		outcome = string(sb.CodeOf(err))
		span.SetAttributes(attribute.String("switchboard.phase", string(sb.PhaseOf(err))))
	case res != nil && res.IsError:
		outcome = string(sb.CodeToolError)
	}
	endSpan(span, outcome, err)
}

// endSpan ends span with its outcome, "ok" or a code.
func endSpan(span trace.Span, outcome string, err error) {
	span.SetAttributes(attribute.String("switchboard.outcome", outcome))
	if outcome != "ok" {
		span.SetAttributes(attribute.String("error.type", outcome))
		msg := outcome
		if err != nil {
			msg = err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// traceRequests is the outermost receiving middleware of a mirror's
// server: the span of each request the go-sdk's server answers (every
// method but the relay's tools/call).
func (m *mirror) traceRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !telemetry.Enabled() || strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		var h http.Header
		if extra := req.GetExtra(); extra != nil {
			h = extra.Header
		}
		name, target := method, ""
		var meta map[string]any
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			meta = p.GetMeta()
			switch p := p.(type) {
			case *mcp.CallToolParamsRaw:
				target = p.Name
			case *mcp.GetPromptParams:
				target = p.Name
			case *mcp.ReadResourceParams:
				target = p.URI
			}
		}
		parent, _ := meta[telemetry.Traceparent].(string)
		state, _ := meta[telemetry.Tracestate].(string)
		ctx = telemetry.ExtractStrings(ctx, h, parent, state)
		if target != "" {
			name += " " + target
		}
		ctx, span := telemetry.Start(ctx, name, trace.SpanKindServer)
		p, _ := sb.PrincipalFrom(ctx)
		attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method), attribute.String("switchboard.principal", p.Name)}
		switch method {
		case "tools/call":
			attrs = append(attrs, attribute.String("gen_ai.tool.name", target), attribute.String("gen_ai.operation.name", "execute_tool"))
			if o, ok := m.origin(sb.KindTool, target); ok {
				attrs = append(attrs, attribute.String("switchboard.server", o.server))
			}
		case "prompts/get":
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", target))
			if o, ok := m.origin(sb.KindPrompt, target); ok {
				attrs = append(attrs, attribute.String("switchboard.server", o.server))
			}
		case "resources/read":
			attrs = append(attrs, attribute.String("mcp.resource.uri", target))
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			if id := ss.ID(); id != "" {
				attrs = append(attrs, attribute.String("mcp.session.id", id))
			}
			if ip := ss.InitializeParams(); ip != nil {
				attrs = append(attrs, attribute.String("mcp.protocol.version", ip.ProtocolVersion))
			}
		}
		span.SetAttributes(attrs...)
		res, err := next(ctx, method, req)
		endSpan(span, requestOutcome(res, err), err)
		return res, err
	}
}

// requestOutcome is what a request the go-sdk's server answered came to:
// "ok", the code of the gateway's error result of a call, tool_error, or
// the JSON-RPC error's.
func requestOutcome(res mcp.Result, err error) string {
	if err != nil {
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			return "jsonrpc_error"
		}
		if c := sb.CodeOf(err); c != "" {
			return string(c)
		}
		return "error"
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
		if m, ok := r.Meta["switchboard/error"].(map[string]any); ok {
			if c, ok := m["code"].(sb.Code); ok && c != "" {
				return string(c)
			}
		}
		return string(sb.CodeToolError)
	}
	return "ok"
}

// origin returns what an exposed tool or prompt name stands for.
func (m *mirror) origin(kind sb.Kind, name string) (origin, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	table := m.tools
	if kind == sb.KindPrompt {
		table = m.prompts
	}
	o, ok := table[name]
	return o, ok
}

// upstreamSpan starts the span of a request the go-sdk's client sends a
// server on a client's behalf (resources/read, prompts/get), a child of
// the client's request, and returns meta (params._meta) with its trace
// context added, for the server to continue it: the go-sdk's client sets
// no headers per request. While tracing is off it returns ctx and meta.
func upstreamSpan(ctx context.Context, method, server, target string, meta mcp.Meta) (context.Context, trace.Span, mcp.Meta) {
	if !telemetry.Enabled() {
		ctx, span := telemetry.Start(ctx, "", trace.SpanKindClient)
		return ctx, span, meta
	}
	ctx, span := telemetry.Start(ctx, method+" "+target, trace.SpanKindClient)
	p, _ := sb.PrincipalFrom(ctx)
	span.SetAttributes(attribute.String("mcp.method.name", method), attribute.String("switchboard.server", server),
		attribute.String("switchboard.principal", p.Name))
	h := telemetry.Inject(ctx, nil)
	if h == nil {
		return ctx, span, meta
	}
	out := make(mcp.Meta, len(meta)+2)
	maps.Copy(out, meta)
	out[telemetry.Traceparent] = h.Get(telemetry.Traceparent)
	if ts := h.Get(telemetry.Tracestate); ts != "" {
		out[telemetry.Tracestate] = ts
	}
	return ctx, span, out
}

// taskSpan starts the span of a task's request (tasks.go), which the
// gateway serves before the go-sdk's server, and so before traceRequests.
func (g *Gateway) taskSpan(r *http.Request, method string, p *taskParams) (context.Context, trace.Span) {
	ctx := r.Context()
	if !telemetry.Enabled() {
		return telemetry.Start(ctx, "", trace.SpanKindServer)
	}
	parent, _ := rawjson.String(p.Meta[telemetry.Traceparent])
	state, _ := rawjson.String(p.Meta[telemetry.Tracestate])
	ctx = telemetry.ExtractStrings(ctx, r.Header, parent, state)
	id := ""
	if p.TaskID != nil {
		id = *p.TaskID
	}
	ctx, span := telemetry.Start(ctx, method+" "+id, trace.SpanKindServer)
	span.SetAttributes(
		attribute.String("mcp.method.name", method),
		attribute.String("mcp.task.id", id),
		attribute.String("mcp.protocol.version", r.Header.Get("Mcp-Protocol-Version")),
		attribute.String("url.path", r.URL.Path),
		attribute.String("switchboard.principal", principalName(r)))
	return ctx, span
}

// taskUpstreamSpan starts the span of a task's request to its server, a
// child of the client's (taskSpan), and sets its trace context in the
// request's _meta (members' "_meta"), for the server to continue it.
func taskUpstreamSpan(ctx context.Context, method, server, id string, members map[string]json.RawMessage) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return telemetry.Start(ctx, "", trace.SpanKindClient)
	}
	ctx, span := telemetry.Start(ctx, method+" "+id, trace.SpanKindClient)
	p, _ := sb.PrincipalFrom(ctx)
	span.SetAttributes(attribute.String("mcp.method.name", method), attribute.String("mcp.task.id", id),
		attribute.String("switchboard.server", server), attribute.String("switchboard.principal", p.Name))
	h := telemetry.Inject(ctx, nil)
	if h == nil {
		return ctx, span
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(members["_meta"], &meta) != nil || meta == nil {
		meta = make(map[string]json.RawMessage, 2)
	}
	meta[telemetry.Traceparent], _ = json.Marshal(h.Get(telemetry.Traceparent)) // a string: never fails
	delete(meta, telemetry.Tracestate)
	if ts := h.Get(telemetry.Tracestate); ts != "" {
		meta[telemetry.Tracestate], _ = json.Marshal(ts)
	}
	members["_meta"], _ = json.Marshal(meta) // decoded JSON: never fails
	return ctx, span
}
