package main

// This file holds --wait of "server add", "edit", "enable" and "restart":
// the command returns once the first connection attempt its change started
// has connected or failed, prints how, and exits non-zero if it failed.

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

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
// makes its change after this returns and then calls Finish. A nil
// Waiter (no --wait) is ready to use.
func (wf *waitFlags) watch(cmd *cobra.Command, c *client.Client, name string) (*render.Waiter, error) {
	if !wf.wait {
		return nil, nil
	}
	w, err := c.WatchAttempt(cmd.Context(), name)
	if err != nil {
		return nil, err
	}
	return &render.Waiter{Watch: w, Timeout: wf.timeout}, nil
}

// change makes a change of the server name that starts a connection
// attempt (add, edit, enable) and prints it (render.Change), waiting for
// the attempt's outcome with --wait.
func (wf *waitFlags) change(cmd *cobra.Command, c *client.Client, name string, cfg *sb.ServerConfig, mounts bool,
	do func() (sb.ServerView, error), line func(v *sb.ServerView, waiting bool) string) error {
	w, err := wf.watch(cmd, c, name)
	if err != nil {
		return err
	}
	return render.Change(cmd.Context(), cmd.OutOrStdout(), jsonOutput(cmd), w, cfg, mounts, do, line)
}
