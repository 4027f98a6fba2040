package upstream_test

// A session's status and its link (pid, transport, tools) change in one
// step as its readers (RuntimeInfo: the API's server status) see them:
// never "connected" with no link, nor "connecting" with the tools of a
// link not yet announced.

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// linkMismatch says how info's status and link disagree, or "" if they
// agree: a connected session shows its connection and its tools, any other
// shows neither.
func linkMismatch(info sb.RuntimeInfo) string {
	hasLink := info.Transport != "" || info.ConnectedSince != nil || info.PID != 0
	hasTools := info.ToolCount != 0 || len(info.Tools) != 0
	switch {
	case info.Status == sb.StatusConnected && (info.Transport == "" || info.ConnectedSince == nil || info.ToolCount == 0):
		return "status connected without its link or tools"
	case info.Status != sb.StatusConnected && (hasLink || hasTools):
		return "status " + string(info.Status) + " with a link or tools"
	}
	return ""
}

// stallingConn is the session's end of a connection whose Close waits
// for the test: a teardown of the link, which closes it, is held under
// way.
type stallingConn struct {
	io.ReadWriteCloser
	closing chan struct{} // closed at the first Close
	release chan struct{} // Close returns once this is closed
	once    sync.Once
}

func (c *stallingConn) Close() error {
	c.once.Do(func() { close(c.closing) })
	<-c.release
	return c.ReadWriteCloser.Close()
}

// TestShutdownTeardownKeepsStatusAndLinkTogether: while Shutdown tears the
// link down, the session still says connected, so it still shows the link
// and its tools; both go with the stopped transition.
func TestShutdownTeardownKeepsStatusAndLinkTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newMemDialer(t, testserver.Options{})
		conn := &stallingConn{closing: make(chan struct{}), release: make(chan struct{})}
		dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
			rwc, err := d.dial(ctx)
			if err != nil {
				return nil, err
			}
			conn.ReadWriteCloser = rwc
			return conn, nil
		}
		s := upstream.New(memConfig(), &upstream.Options{Dial: dial, HealthInterval: -1, Logger: slog.New(slog.DiscardHandler)})
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		stopped := make(chan error, 1)
		go func() { stopped <- s.Shutdown(context.Background()) }()
		<-conn.closing // the teardown is under way, and held
		during := s.Info()
		close(conn.release)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if m := linkMismatch(during); m != "" {
			t.Errorf("during the shutdown's teardown: %s: %+v", m, during)
		}
		after := s.Info()
		if after.Status != sb.StatusDisabled || linkMismatch(after) != "" {
			t.Errorf("after Shutdown: %+v, want disabled with no link and no tools", after)
		}
	})
}

// TestStatusAndLinkChangeTogetherAcrossReconnects: a reader that looks at
// the session all through restarts and drops, each followed by a
// reconnect, never catches the status apart from the link. The window it
// looks for is a few instructions wide, so the reader does not catch every
// one; over the rounds it catches one if there is any.
func TestStatusAndLinkChangeTogetherAcrossReconnects(t *testing.T) {
	const rounds = 100
	d := newMemDialer(t, testserver.Options{})
	connected := make(chan struct{}, rounds+1)
	s := upstream.New(memConfig(), &upstream.Options{
		Dial:           d.dial,
		HealthInterval: -1,
		FlapWindow:     -1, // every drop is a transparent reconnect, never a backoff
		Logger:         slog.New(slog.DiscardHandler),
		OnEvent: func(e sb.Event) {
			if e.Reason == sb.ReasonConnected {
				connected <- struct{}{}
			}
		},
	})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-connected

	stop := make(chan struct{})
	seen := make(chan string, 1)
	go func() {
		defer close(seen)
		for {
			select {
			case <-stop:
				return
			default:
			}
			info := s.Info()
			if m := linkMismatch(info); m != "" {
				seen <- m
				return
			}
		}
	}()
	for i := range rounds {
		if i%2 == 0 {
			s.Restart()
		} else {
			d.conn(d.dials()).drop()
		}
		<-connected
	}
	close(stop)
	if m, ok := <-seen; ok {
		t.Errorf("a reader saw %s", m)
	}
}
