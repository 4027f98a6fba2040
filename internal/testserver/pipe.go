package testserver

import (
	"context"
	"io"
	"net"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PipeTo connects srv (NewInProcess's, or any MCP server of the test) to
// one end of an in-memory pipe and returns both ends: the client's, to
// hand to a session, and the server's, for a test that acts on the wire.
// The pipe has no I/O a testing/synctest bubble waits on.
func PipeTo(ctx context.Context, srv *mcp.Server) (client, server net.Conn, err error) {
	client, server = net.Pipe()
	if _, err := srv.Connect(ctx, &mcp.IOTransport{Reader: server, Writer: server}, nil); err != nil {
		client.Close()
		server.Close()
		return nil, nil, err
	}
	return client, server, nil
}

// DialInProcess returns an upstream.Options.Dial that reaches srv over a
// new PipeTo at every connection attempt.
func DialInProcess(srv *mcp.Server) func(context.Context) (io.ReadWriteCloser, error) {
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		client, _, err := PipeTo(ctx, srv)
		if err != nil {
			return nil, err
		}
		return client, nil
	}
}
