package upstream

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// TestClosedLinksAreForgotten: the shared client's table of links keeps a
// link while it is connected and drops it when the session ends, so that
// reconnects and removed servers leave nothing behind.
func TestClosedLinksAreForgotten(t *testing.T) {
	srv, err := testserver.NewInProcess(testserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(&sb.ServerConfig{Name: "mem", Transport: sb.TransportStdio, Command: "in-process"}, &Options{
		Logger: slog.New(slog.DiscardHandler),
		Dial:   DialInProcess(srv),
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	l := s.link
	s.mu.Unlock()
	if l == nil || l.registered == nil || linkOf(l.registered) != l {
		t.Fatal("the connected link is not registered with the shared client")
	}
	s.Shutdown(context.Background())
	if linkOf(l.registered) != nil {
		t.Error("the link is still registered after Shutdown")
	}
}

// PipeTo connects srv to one end of an in-memory pipe and returns both
// ends. It and DialInProcess serve the tests of upstream_test too.
func PipeTo(ctx context.Context, srv *mcp.Server) (client, server net.Conn, err error) {
	client, server = net.Pipe()
	if _, err := srv.Connect(ctx, &mcp.IOTransport{Reader: server, Writer: server}, nil); err != nil {
		return nil, nil, err
	}
	return client, server, nil
}

// DialInProcess is an Options.Dial that reaches srv over PipeTo.
func DialInProcess(srv *mcp.Server) func(context.Context) (io.ReadWriteCloser, error) {
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		client, _, err := PipeTo(ctx, srv)
		if err != nil {
			return nil, err
		}
		return client, nil
	}
}
