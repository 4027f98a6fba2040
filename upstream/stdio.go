package upstream

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/sandbox"
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
	proc, f := s.spawn(ctx)
	if f != nil {
		if f.phase == sb.PhaseSandboxCreate {
			f.msg += s.stderrHint() // bwrap's own complaint, if it made one
		}
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
	cs, err := s.connect(hctx, l, s.ioTransport(l, proc.stdout, proc.stdin))
	cancel(nil)
	if err != nil {
		// Did it exit on its own, before we stop it below? Only a closed
		// pipe says so; other errors (malformed JSON) make the go-sdk close
		// the server's stdin, and the exit that follows is ours. A closed
		// pipe is usually seen a moment before the exit is reaped, so give
		// the reaper a moment.
		exited := false
		// A process that exits at once (a package manager that cannot
		// install) may be gone before initialize is written: EPIPE.
		if (pipeClosed(err) || errors.Is(err, syscall.EPIPE)) && ctx.Err() == nil {
			exited = proc.waitExit(exitReapGrace)
		}
		proc.stop()
		switch {
		case exited:
			return nil, s.exitFailure(sb.PhaseSpawn, proc, "before completing the MCP handshake")
		case context.Cause(ctx) == errAttemptTimeout && s.installing():
			return nil, fail(sb.PhaseDepInstall, sb.CodeTimeout, retryFast, err,
				"%s (pid %d) was still installing the server when the %s startup timeout passed: a cold install can take minutes "+
					"(raise startup_timeout_ms); the sandbox workspace, unless isolated, keeps what was downloaded for the next attempt%s",
				s.cfg.Command, proc.pid, s.cfg.StartupTimeout(), s.stderrHint())
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

// watchStdio waits for the connection to close and records why
// (Switchboard closing it, or the process's exit: link.ended). An exit
// fails in-flight calls at once by closing the MCP session (whenExited), so
// the one goroutine waiting on the connection learns of both.
func (s *Session) watchStdio(l *link) {
	l.proc.whenExited(func() { l.cs.Close() })
	err := l.cs.Wait()
	l.ended(func() *failure {
		// A closed stdout usually means the process is exiting; give it a
		// moment so the cause names the exit status.
		if !l.proc.waitExit(exitReapGrace) {
			return fail(sb.PhaseRuntime, sb.CodeConnectionClosed, retryFast, err,
				"the connection to %s (pid %d) closed: %s%s", s.cfg.Command, l.proc.pid, describe(err), s.stderrHint())
		}
		return s.exitFailure(sb.PhaseRuntime, l.proc, "")
	})
}

func (s *Session) exitFailure(phase sb.Phase, p *process, when string) *failure {
	<-p.exited
	if p.box != nil {
		// A runtime's last words (its out-of-memory message) are read below;
		// the sandbox is gone with bwrap, so its stderr closes at once.
		t := time.NewTimer(exitReapGrace)
		select {
		case <-p.stderrDone:
		case <-t.C:
		}
		t.Stop()
	}
	tail := s.logs.Tail(5)
	desc := exitDescription(p.exitErr)
	if p.box != nil {
		if code, why := p.box.Explain(p.exitErr); code != "" {
			return fail(phase, code, retryFast, p.exitErr, "%s (pid %d) %s%s", s.cfg.Command, p.pid, why, s.stderrHint())
		}
		if line, ok := sandbox.SetupFailure(tail); ok && phase == sb.PhaseSpawn {
			return fail(sb.PhaseSandboxCreate, sb.CodeSandboxCreate, retrySlow, p.exitErr,
				"bubblewrap could not set up the sandbox of %s: %s", s.cfg.Command, strings.TrimPrefix(line, "bwrap: "))
		}
		desc = sandbox.DescribeExit(p.exitErr)
	}
	hidden := ""
	if p.box != nil {
		hidden = s.hiddenPathHint(p.exitErr, tail)
	}
	if phase == sb.PhaseSpawn && isPackageManager(s.cfg.Command, s.cfg.Args) && installFailed(tail) {
		return fail(sb.PhaseDepInstall, sb.CodeDepInstallFailed, retryFast, p.exitErr,
			"%s (pid %d) could not install the server and %s%s%s", s.cfg.Command, p.pid, desc, s.stderrHint(), hidden)
	}
	msg := fmt.Sprintf("%s (pid %d) %s", s.cfg.Command, p.pid, desc)
	if when != "" {
		msg += " " + when
	}
	return fail(phase, sb.CodeProcessExited, retryFast, p.exitErr, "%s%s%s", msg, s.stderrHint(), hidden)
}

// installing reports whether a server that has not answered initialize
// is most likely still being installed: it is started by a package
// manager (npx, uvx, ...) that has printed nothing since, or only its own
// progress. A server that is installed usually says something on stderr
// when it starts.
func (s *Session) installing() bool {
	if !isPackageManager(s.cfg.Command, s.cfg.Args) {
		return false
	}
	last := s.logs.Tail(1)
	if len(last) == 0 || strings.TrimSpace(last[0]) == "" {
		return true
	}
	l := strings.ToLower(last[0])
	for _, w := range []string{"npm warn", "npm http", "npm notice", "downloading", "resolved ", "prepared ", "installed ", "building "} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// isPackageManager reports whether command (with args) installs the
// server before running it: npx, uvx and their kin, or npm exec, pnpm
// dlx, yarn dlx, bun x, uv tool run.
func isPackageManager(command string, args []string) bool {
	first := ""
	if len(args) > 0 {
		first = args[0]
	}
	switch filepath.Base(command) {
	case "npx", "uvx", "pipx", "bunx", "pnpx":
		return true
	case "npm", "pnpm", "yarn", "bun":
		return first == "exec" || first == "dlx" || first == "x"
	case "uv":
		return first == "tool" || first == "run"
	}
	return false
}

// installFailed reports whether a package manager's last stderr lines say
// that it could not install the server (as opposed to the server, once
// installed, failing).
func installFailed(tail []string) bool {
	for _, line := range tail {
		l := strings.ToLower(strings.TrimSpace(line))
		if strings.HasPrefix(l, "npm err!") || strings.HasPrefix(l, "npm error") || strings.Contains(l, "err_pnpm") ||
			strings.HasPrefix(l, "error: failed to") || strings.Contains(l, "no solution found") ||
			strings.Contains(l, "failed to download") {
			return true
		}
	}
	return false
}

// sandboxView describes the sandbox of the session's server for its
// runtime view: the running process's own, else the one the next attempt
// will set up. It is nil for servers that are not stdio, and for those to
// which no sandbox config applies. s.mu is held; it does not block.
func (s *Session) sandboxView(l *link) *sb.SandboxInfo {
	if !s.cfg.IsStdio() || s.opts.Dial != nil {
		return nil
	}
	profile, ok := s.sandboxProfile()
	if !ok {
		if s.cfg.Sandbox.Derived() { // nothing of its own: no default applies here
			return nil
		}
		return &sb.SandboxInfo{Enabled: false, Reason: `turned off in the config ("sandbox": {"enabled": false})`}
	}
	if l != nil && l.proc != nil {
		if l.proc.box != nil {
			return l.proc.box.Info()
		}
		return &sb.SandboxInfo{Enabled: false, Reason: l.proc.unboxedWhy}
	}
	rt := s.sandboxRuntime()
	if works, known, reason := rt.Known(); known && !works && !profile.Required {
		return &sb.SandboxInfo{Enabled: false,
			Reason: "bubblewrap does not work here, so the default profile runs the server unsandboxed: " + reason}
	}
	return rt.Plan(profile)
}

// stderrHint quotes the stderr line that names the real problem: of the
// server's last lines, the last that reads as an error ("Error: Cannot find
// module ...", "ModuleNotFoundError: ...", "panic: ..."), else the last
// line. A crashing runtime often ends with something else: node prints its
// version ("Node.js v20.20.2") after the stack, Go the goroutine's frames
// after the panic.
func (s *Session) stderrHint() string {
	line, last := tellingLine(s.logs.Tail(stderrScanLines))
	if line == "" {
		return ""
	}
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	if last {
		return "; last stderr line: " + line
	}
	return "; stderr said: " + line
}

// stderrScanLines is how many of the last stderr lines stderrHint reads:
// enough for node's report of an uncaught error (the error, its stack of
// ten frames, its properties and the version banner).
const stderrScanLines = 40

// errorLine matches a line that says what went wrong, at its start (the
// frames of a stack trace are indented): a Go panic or fatal error, a
// JavaScript or Python error or exception (dotted names too), an "error:"
// or "fatal:" of any case, or a log line of level ERROR or FATAL.
var errorLine = regexp.MustCompile(`^(?:panic: |fatal error: |Uncaught |[\w.]*(?:Error|Exception)\b|(?i:error|fatal)\b)|\blevel=(?:ERROR|FATAL)\b`)

// tellingLine returns, of lines, the last one errorLine matches, or else
// the last one not blank; last says whether it is the last line not blank.
func tellingLine(lines []string) (line string, last bool) {
	lastAt := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		if lastAt < 0 {
			lastAt = i
		}
		if errorLine.MatchString(lines[i]) {
			return lines[i], i == lastAt
		}
	}
	if lastAt < 0 {
		return "", false
	}
	return lines[lastAt], true
}
