package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Transports of a comparison.
const (
	InMemory = "in-memory" // client and server in this process, over net.Pipe (floor: io.Pipe)
	Stdio    = "stdio"     // the server is a child process on stdin/stdout
)

// The sides of a comparison: four ways to make the same echo call.
const (
	SideFloor    = "floor"            // hand-written NDJSON JSON-RPC, encoding/json, no SDK
	SideDirect   = "direct go-sdk"    // mcp.ClientSession.CallTool
	SideSession  = "Session.CallTool" // upstream.Session.CallTool
	SideExecutor = "executor.Execute" // executor.Execute over an upstream session
)

// pinnedProtocol is the protocol version of every direct go-sdk client, and
// the one Switchboard picks by itself for stdio servers.
const pinnedProtocol = "2025-11-25"

// newProtocol is the stateless protocol generation, for the sides that
// measure it.
const newProtocol = "2026-07-28"

// echoText is what every echo call sends and expects back; echoArgs is the
// same Go value handed to every path (read-only, shared by all callers).
const echoText = "hello"

var echoArgs = map[string]any{"text": echoText}

// discardLogger keeps Switchboard's session logs out of the results.
var discardLogger = slog.New(slog.DiscardHandler)

// side is one way of calling the test server's tools, set up and ready.
type side struct {
	name string
	// tool calls a tool; nil for the floor, which only knows echo.
	tool func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error)
	// echo makes one echo call and checks its answer.
	echo  func(ctx context.Context) error
	close func()
}

// mcpSide builds a side from a tool-calling function.
func mcpSide(name string, tool func(context.Context, string, map[string]any) (*mcp.CallToolResult, error), closeFn func()) *side {
	return &side{
		name: name,
		tool: tool,
		echo: func(ctx context.Context) error {
			res, err := tool(ctx, "echo", echoArgs)
			if err != nil {
				return err
			}
			return checkText(res, echoText)
		},
		close: closeFn,
	}
}

// checkText verifies a result's first content is the text want.
func checkText(res *mcp.CallToolResult, want string) error {
	if res == nil || res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("unexpected result %+v", res)
	}
	if t, ok := res.Content[0].(*mcp.TextContent); !ok || t.Text != want {
		return fmt.Errorf("unexpected result content %+v", res.Content[0])
	}
	return nil
}

// newSide sets up the named side over transport. bin is the testserver
// binary (stdio only).
func newSide(ctx context.Context, name, transport, bin string) (*side, error) {
	switch {
	case name == SideFloor && transport == InMemory:
		return newFloorInMemory(), nil
	case name == SideFloor && transport == Stdio:
		return newFloorStdio()
	case name == SideDirect && transport == InMemory:
		return newDirectInMemory(ctx)
	case name == SideDirect && transport == Stdio:
		return newDirectStdio(ctx, bin)
	case name == SideSession || name == SideExecutor:
		s, closeFn, err := newSession(ctx, transport, bin, nil)
		if err != nil {
			return nil, err
		}
		if name == SideSession {
			return mcpSide(name, func(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
				return decoded(s.CallTool(ctx, tool, args, sb.InvokeOptions{}))
			}, closeFn), nil
		}
		ex := executor.New(executor.NewMCP(executor.NewStatic(s)))
		return mcpSide(name, func(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
			return decoded(ex.Execute(ctx, s.Name()+"/"+tool, args, sb.InvokeOptions{}))
		}, closeFn), nil
	}
	return nil, fmt.Errorf("unknown side %q over %q", name, transport)
}

// newFloorInMemory runs the floor server in a goroutine over two io.Pipes.
func newFloorInMemory() *side {
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		err := serveFloor(reqR, respW)
		respW.CloseWithError(err) // nil: the client's reader sees EOF
		reqR.Close()
	}()
	c := newFloorClient(respR, reqW)
	return &side{
		name: SideFloor,
		echo: func(ctx context.Context) error { return c.echo(ctx, echoArgs, echoText) },
		close: func() {
			c.close()
			<-served
			<-c.done
		},
	}
}

