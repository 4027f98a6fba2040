package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file dials a stdio server: it starts the process (process.go) and
// speaks MCP over its pipes (transport.go). The process is watched as well
// as the connection, so that its exit fails the calls in flight at once and
// the failure names the exit status and the server's last stderr line.

// dialStdio starts the server process and performs the MCP handshake.
//
// The handshake may take as long as the startup timeout while the process
// lives: a package manager (npx, uvx) installing for tens of seconds is a
// cold start, not a failure, and killing it to try again would only start
// the installation over (LangBot's cold-start loop). A process that exits
// fails the attempt at once.
func (s *Session) dialStdio(ctx context.Context) (*link, *failure) {
	proc, f := startProcess(s.cfg, s.logs)
	if f != nil {
		return nil, f
	}
	l := newLink(sb.TransportStdio)
	l.proc = proc
	hctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-proc.exited:
			// Let Connect fail with its own error first (the closed pipe,
			// or the malformed JSON that made the go-sdk close it); cancel
			// only if a grandchild holding stdout open keeps it waiting.
			t := time.NewTimer(exitReapGrace)
			defer t.Stop()
			select {
			case <-t.C:
				cancel(errProcessExited)
			case <-hctx.Done():
			}
		case <-hctx.Done():
		}
	}()
	cs, err := s.newClient(l).Connect(hctx, s.ioTransport(l, proc.stdout, proc.stdin), s.sessionOptions())
	cancel(nil)
	if err != nil {
		// Did it exit on its own, before we stop it below? Only a closed
		// pipe says so; other errors (malformed JSON) make the go-sdk close
		// the server's stdin, and the exit that follows is ours. A closed
		// pipe is usually seen a moment before the exit is reaped, so give
		// the reaper a moment.
		exited := false
		if pipeClosed(err) && ctx.Err() == nil {
			exited = proc.waitExit(exitReapGrace)
		}
		proc.stop()
		switch {
		case exited:
			return nil, s.exitFailure(sb.PhaseSpawn, proc, "before completing the MCP handshake")
		case context.Cause(ctx) == errAttemptTimeout:
			return nil, fail(sb.PhaseInitialize, sb.CodeTimeout, retryFast, err,
				"%s (pid %d) did not answer initialize within the %s startup timeout%s",
				s.cfg.Command, proc.pid, s.cfg.StartupTimeout(), s.stderrHint())
		}
		return nil, fail(sb.PhaseInitialize, sb.CodeInitializeFailed, retryFast, err,
			"the MCP handshake with %s failed: %s%s", s.cfg.Command, describe(err), s.stderrHint())
	}
	l.cs = cs
	go s.watchStdio(l)
	return l, nil
}

var errProcessExited = errors.New("process exited")

// watchStdio waits for the process to exit or the connection to close,
// records why, and closes l.done. An exit fails in-flight calls at once by
// closing the MCP session.
func (s *Session) watchStdio(l *link) {
	waitErr := make(chan error, 1)
	go func() { waitErr <- l.cs.Wait() }()
	select {
	case <-l.proc.exited:
		l.cs.Close()
		<-waitErr
	case err := <-waitErr:
		// A closed stdout usually means the process is exiting; give it a
		// moment so the cause names the exit status.
		if !l.proc.waitExit(exitReapGrace) {
			l.cause = fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, err,
				"the connection to %s (pid %d) closed: %s%s", s.cfg.Command, l.proc.pid, describe(err), s.stderrHint())
		}
	}
	if l.cause == nil {
		l.cause = s.exitFailure(sb.PhaseRuntime, l.proc, "")
	}
	close(l.done)
}

func (s *Session) exitFailure(phase sb.Phase, p *process, when string) *failure {
	<-p.exited
	msg := fmt.Sprintf("%s (pid %d) %s", s.cfg.Command, p.pid, exitDescription(p.exitErr))
	if when != "" {
		msg += " " + when
	}
	return fail(phase, sb.CodeProcessExited, retryFast, p.exitErr, "%s%s", msg, s.stderrHint())
}

// stderrHint quotes the server's last stderr line, which usually names the
// real problem ("Error: Cannot find module ...").
func (s *Session) stderrHint() string {
	last := s.logs.Tail(1)
	if len(last) == 0 || strings.TrimSpace(last[0]) == "" {
		return ""
	}
	line := last[0]
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return "; last stderr line: " + line
}
