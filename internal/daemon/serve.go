package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/sandbox"
	"github.com/switchboard-mcp/switchboard/stats"
	"github.com/switchboard-mcp/switchboard/store"
	"github.com/switchboard-mcp/switchboard/upstream"
	"github.com/switchboard-mcp/switchboard/web"
)

// ShutdownGrace bounds a SIGTERM: HTTP requests and every session are given
// this long in total.
const ShutdownGrace = 10 * time.Second

// maxHeaderWait bounds the wait for a request's headers (a client that
// connects and sends nothing, or trickles its headers), within the idle
// timeout.
const maxHeaderWait = 10 * time.Second

// Config is what Serve needs beside the gateway's options: each field is
// set by the serve flag of (about) its name.
type Config struct {
	Listen, DSN string // --listen; --db, as store.Open takes it
	Auth        Auth   // the credential clients must send (AuthFrom)
	// AllowedHosts are the Host names requests may carry besides loopback
	// names and the listening address (HostsAllowed).
	AllowedHosts    []string
	AllowedNetworks []netip.Prefix   // re-allowed upstream addresses
	ReplicaID       string           // "": random
	ResyncInterval  time.Duration    // 0: never
	OAuthKeyFile    string           // "": the default (NewOAuth)
	Sandbox         *sandbox.Runtime // nil: sandbox.System
	// IdleTimeout closes a connection that waits this long for its next
	// request; MaxConnsPerAddress caps the connections of one client IP
	// (0: no cap).
	IdleTimeout        time.Duration
	MaxConnsPerAddress int
	Audit              AuditConfig // --audit, --audit-retention, --audit-max-rows
}

