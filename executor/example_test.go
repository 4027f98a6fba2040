package executor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// A long-running tool called with a per-request timeout that progress
// keeps alive, a hard cap on the whole call, and a progress callback; and
// the typed errors a caller can act on.
func Example() {
	ctx := context.Background()

	// The server: here an MCP server in this process, so that the example
	// runs anywhere. A real config names a command (transport "stdio") or
	// a URL ("remote"), and Options.Dial is left unset.
	srv := mcp.NewServer(&mcp.Implementation{Name: "ci"}, nil)
	type buildArgs struct {
		Steps int `json:"steps"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "build", Description: "Builds, reporting each step."},
		func(ctx context.Context, req *mcp.CallToolRequest, in buildArgs) (*mcp.CallToolResult, any, error) {
			for i := 1; i <= in.Steps; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: float64(in.Steps),
				})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "build ok"}}}, nil, nil
		})

	session := upstream.New(&sb.ServerConfig{Name: "ci", Transport: sb.TransportStdio, Command: "ci-server"},
		&upstream.Options{
			Logger: slog.New(slog.DiscardHandler),
			Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
				client, server := net.Pipe()
				_, err := srv.Connect(ctx, &mcp.IOTransport{Reader: server, Writer: server}, nil)
				return client, err
			},
		})
	if err := session.Start(ctx); err != nil {
		fmt.Println("not connected:", err)
		return
	}
	defer session.Shutdown(ctx)

	ex := executor.New(executor.NewMCP(executor.NewStatic(session)))
	res, err := ex.Execute(ctx, "ci/build", map[string]any{"steps": 3}, sb.InvokeOptions{
		Timeout:                30 * time.Second, // per request; each progress notification restarts it
		ResetTimeoutOnProgress: true,
		MaxTotalTimeout:        10 * time.Minute, // however much progress arrives
		OnProgress: func(p sb.Progress) {
			fmt.Printf("step %g of %g\n", p.Progress, p.Total)
		},
	})
	var timeout *upstream.TimeoutError
	var toolErr *upstream.ToolError
	switch {
	case errors.As(err, &timeout):
		fmt.Printf("gave up: the %s limit fired after %s\n", timeout.Limit, timeout.Elapsed)
	case errors.As(err, &toolErr):
		fmt.Println("the build failed:", toolErr.Result.MustDecode().Content)
	case errors.Is(err, upstream.ErrConnectionLost):
		fmt.Println("the server went away mid-build; it may have run:", err)
	case errors.Is(err, upstream.ErrUnavailable), errors.Is(err, executor.ErrUnknownServer), errors.Is(err, upstream.ErrUnknownTool):
		fmt.Println("cannot call it:", err)
	case err != nil:
		fmt.Println("error:", err)
	default:
		fmt.Println(res.MustDecode().Content[0].(*mcp.TextContent).Text)
	}

	_, err = ex.Execute(ctx, "ci/biuld", nil, sb.InvokeOptions{})
	fmt.Println(err)

	// Output:
	// step 1 of 3
	// step 2 of 3
	// step 3 of 3
	// build ok
	// ci has no tool "biuld"; did you mean "build"?
}
