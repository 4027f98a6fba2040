package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// failingPlugin fails every call with the failure whose code its "text"
// argument names, as the MCP plugin would have returned it.
type failingPlugin struct{ servers func() []string }

func (p failingPlugin) Serves(server string) bool { return slices.Contains(p.servers(), server) }
func (p failingPlugin) Servers() []string         { return p.servers() }

func (p failingPlugin) Invoke(_ context.Context, server, tool string, args any, _ sb.InvokeOptions) (*upstream.Result, error) {
	raw, _ := json.Marshal(args)
	var in struct{ Text string }
	json.Unmarshal(raw, &in)
	return nil, failureFor(sb.Code(in.Text), server, tool)
}

// failureFor builds a realistic error of code: the typed error a layer
// returns for it where there is one, else a CallError of that kind.
func failureFor(code sb.Code, server, tool string) error {
	switch code {
	case sb.CodeTimeout:
		return &upstream.TimeoutError{Server: server, Tool: tool, Limit: upstream.LimitRequest, Timeout: time.Second, Elapsed: time.Second}
	case sb.CodeInvalidArguments:
		return &upstream.ArgumentError{Server: server, Tool: tool, Field: "text", Message: "must be a string"}
	case sb.CodeUnknownTool:
		return &upstream.UnknownToolError{Server: server, Tool: tool}
	case sb.CodeUnknownServer:
		return &executor.AddressError{Address: server + "/" + tool, Kind: executor.ErrUnknownServer}
	case sb.CodeToolError:
		res, _ := upstream.ResultOf(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the tool says no"}}})
		return &upstream.ToolError{Server: server, Tool: tool, Result: res}
	case sb.CodeInternal:
		return fmt.Errorf("an error nobody classified")
	}
	return &upstream.CallError{Server: server, Tool: tool, Phase: sb.PhaseRuntime, Kind: sb.NewError(code, string(code)),
		Message: "failed with " + string(code)}
}

// Every code a call can fail with reads the same through the API, through
// /mcp (switchboard/error in _meta) and in the call metrics: the surfaces
// map a code to a status or a result, and none decides it.
func TestEveryCodeReadsTheSameOnEverySurface(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.Store(t, stdio(t, "srv"))
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	reg := registry.New(st, &registry.Options{Logger: log})
	m := metrics.New(reg)
	ex := executor.New(m.Instrument(failingPlugin{servers: reg.Names}))
	gw := gateway.New(reg, gateway.Options{Executor: ex, Logger: log})
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	mux.Handle("/", httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Logger: log, MCP: gw.Handler()}))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
		reg.Shutdown(ctx)
	})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, srv.URL+"/mcp/srv")
	waitTools(t, cs, "echo")

	for _, code := range sb.RequestCodes() {
		t.Run(string(code), func(t *testing.T) {
			wantPhase := sb.PhaseOf(failureFor(code, "srv", "echo"))

			// The API.
			body, _ := json.Marshal(map[string]any{"tool": "srv/echo", "arguments": map[string]string{"text": string(code)}})
			resp, err := http.Post(srv.URL+"/api/v1/call", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var api struct {
				Result *struct {
					IsError bool `json:"isError"`
				} `json:"result"`
				Error *struct {
					Code  sb.Code  `json:"code"`
					Phase sb.Phase `json:"phase"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &api); err != nil {
				t.Fatalf("API answered %d %s", resp.StatusCode, raw)
			}

			// /mcp/{name}.
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]string{"text": string(code)}})
			if err != nil {
				t.Fatalf("/mcp: %v", err)
			}
			meta, _ := res.Meta["switchboard/error"].(map[string]any)

			if code == sb.CodeToolError {
				// Not a failure of Switchboard: the tool's own result, whole.
				if resp.StatusCode != http.StatusOK || api.Result == nil || !api.Result.IsError || api.Error != nil {
					t.Errorf("API: %d %s, want 200 with the isError result", resp.StatusCode, raw)
				}
				if !res.IsError || meta != nil || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "the tool says no" {
					t.Errorf("/mcp: %+v, want the tool's own isError result", res)
				}
			} else {
				if api.Error == nil || api.Error.Code != code || api.Error.Phase != wantPhase || resp.StatusCode != httpapi.Status(code) {
					t.Errorf("API: %d %s, want %d with code %s, phase %q", resp.StatusCode, raw, httpapi.Status(code), code, wantPhase)
				}
				if !res.IsError || meta == nil || meta["code"] != string(code) || meta["phase"] != string(wantPhase) {
					t.Errorf("/mcp: isError %v, _meta %v, want code %s, phase %q", res.IsError, res.Meta, code, wantPhase)
				}
			}

			// Metrics: both calls, under the same code.
			line := fmt.Sprintf(`switchboard_calls_total{outcome="%s",server="srv"} 2`, code)
			if text := scrape(t, srv.URL+"/metrics"); !strings.Contains(text, line) {
				t.Errorf("metrics lack %s", line)
			}
		})
	}
}

func connect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "codes-test"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// An upstream's JSON-RPC error reaches the client as that JSON-RPC error,
// through /mcp/{name} and /mcp, scrubbed of the server's secrets; the API
// calls it server_error (502).
func TestUpstreamJSONRPCErrorsPassThroughScrubbed(t *testing.T) {
	const secret = "sekrit-value-123"
	cfg := stdio(t, "srv")
	cfg.Env = map[string]string{"API_KEY": secret}
	e := newEnv(t, "", cfg)
	args := map[string]any{"code": -32602, "message": "bad key " + secret}
	for path, tool := range map[string]string{"/mcp/srv": "rpc_error", "/mcp": "srv__rpc_error"} {
		cs := e.connect(path, nil)
		waitTools(t, cs, tool)
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != -32602 || rpc.Message != "bad key ***" {
			t.Errorf("%s: err = %v, want JSON-RPC error -32602 %q", path, err, "bad key ***")
		}
	}
	body, _ := json.Marshal(map[string]any{"tool": "srv/rpc_error", "arguments": args})
	resp, err := http.Post(e.url+"/api/v1/call", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(raw), `"code":"server_error"`) || strings.Contains(string(raw), secret) {
		t.Errorf("API: %d %s, want 502 server_error without the secret", resp.StatusCode, raw)
	}
}