// Serve is "switchboard serve": it locks a SQLite database, starts every
// configured server, and serves the HTTP API, the MCP endpoints, the web
// page and the metrics until ctx ends, then shuts everything down within
// ShutdownGrace.
func Serve(ctx context.Context, log *slog.Logger, sc Config, gwOpts gateway.Options) error {
	started := time.Now()
	if f := store.SQLiteFile(sc.DSN); f != "" {
		release, err := lockDatabase(f)
		if err != nil {
			return err
		}
		defer release()
	}
	st, err := store.Open(ctx, sc.DSN)
	if err != nil {
		return fmt.Errorf("opening the database %s: %w", store.Redact(sc.DSN), err)
	}
	defer st.Close()
	toolsets, tokens, err := loadToolsetsAndTokens(ctx, st, log)
	if err != nil {
		return err
	}
	defer tokens.Close()

	// One instance for the sessions and the /mcp that checks their requests.
	instance := egress.NewInstance()
	sessOpts := upstream.Options{Egress: egress.NewPolicy(sc.AllowedNetworks), Instance: instance, SandboxDefault: true, Sandbox: sc.Sandbox}
	oauth, err := NewOAuth(st, sc.OAuthKeyFile, &sessOpts)
	if err != nil {
		// Only servers that require OAuth need it: they say so in their
		// error (phase auth); the rest run.
		log.Warn("OAuth tokens cannot be kept: "+err.Error(), "error", err)
	}
	sessOpts.OAuth = oauth
	if oauth != nil && gwOpts.TaskKey == nil {
		// The task ids one replica gives, another accepts (gateway/tasks.go).
		gwOpts.TaskKey = oauth.Key.Derive("task ids")
	}
	var private []string // no server's derived mounts show the database
	if f := store.SQLiteFile(sc.DSN); f != "" {
		if abs, err := filepath.Abs(f); err == nil {
			private = append(private, filepath.Dir(abs))
		}
	}
	reg := registry.New(st, &registry.Options{Logger: log, ReplicaID: sc.ReplicaID, Session: sessOpts,
		Followers: []registry.Follower{toolsets, tokens}, PrivateDirs: private})
	m := metrics.New(reg)
	m.ReportReplica(reg.ReplicaInfo().ID, func() time.Time { return reg.ReplicaInfo().LastSync })
	auditLog, stopAudit := startAudit(sc.Audit, st, reg, log)
	defer stopAudit() // after the last call, before the store closes
	if auditLog != nil {
		m.ReportAudit(auditLog)
	}
	series := stats.New(nil)
	ex := executor.New(auditLog.Instrument(m.Instrument(series.Instrument(executor.NewMCP(reg)))))
	gwOpts.Executor, gwOpts.Toolsets, gwOpts.Audit = ex, toolsets, auditLog
	gw := gateway.New(reg, gwOpts)
	m.ReportSessions(gw)
	defer gw.Close()
	page := web.New(&web.Options{Logger: log})
	handler := httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Metrics: m, Stats: series, Token: sc.Auth.Token, CredentialFile: sc.Auth.File,
		AllowedHosts: sc.AllowedHosts, Logger: log, MCP: gw.Handler(), Instance: instance,
		Page: page, Authenticate: page.Authenticate, OAuth: oauth,
		Toolsets: toolsets, ToolsetMCP: gw.ToolsetHandler(), Tokens: tokens, Warnings: gw.Warnings, Search: gw.Search, Audit: auditLog})

	tcp, err := net.Listen("tcp", sc.Listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listening on %s: %w\n(another process listens there, perhaps another switchboard serve: stop it, or give --listen another address)", sc.Listen, err)
	}
	if err != nil {
		return fmt.Errorf("listening on %s: %w", sc.Listen, err)
	}
	perAddress := sc.MaxConnsPerAddress
	if perAddress == 0 {
		perAddress = -1 // the flag's 0 is "no cap"
	}
	ln := httpapi.Limit(tcp, httpapi.ListenerOptions{MaxPerAddress: perAddress, IdleTimeout: sc.IdleTimeout, Logger: log})
	m.ReportConnections(ln)
	warning, err := exposure(isLoopback(ln.Addr()), sc.Auth)
	if err != nil {
		ln.Close()
		return err
	}
	if warning != "" {
		log.Warn(warning, "addr", ln.Addr().String())
	}
	if sc.Auth.File != "" {
		// Where it is, never what it is.
		log.Info("clients must send the credential in this file; the CLI of this user reads it", "file", sc.Auth.File, "generated", sc.Auth.Generated)
	}
	if err := reg.Load(ctx); err != nil {
		ln.Close()
		return err
	}
	// Other replicas' changes, until the registry shuts down.
	syncCtx, stopSync := context.WithCancel(context.Background())
	syncDone := make(chan struct{})
	go func() { defer close(syncDone); _ = reg.RunSync(syncCtx, sc.ResyncInterval) }()
	defer func() { stopSync(); <-syncDone }()
	log.Info("switchboard serving", "addr", "http://"+ln.Addr().String(), "db", store.Redact(sc.DSN), "servers", len(reg.Names()),
		"replica", reg.ReplicaInfo().ID)
	go func() {
		<-reg.Loaded()
		log.Info("every server started", "servers", len(reg.Names()), "elapsed", time.Since(started).Round(time.Millisecond))
		// Starting many servers leaves garbage the runtime would keep
		// mapped for a long while; an idle daemon should not look that big.
		// Most of it comes from the gateway copying every server's tools
		// (the go-sdk re-decodes each schema), which follows the servers:
		// so once the gateway has caught up.
		if gw.WaitInStep(ctx) == nil {
			debug.FreeOSMemory()
		}
	}()

	// Streams (events, SSE calls) end with baseCtx, so that Shutdown does
	// not wait for clients that never hang up.
	baseCtx, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	// No ReadTimeout or WriteTimeout: they would cut the long-lived
	// streams (the event stream, MCP GET streams, SSE calls). An idle
	// connection is one between requests, or before its first.
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: min(maxHeaderWait, sc.IdleTimeout),
		IdleTimeout:       sc.IdleTimeout,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc:
		stopSync()
		<-syncDone
		reg.Shutdown(context.Background())
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	stopping := time.Now()
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	cancelBase()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("http shutdown", "error", err)
	}
	stopSync()
	<-syncDone
	if err := reg.Shutdown(sctx); err != nil {
		log.Warn("server shutdown", "error", err)
	}
	log.Info("stopped", "shutdown", time.Since(stopping).Round(time.Millisecond), "uptime", time.Since(started).Round(time.Second))
	return nil
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// loadToolsetsAndTokens reads the toolsets and the API tokens of st, for
// serve and stdio.
func loadToolsetsAndTokens(ctx context.Context, st sb.Store, log *slog.Logger) (*registry.Toolsets, *registry.Tokens, error) {
	toolsets, err := registry.NewToolsets(st, log)
	if err != nil {
		return nil, nil, err
	}
	tokens, err := registry.NewTokens(st, log)
	if err != nil {
		return nil, nil, err
	}
	if err := toolsets.Load(ctx); err != nil {
		return nil, nil, fmt.Errorf("reading the database: %w", err)
	}
	if err := tokens.Load(ctx); err != nil {
		return nil, nil, fmt.Errorf("reading the database: %w", err)
	}
	return toolsets, tokens, nil
}
