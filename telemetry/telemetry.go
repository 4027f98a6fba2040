// Package telemetry exports Switchboard's OpenTelemetry traces, configured
// by the standard environment variables, and carries W3C trace context
// across the gateway: from a client's HTTP headers or params._meta to the
// upstream's HTTP headers (remote servers) or params._meta (stdio).
//
// Tracing is off unless the environment asks for it (Setup). While it is
// off, Start returns the context it was given and a span that records
// nothing, without touching the OpenTelemetry SDK, and Enabled is false:
// call sites test it before they compute attributes or inject headers, so
// the relay's hot path pays one atomic load per call.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of Switchboard's spans.
const ScopeName = "github.com/switchboard-mcp/switchboard"

// ServiceName is the service.name of the spans unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES names another.
const ServiceName = "switchboard"

// tracer is the tracer of the spans while tracing is on; nil while off.
var tracer atomic.Pointer[sdktrace.TracerProvider]

// ErrUnsupported is the error of Setup for a configuration the exporter
// cannot honour (an exporter other than otlp, the grpc protocol).
var ErrUnsupported = errors.New("unsupported telemetry configuration")

// Enabled reports whether spans are being recorded and exported.
func Enabled() bool { return tracer.Load() != nil }

// Setup turns tracing on if the environment, read through getenv (os.Getenv
// in serve), asks for it, and returns the function that flushes the spans
// still buffered and turns tracing off again; it must be called before the
// process exits. Tracing is on when OTEL_TRACES_EXPORTER is "otlp", or when
// it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; OTEL_SDK_DISABLED=true and
// OTEL_TRACES_EXPORTER=none keep it off. The exporter is OTLP over HTTP
// (http/protobuf, or http/json per OTEL_EXPORTER_OTLP_PROTOCOL), and reads
// the rest of its variables itself (endpoint, headers, timeout,
// compression, certificates); the SDK reads OTEL_TRACES_SAMPLER and
// OTEL_BSP_*; the resource is service.name "switchboard" and
// service.version, under OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// The SDK's own errors (an export the collector refused, say) go to log,
// if it is not nil, rather than to the standard logger.
//
// on reports whether tracing was turned on. Setup while tracing is on
// replaces the provider; the returned shutdown then ends only its own.
func Setup(ctx context.Context, getenv func(string) string, version string, log *slog.Logger) (shutdown func(context.Context) error, on bool, err error) {
	off := func(context.Context) error { return nil }
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return off, false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return off, false, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return off, false, nil
		}
	case "otlp":
	default:
		return off, false, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q (Switchboard exports otlp or none)", ErrUnsupported, exp)
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf", "http/json":
	default:
		return off, false, fmt.Errorf("%w: OTLP protocol %q (Switchboard sends http/protobuf or http/json)", ErrUnsupported, protocol)
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return off, false, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", ServiceName)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	// Later detectors win: the environment's names over ours.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		exporter.Shutdown(ctx)
		return off, false, fmt.Errorf("the trace resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	if log != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("exporting traces", "error", err) }))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	tracer.Store(tp)
	return func(ctx context.Context) error {
		tracer.CompareAndSwap(tp, nil)
		return tp.Shutdown(ctx)
	}, true, nil
}

// Start starts a span named name as a child of ctx's span (or of the
// remote parent that Extract put in ctx), and returns ctx with it. While
// tracing is off it returns ctx itself and a span that records nothing;
// ending it does nothing either.
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	tp := tracer.Load()
	if tp == nil {
		return ctx, noSpan
	}
	return tp.Tracer(ScopeName).Start(ctx, name, trace.WithSpanKind(kind))
}

// noSpan records nothing: it is the span of a context that has none.
var noSpan = trace.SpanFromContext(context.Background())

// Event adds an event to ctx's span, if tracing is on and ctx has one.
func Event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if tracer.Load() == nil {
		return
	}
	trace.SpanFromContext(ctx).AddEvent(name, trace.WithAttributes(attrs...))
}
