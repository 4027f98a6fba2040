package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// StdioConfig is what Stdio needs beside the gateway's options.
type StdioConfig struct {
	DSN             string         // as store.Open takes it
	Toolset         string         // "": every server
	OAuthKeyFile    string         // "": the default (NewOAuth)
	AllowedNetworks []netip.Prefix // re-allowed upstream addresses
	SandboxUser     string         // as SandboxRuntime takes it
	Audit           AuditConfig
}

// Stdio is "switchboard stdio": it runs the servers of the database
// itself and serves them (or one toolset) as one MCP server on stdin and
// stdout until stdin closes or ctx ends, then stops them within
// ShutdownGrace. gwOpts.Logger logs (to stderr: stdout is the client's).
func Stdio(ctx context.Context, c StdioConfig, gwOpts gateway.Options) error {
	log := gwOpts.Logger
	st, err := store.Open(ctx, c.DSN)
	if err != nil {
		return fmt.Errorf("opening the database %s: %w", store.Redact(c.DSN), err)
	}
	defer st.Close()
	if c.Toolset != "" {
		toolsets, err := registry.NewToolsets(st, log)
		if err != nil {
			return err
		}
		if err := toolsets.Load(ctx); err != nil {
			return err
		}
		gwOpts.Toolsets = toolsets
	}
	box, err := SandboxRuntime(c.SandboxUser, log)
	if err != nil {
		return err
	}
	sessOpts := upstream.Options{Egress: egress.NewPolicy(c.AllowedNetworks), Instance: egress.NewInstance(), SandboxDefault: true, Sandbox: box}
	// The tokens "switchboard serve" keeps for OAuth servers serve here too.
	if sessOpts.OAuth, err = NewOAuth(st, c.OAuthKeyFile, &sessOpts); err != nil {
		log.Warn("OAuth tokens cannot be read: "+err.Error(), "error", err)
	}
	reg := registry.New(st, &registry.Options{Logger: log, Session: sessOpts})
	auditLog, stopAudit := startAudit(c.Audit, st, reg, log)
	defer stopAudit() // after the last call, before the store closes
	ex := executor.New(auditLog.Instrument(executor.NewMCP(reg)))
	gwOpts.Executor, gwOpts.Audit = ex, auditLog
	gw := gateway.New(reg, gwOpts)
	defer gw.Close()
	served := gw.Aggregate()
	if c.Toolset != "" {
		var ok bool
		if served, ok = gw.ServeToolset(c.Toolset); !ok {
			return fmt.Errorf("no toolset named %q; \"switchboard toolset list\" lists them", c.Toolset)
		}
	}
	if err := reg.Load(ctx); err != nil {
		return err
	}
	// The client is the local user: its calls' audit entries and spans
	// say so.
	ctx = sb.WithPrincipal(audit.WithSurface(ctx, sb.SurfaceStdio, c.Toolset), sb.Principal{Name: sb.PrincipalLocal})
	runErr := served.Run(ctx, &mcp.StdioTransport{})
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := reg.Shutdown(sctx); err != nil {
		log.Warn("server shutdown", "error", err)
	}
	if runErr != nil && ctx.Err() == nil && !isEOF(runErr) {
		return runErr
	}
	return nil
}

// isEOF reports whether err is the end of stdin: the client hung up, which
// is how a stdio server is told to stop.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed)
}
