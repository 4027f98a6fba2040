package testserver

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewInProcess returns the test server's MCP server (every tool, resource
// and prompt) for use inside the test process, typically over
// mcp.NewInMemoryTransports in a testing/synctest bubble, where the I/O of a
// real process would keep the fake clock from advancing. Faults that act on
// the process or the wire (crash, exits, malformed output, HTTP statuses)
// do not apply; the crash tool panics.
//
// Of the options, Name, Version, Tools, PageSize, ProtocolVersions and
// EventsFile apply.
func NewInProcess(opts Options) (*mcp.Server, error) {
	if opts.Name == "" {
		opts.Name = "testserver"
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	events, err := openEventLog(opts.EventsFile)
	if err != nil {
		return nil, err
	}
	s := &server{
		opts:   opts,
		stdout: io.Discard,
		stderr: &lineWriter{w: io.Discard},
		events: events,
		pid:    os.Getpid(),
		ctx:    context.Background(),
		exit:   func(code int) { panic(fmt.Sprintf("in-process testserver cannot exit (status %d)", code)) },
	}
	return s.newMCPServer(), nil
}
