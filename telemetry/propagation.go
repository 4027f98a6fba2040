package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboard-mcp/switchboard/internal/rawjson"
)

// The W3C Trace Context names: HTTP headers, and the members of
// params._meta that MCP clients send them in (the spec's _meta is where a
// request's metadata travels; over stdio there are no headers at all).
const (
	Traceparent = "traceparent"
	Tracestate  = "tracestate"
)

// w3c reads and writes only the W3C trace context: what a client sends and
// an upstream is given, whatever OTEL_PROPAGATORS says for other programs.
var w3c propagation.TraceContext

// pair is a carrier of the two values.
type pair struct{ parent, state string }

func (p *pair) Get(key string) string {
	switch key {
	case Traceparent:
		return p.parent
	case Tracestate:
		return p.state
	}
	return ""
}

func (p *pair) Set(key, value string) {
	switch key {
	case Traceparent:
		p.parent = value
	case Tracestate:
		p.state = value
	}
}

func (p *pair) Keys() []string { return []string{Traceparent, Tracestate} }

// Extract returns ctx with the remote span context that the _meta values
// (raw JSON strings, nil if absent) or else the headers h carry, if either
// is valid; ctx otherwise. _meta comes first: it belongs to the one
// message, where a header may be a whole connection's.
func Extract(ctx context.Context, h http.Header, metaParent, metaState []byte) context.Context {
	if tracer.Load() == nil {
		return ctx
	}
	if parent, ok := rawjson.String(metaParent); ok && parent != "" {
		state, _ := rawjson.String(metaState)
		if sc := trace.SpanContextFromContext(w3c.Extract(context.Background(), &pair{parent, state})); sc.IsValid() {
			return trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	if h == nil || h.Get(Traceparent) == "" {
		return ctx
	}
	if sc := trace.SpanContextFromContext(w3c.Extract(context.Background(), propagation.HeaderCarrier(h))); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// ExtractStrings is Extract for _meta values already decoded (the go-sdk's
// mcp.Meta), empty if absent.
func ExtractStrings(ctx context.Context, h http.Header, metaParent, metaState string) context.Context {
	if tracer.Load() == nil {
		return ctx
	}
	if metaParent != "" {
		if sc := trace.SpanContextFromContext(w3c.Extract(context.Background(), &pair{metaParent, metaState})); sc.IsValid() {
			return trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	return Extract(ctx, h, nil, nil)
}

// Inject returns h, or a new header if h is nil, with the traceparent and
// tracestate of ctx's span; h as it is if ctx has no valid span.
func Inject(ctx context.Context, h http.Header) http.Header {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return h
	}
	if h == nil {
		h = make(http.Header, 2)
	}
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
	return h
}

// AppendMeta appends the members of params._meta that carry ctx's span
// ("traceparent":"…", and "tracestate":"…" if there is one) to b, with
// no separator around them; b as it is if ctx has no valid span.
func AppendMeta(b []byte, ctx context.Context) []byte {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return b
	}
	var p pair
	w3c.Inject(ctx, &p)
	b = append(b, `"traceparent":`...)
	b = rawjson.AppendString(b, p.parent)
	if p.state != "" {
		b = append(b, `,"tracestate":`...)
		b = rawjson.AppendString(b, p.state)
	}
	return b
}
