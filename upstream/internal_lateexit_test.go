package upstream

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
)

// stallPoller keeps the package's poller busy in a callback until the test
// ends or release is called, as a loaded machine keeps its goroutine
// waiting for a thread: exits are reported late.
func stallPoller(t *testing.T) (release func()) {
	t.Helper()
	r, w, err := stderrPipe() // what the poller drains
	if err != nil {
		t.Fatal(err)
	}
	stalled, resume := make(chan struct{}), make(chan struct{})
	poller.Drain(r, writerFunc(func(p []byte) (int, error) {
		close(stalled)
		<-resume
		return len(p), nil
	}), func() {})
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	<-stalled
	var once sync.Once
	release = func() { once.Do(func() { close(resume); w.Close() }) }
	t.Cleanup(release)
	return release
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A stdio server killed while the poller is late to report exits is still
// dropped as killed, not as a connection that closed: the session looks
// for the exit itself once its grace has passed.
func TestKilledServerIsNamedWhenItsExitIsReportedLate(t *testing.T) {
	drops := make(chan sb.Event, 1)
	s := New(&sb.ServerConfig{Name: "late", Transport: sb.TransportStdio, Command: testserver.Binary(t)}, &Options{
		Logger: slog.New(slog.DiscardHandler),
		OnEvent: func(ev sb.Event) {
			if ev.Reason == sb.ReasonDropped {
				select {
				case drops <- ev:
				default:
				}
			}
		},
	})
	defer s.Shutdown(context.Background())
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	release := stallPoller(t)
	if err := syscall.Kill(s.Info().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	drop := <-drops // the poller is still stalled
	release()
	if drop.Error == nil || drop.Error.Code != sb.CodeProcessExited || !strings.Contains(drop.Error.Message, "was killed by SIGKILL") {
		t.Errorf("dropped with %+v, want the kill named (code %s)", drop.Error, sb.CodeProcessExited)
	}
}

// A stdio server that exits before the handshake while the poller is late
// to report exits fails its start as an exit, naming the status, not as a
// handshake that failed.
func TestServerExitingAtStartIsNamedWhenItsExitIsReportedLate(t *testing.T) {
	s := New(&sb.ServerConfig{Name: "late", Transport: sb.TransportStdio, Command: testserver.Binary(t), Args: []string{"-exit-at-startup", "3"},
		Retry: &sb.RetryConfig{MaxAttempts: 1, SlowRetryMS: 600000}}, &Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Shutdown(context.Background())
	release := stallPoller(t)
	err := s.Start(context.Background())
	release()
	var uerr *Error
	if !errors.As(err, &uerr) || uerr.Code != sb.CodeProcessExited || !strings.Contains(uerr.Message, "exited with status 3") {
		t.Errorf("Start = %v (code %s), want the exit (status 3) named (code %s)", err, codeOf(uerr), sb.CodeProcessExited)
	}
}

func codeOf(e *Error) sb.Code {
	if e == nil {
		return ""
	}
	return e.Code
}
