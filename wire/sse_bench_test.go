package wire_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSSECall is one 1 KiB echo call over legacy SSE against the
// go-sdk's server: its result kept as bytes by wire.SSE.Call, and decoded
// by the go-sdk's client over its own SSEClientTransport.
func BenchmarkSSECall(b *testing.B) {
	s := newSSEServer(b)
	payload := strings.Repeat("x", 1<<10)

	b.Run("wire.SSE.Call", func(b *testing.B) {
		c := dial(b, s.URL, 0)
		req := callTool("echo", textArgs{payload}, "")
		b.ReportAllocs()
		for b.Loop() {
			raw, err := c.conn.Call(context.Background(), req)
			if err != nil || len(raw) < len(payload) {
				b.Fatalf("Call = %d bytes, %v", len(raw), err)
			}
		}
	})

	b.Run("go-sdk.SSEClientTransport.CallTool", func(b *testing.B) {
		hc := &http.Client{Transport: &http.Transport{}}
		defer hc.CloseIdleConnections()
		cl := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := cl.Connect(context.Background(), &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		params := &mcp.CallToolParams{Name: "echo", Arguments: textArgs{payload}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || len(res.Content) != 1 {
				b.Fatalf("CallTool = %v, %v", res, err)
			}
		}
	})
}