// newFloorStdio runs the floor server as a child process: this binary,
// re-executed with the floor-server role (see MaybeRunChild).
func newFloorStdio() (*side, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childRoleEnv+"="+floorServerRole)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	c := newFloorClient(stdout, stdin)
	return &side{
		name: SideFloor,
		echo: func(ctx context.Context) error { return c.echo(ctx, echoArgs, echoText) },
		close: func() {
			c.close() // EOF on its stdin: the floor server returns and exits
			t := time.NewTimer(2 * time.Second)
			select {
			case <-c.done: // its stdout reached EOF: all reads are done
			case <-t.C:
			}
			t.Stop()
			killGroup(pid)
			_ = cmd.Wait()
		},
	}, nil
}

// newDirectInMemory connects a plain go-sdk client to the test server's MCP
// server in this process over mcp.NewInMemoryTransports (a net.Pipe with
// newline-delimited JSON, the same framing as Switchboard's Dial path).
func newDirectInMemory(ctx context.Context) (*side, error) {
	srv, err := testserver.NewInProcess(testserver.Options{})
	if err != nil {
		return nil, err
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-direct"}, nil).
		Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: pinnedProtocol})
	if err != nil {
		ss.Close()
		return nil, err
	}
	return mcpSide(SideDirect, directTool(cs), func() {
		cs.Close()
		_ = ss.Wait()
	}), nil
}

// newDirectStdio starts the testserver binary with mcp.CommandTransport and
// connects a plain go-sdk client to it.
func newDirectStdio(ctx context.Context, bin string) (*side, error) {
	cs, pid, err := connectCommand(ctx, bin)
	if err != nil {
		return nil, err
	}
	return mcpSide(SideDirect, directTool(cs), func() { closeCommand(cs, pid) }), nil
}

// connectCommand starts bin (in its own process group) under a go-sdk
// client and completes the initialize handshake at the pinned protocol.
func connectCommand(ctx context.Context, bin string) (*mcp.ClientSession, int, error) {
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-direct"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: pinnedProtocol})
	if err != nil {
		if cmd.Process != nil {
			killGroup(cmd.Process.Pid)
			_ = cmd.Wait()
		}
		return nil, 0, err
	}
	return cs, cmd.Process.Pid, nil
}

// closeCommand kills the process group of a connectCommand server, then
// closes the session, which reaps the process.
func closeCommand(cs *mcp.ClientSession, pid int) {
	killGroup(pid)
	_ = cs.Close()
}

func directTool(cs *mcp.ClientSession) func(context.Context, string, map[string]any) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	}
}

// newSession starts an upstream session to the test server: in this
// process through Options.Dial over net.Pipe, or as a stdio child. opts, if
// not nil, is used as the session's options (its Dial and Logger are set
// here).
func newSession(ctx context.Context, transport, bin string, opts *upstream.Options) (*upstream.Session, func(), error) {
	o := upstream.Options{}
	if opts != nil {
		o = *opts
	}
	o.Logger = discardLogger
	cfg := &sb.ServerConfig{Name: "echo", Transport: sb.TransportStdio, Command: bin}
	var (
		mu      sync.Mutex
		servers []*mcp.ServerSession
	)
	if transport == InMemory {
		cfg.Command = "in-process"
		srv, err := testserver.NewInProcess(testserver.Options{})
		if err != nil {
			return nil, nil, err
		}
		o.Dial = func(ctx context.Context) (io.ReadWriteCloser, error) {
			client, server := net.Pipe()
			ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: server, Writer: server}, nil)
			if err != nil {
				client.Close()
				server.Close()
				return nil, err
			}
			mu.Lock()
			servers = append(servers, ss)
			mu.Unlock()
			return client, nil
		}
	}
	s := upstream.New(cfg, &o)
	closeFn := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(sctx)
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range servers {
			ss.Close()
		}
	}
	if err := s.Start(ctx); err != nil {
		closeFn()
		return nil, nil, err
	}
	if v := s.Info().ProtocolVersion; v != pinnedProtocol {
		closeFn()
		return nil, nil, fmt.Errorf("session negotiated protocol %q, want %q", v, pinnedProtocol)
	}
	return s, closeFn, nil
}

// decoded is a call's outcome with its result decoded, as a client of the
// go-sdk gets it.
func decoded(res *upstream.Result, err error) (*mcp.CallToolResult, error) {
	if res == nil {
		return nil, err
	}
	dec, derr := res.Decode()
	if derr != nil {
		return nil, derr
	}
	return dec, err
}
