package main

// This file holds --wait of "server add", "edit", "enable" and "restart":
// the command returns once the first connection attempt its change started
// has connected or failed, prints how, and exits non-zero if it failed.

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
)

// waitMargin is added to a server's startup timeout, which bounds one
// attempt, for the default --wait-timeout.
const waitMargin = 10 * time.Second

// waitFlags are --wait and --wait-timeout.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (wf *waitFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&wf.wait, "wait", false, "wait for the first connection attempt and print its outcome; exit non-zero if it failed")
	f.DurationVar(&wf.timeout, "wait-timeout", 0, "give up waiting after this long (default: the server's startup timeout + 10s)")
}

func (wf *waitFlags) check() error {
	if wf.timeout < 0 {
		return fmt.Errorf("--wait-timeout must not be negative")
	}
	if wf.timeout > 0 && !wf.wait {
		return fmt.Errorf("--wait-timeout goes with --wait")
	}
	return nil
}

// watch starts watching name's next attempt if --wait is set; the caller
// makes its change after this returns and then calls finish. A nil watch
// (no --wait) is ready to use.
func (wf *waitFlags) watch(cmd *cobra.Command, c *client.Client, name string) (*attemptWait, error) {
	if !wf.wait {
		return nil, nil
	}
	w, err := c.WatchAttempt(cmd.Context(), name)
	if err != nil {
		return nil, err
	}
	return &attemptWait{w: w, timeout: wf.timeout}, nil
}

// attemptWait is one --wait under way.
type attemptWait struct {
	w       *client.AttemptWatch
	timeout time.Duration
}

// close ends the watch; safe on nil.
func (aw *attemptWait) close() {
	if aw != nil {
		aw.w.Close()
	}
}

// finish waits for the outcome of the change that answered with after (nil
// for a restart) and prints it to out, as JSON (the server's view) if
// asJSON. cfg is the server's config, for the default timeout and for
// advice. It returns an error if the attempt failed or none ended in time.
func (aw *attemptWait) finish(ctx context.Context, out io.Writer, asJSON bool, name string, cfg *sb.ServerConfig, after *sb.ServerView) error {
	timeout := aw.timeout
	if timeout == 0 {
		timeout = cfg.StartupTimeout() + waitMargin
	}
	wctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no outcome within --wait-timeout %s", timeout))
	defer cancel()
	o, err := aw.w.Wait(wctx, after)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(out, o.View); err != nil {
			return err
		}
	} else if o.Error == nil {
		fmt.Fprintln(out, describeConnected(name, &o))
	}
	if o.Error != nil {
		return attemptError(name, cfg, &o)
	}
	if o.View.Runtime.Status == sb.StatusDisabled {
		if !asJSON {
			fmt.Fprintf(out, "%s is disabled: nothing to wait for\n", name)
		}
	}
	return nil
}

// describeConnected reads "everything connected: 13 tools (stdio, protocol 2025-11-25, pid 123)".
func describeConnected(name string, o *client.Outcome) string {
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

// warnCommand warns, on errOut, about a command name (no slash) that this
// shell cannot find either, when the config does not set the PATH to look
// in: the daemon looks it up in its own PATH, so "server add" would
// succeed and the server fail to start.
func warnCommand(errOut io.Writer, cfg *sb.ServerConfig) {
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
