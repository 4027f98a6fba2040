package upstream

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/telemetry"
)

// The attributes of Switchboard's spans that no OpenTelemetry convention
// names; the others are the conventions' own (mcp.*, gen_ai.*, error.type).
const (
	attrServer    = "switchboard.server"
	attrTransport = "switchboard.transport"
	attrPrincipal = "switchboard.principal"
	attrOutcome   = "switchboard.outcome"
	attrPhase     = "switchboard.phase"
	attrProgress  = "switchboard.progress.count"
)

// callSpan starts the span of a call of the tool name on this session, a
// child of the caller's (the MCP request or API call it serves); while
// tracing is off it costs nothing and records nothing.
func (s *Session) callSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return telemetry.Start(ctx, "", trace.SpanKindClient)
	}
	ctx, span := telemetry.Start(ctx, "tools/call "+name, trace.SpanKindClient)
	p, _ := sb.PrincipalFrom(ctx)
	span.SetAttributes(
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", name),
		attribute.String(attrServer, s.cfg.Name),
		attribute.String(attrTransport, string(s.cfg.Transport)),
		attribute.String(attrPrincipal, p.Name))
	return ctx, span
}

// traceLink notes on span the link a try of the call is sent on, and puts
// the span's context where the server reads it: HTTP headers for a remote
// server, params._meta on a byte stream (stdio), which has no headers.
func traceLink(ctx context.Context, span trace.Span, l *link, meta *callMeta) {
	span.SetAttributes(attribute.String(attrTransport, string(l.transport)),
		attribute.String("mcp.protocol.version", l.version))
	switch l.transport {
	case sb.TransportStreamableHTTP, sb.TransportSSE, sb.TransportRemote:
		meta.header = telemetry.Inject(ctx, nil)
	default:
		meta.trace = telemetry.AppendMeta(nil, ctx)
	}
}

// endCallSpan ends the span of call c with its outcome: "ok", or the
// failure's code and phase, and the events of what happened to it.
func endCallSpan(span trace.Span, c *call, err error) {
	c.mu.Lock()
	n := c.progressed
	c.mu.Unlock()
	if n > 0 {
		span.SetAttributes(attribute.Int(attrProgress, n))
		span.AddEvent("progress", trace.WithAttributes(attribute.Int("count", n)))
	}
	if err == nil {
		span.SetAttributes(attribute.String(attrOutcome, "ok"))
		span.End()
		return
	}
	code := string(sb.CodeOf(err))
	span.SetAttributes(attribute.String(attrOutcome, code), attribute.String("error.type", code),
		attribute.String(attrPhase, string(sb.PhaseOf(err))))
	var te *TimeoutError
	var ce *CallError
	switch {
	case errors.As(err, &te):
		span.AddEvent("timeout", trace.WithAttributes(attribute.String("limit", te.Limit),
			attribute.Int64("timeout_ms", te.Timeout.Milliseconds())))
	case errors.As(err, &ce) && ce.Kind == ErrCancelled:
		span.AddEvent("cancelled")
	}
	span.SetStatus(codes.Error, err.Error())
	span.End()
}

// attemptSpan starts the span of one connection attempt of the session's
// lifecycle (spawn or dial, handshake, discovery), a root span of its own:
// no request caused it.
func (s *Session) attemptSpan(ctx context.Context) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return telemetry.Start(ctx, "", trace.SpanKindInternal)
	}
	ctx, span := telemetry.Start(ctx, "connect "+s.cfg.Name, trace.SpanKindInternal)
	span.SetAttributes(attribute.String(attrServer, s.cfg.Name), attribute.String(attrTransport, string(s.cfg.Transport)))
	return ctx, span
}

// endAttemptSpan ends the span of an attempt that made l, or failed with f.
func endAttemptSpan(span trace.Span, l *link, f *failure) {
	if f != nil {
		span.SetAttributes(attribute.String(attrOutcome, string(f.code)), attribute.String("error.type", string(f.code)),
			attribute.String(attrPhase, string(f.phase)))
		span.SetStatus(codes.Error, f.msg)
		span.End()
		return
	}
	span.SetAttributes(attribute.String(attrOutcome, "ok"), attribute.String(attrTransport, string(l.transport)),
		attribute.String("mcp.protocol.version", l.version), attribute.Int("switchboard.tools", len(l.catalog.tools)))
	span.End()
}
