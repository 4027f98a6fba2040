package testserver

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file holds the tools a sandbox test uses to look at the world from
// inside the server: read and write a file, dial an address, allocate
// memory, burn CPU time. Each reports failure as a tool error carrying the system's
// message, so that a test can tell "denied" from "crashed".

// maxAllocMB bounds the alloc tool so a typo cannot exhaust the test
// machine when the server runs without a limit.
const maxAllocMB = 4096

type pathArgs struct {
	Path string `json:"path"`
}

type writeArgs struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

type dialArgs struct {
	Address string `json:"address"`
}

type allocArgs struct {
	MB int `json:"mb"`
}

type spinArgs struct {
	MS int `json:"ms"`
}

// ProbesEnv is the environment variable that, set to 1 in the server's
// environment, registers the probe tools. They are off by default, so
// that the tool list other tests count stays what it was; a sandbox test
// names the variable in its config's env, which is also the only way
// anything reaches a sandboxed server's environment.
const ProbesEnv = "TESTSERVER_PROBES"

// addSandboxProbes registers read_file, write_file, dial, alloc and spin
// when ProbesEnv is set.
func (s *server) addSandboxProbes() {
	if os.Getenv(ProbesEnv) != "1" {
		return
	}
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "read_file",
		Description: "Returns the contents of the file at path, or a tool error with the reason it cannot be read.",
		InputSchema: objectSchema(map[string]any{"path": prop("string", "absolute path")}, "path"),
	}, s.readFile)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "write_file",
		Description: "Writes text to the file at path, creating it, or returns a tool error with the reason it cannot.",
		InputSchema: objectSchema(map[string]any{
			"path": prop("string", "absolute path"),
			"text": prop("string", "contents"),
		}, "path", "text"),
	}, s.writeFile)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "dial",
		Description: "Opens a TCP connection to address (host:port) within 2 s and closes it; a tool error says why it failed.",
		InputSchema: objectSchema(map[string]any{"address": prop("string", "host:port")}, "address"),
	}, s.dial)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "alloc",
		Description: "Allocates mb megabytes, touches every page and keeps them for the server's life.",
		InputSchema: objectSchema(map[string]any{"mb": withMin(prop("integer", "megabytes"), 1)}, "mb"),
	}, s.alloc)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "spin",
		Description: "Keeps a CPU busy for ms milliseconds (or until cancelled), for CPU-time limits.",
		InputSchema: objectSchema(map[string]any{"ms": withMin(prop("integer", "milliseconds"), 0)}, "ms"),
	}, s.spin)
}

func toolError(err error) *mcp.CallToolResult {
	res := textResult(err.Error())
	res.IsError = true
	return res
}

func (s *server) readFile(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
	b, err := os.ReadFile(in.Path)
	if err != nil {
		return toolError(err), nil, nil
	}
	return textResult(string(b)), nil, nil
}

func (s *server) writeFile(_ context.Context, _ *mcp.CallToolRequest, in writeArgs) (*mcp.CallToolResult, any, error) {
	if err := os.WriteFile(in.Path, []byte(in.Text), 0o644); err != nil {
		return toolError(err), nil, nil
	}
	return textResult("written"), nil, nil
}

func (s *server) dial(ctx context.Context, _ *mcp.CallToolRequest, in dialArgs) (*mcp.CallToolResult, any, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", in.Address)
	if err != nil {
		return toolError(err), nil, nil
	}
	c.Close()
	return textResult("connected"), nil, nil
}

// held keeps what alloc allocated reachable.
var held [][]byte

func (s *server) alloc(_ context.Context, _ *mcp.CallToolRequest, in allocArgs) (*mcp.CallToolResult, any, error) {
	mb := min(in.MB, maxAllocMB)
	for range mb {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
	}
	return textResult("allocated"), nil, nil
}

func (s *server) spin(ctx context.Context, _ *mcp.CallToolRequest, in spinArgs) (*mcp.CallToolResult, any, error) {
	end := time.Now().Add(time.Duration(in.MS) * time.Millisecond)
	for n := 0; time.Now().Before(end); n++ {
		if n%1_000_000 == 0 && ctx.Err() != nil {
			return nil, nil, s.cancelled(ctx, "spin")
		}
	}
	return textResult("spun"), nil, nil
}
