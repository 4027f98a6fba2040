package telemetry_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/internal/otlptest"
	"github.com/switchboard-mcp/switchboard/telemetry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

// env is a fake environment for Setup.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestOffWithoutTheEnvironmentsWord(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"nothing set":   {},
		"exporter none": {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		"sdk disabled":  {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		"service only":  {"OTEL_SERVICE_NAME": "gw"},
	} {
		t.Run(name, func(t *testing.T) {
			shutdown, on, err := telemetry.Setup(context.Background(), env(vars), "", nil)
			if err != nil || on || telemetry.Enabled() {
				t.Fatalf("Setup: on %v, err %v, Enabled %v", on, err, telemetry.Enabled())
			}
			shutdown(context.Background())
			ctx := context.Background()
			got, span := telemetry.Start(ctx, "x", trace.SpanKindServer)
			if got != ctx || span.IsRecording() || span.SpanContext().IsValid() {
				t.Errorf("Start while off gave a new context or a live span")
			}
		})
	}
}

func TestUnsupportedSettingsAreRefused(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"zipkin": {"OTEL_TRACES_EXPORTER": "zipkin"},
		"grpc":   {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		t.Run(name, func(t *testing.T) {
			_, on, err := telemetry.Setup(context.Background(), env(vars), "", nil)
			if err == nil || on || telemetry.Enabled() {
				t.Fatalf("Setup: on %v, err %v", on, err)
			}
		})
	}
}

// TestSpansReachTheReceiverWithTheEnvironmentsResource: the endpoint comes
// from OTEL_EXPORTER_OTLP_ENDPOINT (read by the exporter itself, so it is
// set in the process), the service name and resource attributes from
// their variables.
func TestSpansReachTheReceiverWithTheEnvironmentsResource(t *testing.T) {
	rcv := otlptest.Start(t)
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_SERVICE_NAME": "gw-7",
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test"}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	shutdown, on, err := telemetry.Setup(context.Background(), env(vars), "v1.2.3", nil)
	if err != nil || !on || !telemetry.Enabled() {
		t.Fatalf("Setup: on %v, err %v", on, err)
	}
	// A client's trace, as its traceparent header carries it.
	h := http.Header{}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	ctx := telemetry.Extract(context.Background(), h, nil, nil)
	ctx, span := telemetry.Start(ctx, "tools/call echo", trace.SpanKindServer)
	span.SetAttributes(attribute.String("gen_ai.tool.name", "echo"))
	telemetry.Event(ctx, "retry", attribute.String("reason", "test"))
	// What the upstream is given: this span as its parent.
	out := telemetry.Inject(ctx, nil)
	meta := string(telemetry.AppendMeta(nil, ctx))
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if telemetry.Enabled() {
		t.Error("still enabled after shutdown")
	}
	spans := rcv.Trace("4bf92f3577b34da6a3ce929d0e0e4736")
	if len(spans) != 1 {
		t.Fatalf("spans of the trace: %+v (all: %+v)", spans, rcv.Spans())
	}
	s := spans[0]
	if s.ParentID != "00f067aa0ba902b7" || s.Kind != "server" || s.Attrs["gen_ai.tool.name"] != "echo" || !s.HasEvent("retry") {
		t.Errorf("span %+v", s)
	}
	if s.Resource["service.name"] != "gw-7" || s.Resource["service.version"] != "v1.2.3" || s.Resource["deployment.environment"] != "test" {
		t.Errorf("resource %v", s.Resource)
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + s.SpanID + "-01"
	if got := out.Get("traceparent"); got != want {
		t.Errorf("injected traceparent %q, want %q", got, want)
	}
	if meta != `"traceparent":"`+want+`"` {
		t.Errorf("_meta members %s", meta)
	}
}

func TestMetaTraceContextComesBeforeTheHeaders(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	shutdown, _, err := telemetry.Setup(context.Background(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	h := http.Header{}
	h.Set("traceparent", "00-11111111111111111111111111111111-1111111111111111-01")
	ctx := telemetry.Extract(context.Background(), h,
		[]byte(`"00-22222222222222222222222222222222-2222222222222222-01"`), []byte(`"k=v"`))
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "22222222222222222222222222222222" || sc.TraceState().String() != "k=v" {
		t.Errorf("extracted %v %v", sc.TraceID(), sc.TraceState())
	}
	// A bad _meta value leaves the header's.
	ctx = telemetry.Extract(context.Background(), h, []byte(`"nonsense"`), nil)
	if got := trace.SpanContextFromContext(ctx).TraceID().String(); got != "11111111111111111111111111111111" {
		t.Errorf("extracted %s", got)
	}
}

// BenchmarkCallHooks is what the relay and the upstream call do per call
// for tracing: the two spans' start and end, and (when on) the extraction
// of the client's trace context and the injection of the upstream's, in
// headers and in _meta.
func BenchmarkCallHooks(b *testing.B) {
	h := http.Header{}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	run := func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			c := ctx
			if telemetry.Enabled() {
				c = telemetry.Extract(c, h, nil, nil)
			}
			c, in := telemetry.Start(c, "tools/call echo", trace.SpanKindServer)
			c, out := telemetry.Start(c, "tools/call echo", trace.SpanKindClient)
			if out.IsRecording() {
				telemetry.Inject(c, nil)
				telemetry.AppendMeta(nil, c)
			}
			out.End()
			in.End()
		}
	}
	b.Run("off", run)
	b.Run("on", func(b *testing.B) {
		rcv := otlptest.Start(b)
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
		shutdown, _, err := telemetry.Setup(context.Background(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}), "", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer shutdown(context.Background())
		run(b)
	})
}
