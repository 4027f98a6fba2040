package httpapi

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/telemetry"
)

// traced gives each API call that reaches next (after the credential
// check, so that its principal is known) a span of kind server, named by
// its route ("POST /api/v1/call"), a child of the client's trace if its
// traceparent header carries one: a call through the API continues into
// the upstream span (upstream/trace.go) as one through /mcp does. While
// tracing is off it is next itself, less one atomic load.
func traced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !telemetry.Enabled() {
			next.ServeHTTP(w, r)
			return
		}
		ctx := telemetry.Extract(r.Context(), r.Header, nil, nil)
		ctx, span := telemetry.Start(ctx, r.Method, trace.SpanKindServer)
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(ctx)
		next.ServeHTTP(rec, r) // the mux sets r.Pattern
		p, _ := sb.PrincipalFrom(ctx)
		if r.Pattern != "" && r.Pattern != "/" {
			span.SetName(r.Pattern)
			span.SetAttributes(attribute.String("http.route", r.Pattern))
		}
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
			attribute.Int("http.response.status_code", rec.status), attribute.String("switchboard.principal", p.Name))
		if rec.status >= 500 {
			span.SetAttributes(attribute.String("error.type", strconv.Itoa(rec.status)))
			span.SetStatus(codes.Error, http.StatusText(rec.status))
		}
		span.End()
	})
}

// statusWriter keeps the status of a response; it flushes as the writer
// it wraps does (the API's streams test for http.Flusher).
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
