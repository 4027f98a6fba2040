package upstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// scriptServer is a Streamable HTTP server whose tools answer as a
// script says, byte for byte, in the shapes servers write: what a call
// relayed over HTTP takes from the answer must be what the go-sdk would
// have made of it.
type scriptServer struct {
	maxResult int // "over" answers a result this many bytes and more
}

// scriptAnswers are the tools of a scriptServer, by name: how each
// answers a call with request id ID (the event stream, or, for "json",
// the JSON body).
var scriptAnswers = map[string]string{
	"plain": "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"plain\"}]}}\n\n",
	// The TypeScript SDK writes the id last.
	"id-last":     "data: {\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"id last\"}]},\"jsonrpc\":\"2.0\",\"id\":ID}\n\n",
	"tool-error":  "data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"no such city\"}],\"isError\":true}}\n\n",
	"false-error": "data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"isError\":false,\"content\":[{\"type\":\"text\",\"text\":\"fine\"}],\"structuredContent\":{\"isError\":true}}}\n\n",
	// One message over two data lines, with CRLF line ends.
	"two-lines": "data: {\"jsonrpc\":\"2.0\",\"id\":ID,\r\ndata: \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"two\\nlines\"}]}}\r\n\r\n",
	// Progress and another request's answer first: only the call's own is taken.
	"others-first": "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"none\",\"progress\":1}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":987654,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"not yours\"}]}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"yours\"}]}}\n\n",
	// The go-sdk skips an event of another name: its result is not the call's.
	"other-event": "event: other\ndata: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"skipped\"}]}}\n\n" +
		"event:  message \ndata: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"read\"}]}}\n\n",
	// The last event ends with the stream, its last line without a line end.
	"unterminated": "data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"cut\"}]}}\nid: 5",
	"json":         "{\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"one body\"}]}}",
	"not-object":   "data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"result\":42}\n\n",
	"rpc-error":    "data: {\"jsonrpc\":\"2.0\",\"id\":ID,\"error\":{\"code\":-32602,\"message\":\"bad city\"}}\n\n",
	"over":         "", // a result of maxResult bytes and more, made by ServeHTTP
}

func (ss *scriptServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	w.Header().Set("Mcp-Session-Id", "script")
	answer := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}
	switch req.Method {
	case "initialize":
		answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"script","version":"1"}}`)
		return
	case "tools/list":
		var tools []string
		for name := range scriptAnswers {
			tools = append(tools, `{"name":"`+name+`","inputSchema":{"type":"object"}}`)
		}
		answer(`{"tools":[` + strings.Join(tools, ",") + `]}`)
		return
	case "tools/call":
	default:
		answer(`{}`)
		return
	}
	script := strings.ReplaceAll(scriptAnswers[req.Params.Name], "ID", string(req.ID))
	if req.Params.Name == "over" {
		text := strings.Repeat("x", ss.maxResult)
		script = fmt.Sprintf("data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%q}]}}\n\n", req.ID, text)
	}
	if req.Params.Name == "json" {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.Write([]byte(script))
}

// TestHTTPCallReadsEveryAnswerAsTheGoSDKDoes: a tool call over Streamable
// HTTP, on the wire's own connection, gets for every shape of answer what
// the go-sdk's own client makes of the same answer: the same result, as
// the server's bytes, or a failure where the go-sdk fails.
func TestHTTPCallReadsEveryAnswerAsTheGoSDKDoes(t *testing.T) {
	const maxResult = 4 << 10
	ts := serve(t, (&scriptServer{maxResult: maxResult}).ServeHTTP)
	s, _ := badInputSession(t, &sb.ServerConfig{Name: "script", Transport: sb.TransportStreamableHTTP, URL: ts.URL,
		ProtocolVersion: "2025-11-25"}, upstream.Options{MaxResultBytes: maxResult, HealthInterval: -1})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "reference"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	opts := sb.InvokeOptions{Timeout: 10 * time.Second}
	for name := range scriptAnswers {
		t.Run(name, func(t *testing.T) {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second) // the reference client has no timeout of its own
			defer cancel()
			want, wantErr := cs.CallTool(rctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			got, err := s.CallTool(ctx, name, map[string]any{}, opts)
			if (wantErr != nil) != (err != nil && !errors.Is(err, upstream.ErrToolError)) {
				t.Fatalf("error %v; the go-sdk's: %v", err, wantErr)
			}
			if wantErr != nil {
				return
			}
			dec, derr := got.Decode()
			if derr != nil || !reflect.DeepEqual(dec, want) || got.IsError != want.IsError {
				t.Errorf("result %s (isError %v, %v), want the go-sdk's %+v", got.Raw, got.IsError, derr, want)
			}
			if name != "over" && !bytes.Contains([]byte(strings.ReplaceAll(scriptAnswers[name], "\r\ndata: ", "")), got.Raw) {
				t.Errorf("result %s is not the server's bytes", got.Raw)
			}
		})
	}
}
