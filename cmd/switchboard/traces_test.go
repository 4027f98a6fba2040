package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/daemontest"
	"github.com/switchboard-mcp/switchboard/internal/otlptest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/store"
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

// TestStdioExportsTracesFromTheEnvironment: switchboard stdio, a real
// process given OTEL_EXPORTER_OTLP_ENDPOINT, exports the span of a call
// whose _meta carried a traceparent, with the upstream call's span under
// it, by the time it exits on stdin's close; its stdout carries MCP only
// (the client reads every message of it).
func TestStdioExportsTracesFromTheEnvironment(t *testing.T) {
	rcv := otlptest.Start(t)
	db := "sqlite:" + filepath.Join(t.TempDir(), "sb.db")
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &sb.ServerConfig{Name: "s", Transport: sb.TransportStdio, Command: testserver.Binary(t), ProtocolVersion: "2025-11-25"}
	if _, err := st.Create(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	st.Close()
	cmd := daemontest.Command(t, "stdio", "--db", db, "--log-level", "info")
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "OTEL_SERVICE_NAME=sb-stdio")
	var stderr testserver.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ide"}, nil).Connect(context.Background(),
		&mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	const traceID, parent = "6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b", "b6b6b6b6b6b6b6b6"
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + parent + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("s__echo: %+v, %v", res, err)
	}
	if err := cs.Close(); err != nil { // stdin closes: stdio flushes its spans and exits
		t.Logf("closing stdio: %v", err)
	}
	var in, out *otlptest.Span
	spans := rcv.Trace(traceID)
	for i, s := range spans {
		switch s.Name {
		case "tools/call s__echo":
			in = &spans[i]
		case "tools/call echo":
			out = &spans[i]
		}
	}
	if in == nil || out == nil || in.ParentID != parent || out.ParentID != in.SpanID || in.Resource["service.name"] != "sb-stdio" ||
		in.Attrs["switchboard.principal"] != sb.PrincipalLocal {
		t.Fatalf("spans of the trace: %+v; stdio's log:\n%s", spans, stderr.String())
	}
	if !strings.Contains(stderr.String(), "exporting OpenTelemetry traces") {
		t.Errorf("stdio did not say it exports traces:\n%s", stderr.String())
	}
}

// TestServeWritesAHeapProfileAtSIGTERM: serve --mem-profile, a real
// process running one stdio server, writes a heap profile when SIGTERM
// arrives, and the profile holds the server's session.
func TestServeWritesAHeapProfileAtSIGTERM(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "sb.db")
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &sb.ServerConfig{Name: "s", Transport: sb.TransportStdio, Command: testserver.Binary(t)}
	if _, err := st.Create(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	st.Close()
	heap := filepath.Join(dir, "heap.pprof")
	// Every allocation sampled: the session's are far below the default
	// rate's 512 KiB.
	d := daemontest.Start(t, daemontest.Options{DB: db, Args: []string{"--mem-profile", heap}, Env: []string{"GODEBUG=memprofilerate=1"}})
	if _, err := d.WaitLog(t.Context(), "upstream connected"); err != nil {
		t.Fatalf("%v; serve's log:\n%s", err, d.Logs())
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(heap)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f) // a profile is gzipped protobuf; its strings are plain inside
	if err != nil {
		t.Fatalf("%s is not a profile: %v", heap, err)
	}
	data, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inuse_space", "upstream.New"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the heap profile does not mention %s", want)
		}
	}
}
