package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

func newCheckCommand() *cobra.Command {
	var (
		cfg            sb.ServerConfig
		sf             serverFlags
		startupTimeout time.Duration
		asJSON         bool
		verbose        bool
	)
	cmd := &cobra.Command{
		Use:   "check (--command CMD [--arg A]... [--env K=V]... | --url URL [--header K:V]...)",
		Short: "Connect to one MCP server, list what it offers, and disconnect",
		Long: `check runs a throwaway session to one MCP server described by flags and
prints its runtime info: status, transport, protocol version, server info and
tools; or the error with the phase where it failed (spawn, connect,
initialize, discover, auth, ...). The session makes at most one attempt and
leaves no process behind. The exit status is non-zero unless it connected.`,
		Example: `  switchboard check --command npx --arg -y --arg @modelcontextprotocol/server-everything
  switchboard check --url https://example.com/mcp --header "Authorization: Bearer $TOKEN"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Name = "check"
			if err := sf.apply(cmd, &cfg); err != nil {
				return err
			}
			cfg.StartupTimeoutMS = startupTimeout.Milliseconds()
			cfg.Retry = &sb.RetryConfig{MaxAttempts: 1}
			if err := cfg.Validate(); err != nil {
				return err
			}
			level := slog.LevelWarn + 1 // quiet unless asked: the result is printed below
			if verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			return runCheck(cmd.Context(), cmd.OutOrStdout(), &cfg, log, asJSON)
		},
	}
	f := cmd.Flags()
	sf.register(f, &cfg, "")
	f.DurationVar(&startupTimeout, "startup-timeout", 0, "how long to wait for the connection (default 120s stdio, 30s remote)")
	f.BoolVar(&asJSON, "json", false, "print the runtime info as JSON")
	f.BoolVarP(&verbose, "verbose", "v", false, "log every step of the session to stderr")
	return cmd
}

func runCheck(ctx context.Context, out io.Writer, cfg *sb.ServerConfig, log *slog.Logger, asJSON bool) error {
	s := upstream.New(cfg, &upstream.Options{Logger: log})
	startErr := s.Start(ctx)
	info := s.Info()
	logs := s.Logs()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), upstream.DefaultShutdownTimeout)
	defer cancel()
	if err := s.Shutdown(shutdownCtx); err != nil {
		log.Warn("shutdown", "error", err)
	}

	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Runtime sb.RuntimeInfo `json:"runtime"`
			Logs    []string       `json:"logs,omitempty"`
		}{info, logs}); err != nil {
			return err
		}
	} else {
		printInfo(out, info, logs, startErr != nil)
	}
	if startErr != nil {
		return fmt.Errorf("not connected")
	}
	return nil
}

func printInfo(out io.Writer, info sb.RuntimeInfo, logs []string, failed bool) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	if failed && info.Error != nil {
		row("status", "error")
		row("phase", string(info.Error.Phase))
		row("code", string(info.Error.Code))
		row("error", info.Error.Message)
	} else {
		row("status", string(info.Status))
		row("transport", string(info.Transport))
		row("protocol", info.ProtocolVersion)
		if info.ServerInfo != nil {
			row("server", strings.TrimSpace(info.ServerInfo.Name+" "+info.ServerInfo.Version))
		}
		row("tools", fmt.Sprint(info.ToolCount))
		row("resources", fmt.Sprint(info.ResourceCount))
		row("prompts", fmt.Sprint(info.PromptCount))
	}
	tw.Flush()
	if !failed && len(info.Tools) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tDESCRIPTION")
		for _, t := range info.Tools {
			fmt.Fprintf(tw, "%s\t%s\n", t.Name, firstLine(t.Description, 80))
		}
		tw.Flush()
	}
	if failed && len(logs) > 0 {
		fmt.Fprintln(out, "\nlast stderr lines:")
		for _, l := range logs[max(0, len(logs)-10):] {
			fmt.Fprintln(out, "  "+l)
		}
	}
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}

// parsePairs parses "K<sep>V" flag values into a map.
func parsePairs(pairs []string, sep, flag string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want K%sV", flag, p, sep)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m, nil
}
