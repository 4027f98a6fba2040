package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/otlptest"
)

// TestServeExportsTracesFromTheEnvironment: serve, a real process given
// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME, says it exports
// traces, and the span of an API call that carried a traceparent reaches
// the receiver by the time SIGTERM's shutdown is done, under the service
// name of the environment. Without the variables it says nothing of
// traces.
func TestServeExportsTracesFromTheEnvironment(t *testing.T) {
	rcv := otlptest.Start(t)
	d := daemontest.Start(t, daemontest.Options{Env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "OTEL_SERVICE_NAME=sb-test"}})
	const traceID, parent = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a", "a5a5a5a5a5a5a5a5"
	req, _ := http.NewRequest(http.MethodGet, d.URL+"/api/v1/servers", nil)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	req.Header.Set("traceparent", "00-"+traceID+"-"+parent+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/servers: %s", resp.Status)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Trace(traceID)
	if len(spans) != 1 || spans[0].Name != "GET /api/v1/servers" || spans[0].ParentID != parent ||
		spans[0].Resource["service.name"] != "sb-test" {
		t.Fatalf("spans of the trace: %+v; serve's log:\n%s", spans, d.Logs())
	}
	if log := d.Logs(); !strings.Contains(log, "exporting OpenTelemetry traces") {
		t.Errorf("serve did not say it exports traces:\n%s", log)
	}

	plain := daemontest.Start(t, daemontest.Options{})
	if err := plain.Stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.Logs(), "traces") {
		t.Errorf("serve without OTEL_* mentions traces:\n%s", plain.Logs())
	}
}
