package upstream

import (
	"context"
	"log/slog"
	"testing"

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
		Dial:   testserver.DialInProcess(srv),
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
