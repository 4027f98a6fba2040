package main

// This file holds --wait of "server add", "edit", "enable" and "restart":
// the command returns once the first connection attempt its change started
// has connected or failed, prints how, and exits non-zero if it failed.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
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
	return render.Outcome(out, asJSON, name, cfg, &o)
}

// change makes a change of the server name that starts a connection
// attempt (add, edit, enable) and prints it: without --wait, the server's
// view as JSON, or line (with the server's status) and, if mounts, the
// sandbox's mounts; with --wait, the same line (without the status) and
// then the attempt's outcome (finish, with cfg, else the server's own
// config).
func (wf *waitFlags) change(cmd *cobra.Command, c *client.Client, name string, cfg *sb.ServerConfig, mounts bool,
	do func() (sb.ServerView, error), line func(v *sb.ServerView, waiting bool) string) error {
	aw, err := wf.watch(cmd, c, name)
	if err != nil {
		return err
	}
	defer aw.close()
	v, err := do()
	if err != nil {
		return err
	}
	out, asJSON := cmd.OutOrStdout(), jsonOutput(cmd)
	if asJSON && aw == nil {
		return render.JSON(out, v)
	}
	if !asJSON {
		fmt.Fprintln(out, line(&v, aw != nil))
		if mounts {
			render.Mounts(out, v.Sandbox)
		}
	}
	if aw == nil {
		return nil
	}
	if cfg == nil {
		cfg = &v.ServerConfig
	}
	return aw.finish(cmd.Context(), out, asJSON, v.Name, cfg, &v)
}
