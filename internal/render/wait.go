package render

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
)

// waitMargin is added to a server's startup timeout, which bounds one
// attempt, for the default --wait-timeout.
const waitMargin = 10 * time.Second

// Waiter is one --wait under way: the watch of a server's next attempt,
// started before the change that starts it, and how long to wait for the
// outcome (0: the server's startup timeout + 10s).
type Waiter struct {
	Watch   *client.AttemptWatch
	Timeout time.Duration
}

// Close ends the watch; safe on nil.
func (w *Waiter) Close() {
	if w != nil {
		w.Watch.Close()
	}
}

// Finish waits for the outcome of the change that answered with after
// (nil for a restart) and prints it to out (Outcome). cfg is the server's
// config, for the default timeout and for advice. It returns an error if
// the attempt failed or none ended in time.
func (w *Waiter) Finish(ctx context.Context, out io.Writer, asJSON bool, name string, cfg *sb.ServerConfig, after *sb.ServerView) error {
	timeout := w.Timeout
	if timeout == 0 {
		timeout = cfg.StartupTimeout() + waitMargin
	}
	wctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no outcome within --wait-timeout %s", timeout))
	defer cancel()
	o, err := w.Watch.Wait(wctx, after)
	if err != nil {
		return err
	}
	return Outcome(out, asJSON, name, cfg, &o)
}

// Change makes a change of a server that starts a connection attempt
// (add, edit, enable) with do, and prints it: without a Waiter (w nil),
// the server's view as JSON, or line (with the server's status) and, if
// mounts, the sandbox's mounts; with one, the same line (without the
// status) and then the attempt's outcome (Finish, with cfg, else the
// server's own config).
func Change(ctx context.Context, out io.Writer, asJSON bool, w *Waiter, cfg *sb.ServerConfig, mounts bool,
	do func() (sb.ServerView, error), line func(v *sb.ServerView, waiting bool) string) error {
	defer w.Close()
	v, err := do()
	if err != nil {
		return err
	}
	if asJSON && w == nil {
		return JSON(out, v)
	}
	if !asJSON {
		fmt.Fprintln(out, line(&v, w != nil))
		if mounts {
			Mounts(out, v.Sandbox)
		}
	}
	if w == nil {
		return nil
	}
	if cfg == nil {
		cfg = &v.ServerConfig
	}
	return w.Finish(ctx, out, asJSON, v.Name, cfg, &v)
}

// Outcome prints the outcome of the attempt a --wait waited for, to out
// or as JSON (the server's view) if asJSON, and returns an error that
// says how it failed, what the server does next and, for a command not
// found, where the daemon looked (cfg is the server's config).
func Outcome(out io.Writer, asJSON bool, name string, cfg *sb.ServerConfig, o *client.Outcome) error {
	if asJSON {
		if err := JSON(out, o.View); err != nil {
			return err
		}
	} else if o.Error == nil {
		fmt.Fprintln(out, connected(name, o))
	}
	if o.Error != nil {
		return attemptError(name, cfg, o)
	}
	if o.View.Runtime.Status == sb.StatusDisabled {
		if !asJSON {
			fmt.Fprintf(out, "%s is disabled: nothing to wait for\n", name)
		}
	}
	return nil
}

// connected reads "everything connected: 13 tools (stdio, protocol 2025-11-25, pid 123)".
func connected(name string, o *client.Outcome) string {
	rt := o.View.Runtime
	if rt.Status != sb.StatusConnected {
		return fmt.Sprintf("%s: status %s", name, rt.Status)
	}
	var details []string
	if rt.Transport != "" {
		details = append(details, string(rt.Transport))
	}
	if rt.ProtocolVersion != "" {
		details = append(details, "protocol "+rt.ProtocolVersion)
	}
	if rt.PID != 0 {
		details = append(details, fmt.Sprintf("pid %d", rt.PID))
	}
	s := fmt.Sprintf("%s connected: %d tools", name, rt.ToolCount)
	if !o.Attempted {
		s = fmt.Sprintf("%s is connected (its connection was kept): %d tools", name, rt.ToolCount)
	}
	if len(details) > 0 {
		s += " (" + strings.Join(details, ", ") + ")"
	}
	return s
}

// attemptError says how an attempt failed, what the server does next, and,
// for a command not found, where the daemon looked.
func attemptError(name string, cfg *sb.ServerConfig, o *client.Outcome) error {
	e := o.Error
	what := "the first connection attempt failed"
	if !o.Attempted {
		what = "it is in error"
	}
	msg := fmt.Sprintf("%s: %s in phase %s (%s): %s", name, what, e.Phase, e.Code, e.Message)
	switch rt := o.View.Runtime; {
	case rt.Status == sb.StatusConnecting && rt.NextRetryAt != nil:
		msg += fmt.Sprintf("; it retries in %s", time.Until(*rt.NextRetryAt).Round(time.Second))
	case rt.Status == sb.StatusConnecting:
		msg += "; it keeps trying"
	case rt.Status == sb.StatusError && rt.NextRetryAt != nil:
		msg += fmt.Sprintf("; its quick retries are spent, the next try is in %s", time.Until(*rt.NextRetryAt).Round(time.Second))
	}
	if e.Code == sb.CodeCommandNotFound {
		msg += "\n" + commandHint(cfg.Command)
	}
	return fmt.Errorf("%s", msg)
}

// commandHint explains where the daemon looks a command up: a bare name
// in the server's PATH (its env's, else the daemon's own, which is not
// necessarily this shell's), a path as it is.
func commandHint(command string) string {
	if strings.Contains(command, "/") {
		return fmt.Sprintf("hint: the daemon found no executable file at %s", command)
	}
	hint := fmt.Sprintf("hint: the daemon looks %q up in the PATH of the server's env, else in its own PATH, which need not be this shell's", command)
	if p, err := exec.LookPath(command); err == nil {
		hint += fmt.Sprintf("; here it is %s: give --command %s, or --env PATH=...", p, p)
	}
	return hint
}

// WarnCommand warns, on errOut, about a command name (no slash) that this
// shell cannot find either, when the config does not set the PATH to look
// in: the daemon looks it up in its own PATH, so "server add" would
// succeed and the server fail to start.
func WarnCommand(errOut io.Writer, cfg *sb.ServerConfig) {
	if !cfg.IsStdio() || cfg.Command == "" || strings.Contains(cfg.Command, "/") {
		return
	}
	if _, ok := cfg.Env["PATH"]; ok {
		return
	}
	if _, err := exec.LookPath(cfg.Command); err != nil {
		fmt.Fprintf(errOut, "switchboard: warning: %q is not on this shell's PATH either; the daemon looks it up in its own PATH (give a path with a slash, or --env PATH=...)\n", cfg.Command)
	}
}
