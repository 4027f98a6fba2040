package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/buildinfo"
	"github.com/switchboard-mcp/switchboard/internal/daemon"
	"github.com/switchboard-mcp/switchboard/registry"
)

// Defaults of serve, each mirrored by an environment variable.
const (
	defaultListen = "127.0.0.1:7420"
	defaultDB     = "sqlite:./switchboard.db"
)

// version is reported to MCP clients; set with -ldflags "-X main.version=...".
var version = "dev"

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func newServeCommand() *cobra.Command {
	var (
		listen, dsn, token string
		tokenFile          string
		oauthKeyFile       string
		insecureNoAuth     bool
		allowedHosts       []string
		upstreamNets       []string
		logLevel           string
		cpuProfile         string
		memProfile         string
		sandboxUser        string
		mcpFlags           endpointFlags
		sessFlags          sessionFlags
		replica            replicaFlags
		conns              connFlags
		auditOpts          auditFlags
	)
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [--db DSN] [--token-file FILE]",
		Short: "Run the daemon: every configured server, the HTTP API and the metrics",
		Long: `serve loads every server configured in the database, starts the enabled ones
(at most 16 at a time, without delaying the API), and serves the HTTP API,
the MCP endpoint and the Prometheus metrics until SIGTERM or SIGINT, when it
shuts every server down within 10 seconds.

Stdio servers run in a bubblewrap sandbox (system directories read-only,
home hidden, a workspace of their own) wherever bubblewrap works, unless a
server's config says "sandbox": {"enabled": false}; the runtime view says
which. See docs/sandbox.md.

The database is SQLite by default (a file kept at mode 0600), or
PostgreSQL with a postgres:// DSN. One serve at a time uses a SQLite file:
it holds FILE.lock beside it (its pid, flock'd), and a second serve on the
file is refused, naming the first. Several serve processes (replicas, e.g.
behind a load balancer) may share one PostgreSQL database: a change made
through any of them reaches the others within moments (LISTEN/NOTIFY), and
each compares everything with the database every --resync-interval in case
a notification was lost. Each replica runs its own server sessions. MCP
requests of protocol 2026-07-28 (stateless) may go to any replica; a
Streamable HTTP session of an older protocol lives on the replica that
created it, so the balancer must send it there (by its Mcp-Session-Id):
any other replica answers 404, and the client starts a new session.

Everything but /healthz requires a credential, on every listener: whoever
may use the API or /mcp can run any command as the user who runs serve. It
is the one in --token-file (a file of mode 0600) or --token if given,
else SWITCHBOARD_TOKEN's (a --token is on the command line, which every
local user can read: serve warns about it); otherwise serve generates one on
its first start and keeps it in $XDG_CONFIG_HOME/switchboard/token
(~/.config/switchboard/token), a file only this user can read, where the
CLI of the same user finds it with no configuration.
--insecure-no-auth turns the credential off: then anyone who can reach
the listener can run any command.

It listens on loopback only unless told otherwise. A request must name the
daemon in its Host header: localhost, a loopback address, the address it
was sent to, the host of --listen, or a name given with --allowed-host (a
reverse proxy that forwards its own name needs it); other names are
refused, as DNS rebinding would send them.

The MCP endpoint (/mcp, /mcp/NAME) answers a list, or a call of a tool not
listed yet, once every server it shows has connected or failed its first
attempt, for at most --ready-timeout after the server started; and caps
every tool call, progress or not, at --max-total-timeout unless the
server's max_total_timeout_ms says otherwise. --mcp-mode search makes /mcp
list two tools, search_tools and call_tool, instead of every tool (the
per-server endpoints still list theirs).

Every tool call, resource read and prompt get, from every surface, and
every API request that changes something, is recorded in the database's
audit log (who, where, what, outcome, duration, sizes, the SHA-256 of the
arguments; the arguments only for a server whose config says "audit":
{"arguments": true}), written in batches off the calls' path; replicas
share it. Entries older than --audit-retention-days, and beyond the newest
--audit-max-rows, are deleted in the background. "switchboard audit"
reads it; --audit=false records nothing.

Traces (OpenTelemetry, OTLP over HTTP) are exported when the standard
environment asks for them: OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp), with
OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and the exporter's other
variables; see docs/observability.md.`,
		Example: `  switchboard serve
  switchboard serve --listen 127.0.0.1:8080 --db sqlite:/var/lib/switchboard/db
  switchboard serve --listen 0.0.0.0:7420 --allowed-host switchboard.example.com
  SWITCHBOARD_TOKEN=$(openssl rand -hex 16) switchboard serve --db postgres://sb@db/switchboard`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd, logLevel)
			if err != nil {
				return err
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			ctx := cmd.Context()
			if memProfile != "" {
				ctx = heapProfileAtStop(ctx, memProfile, log)
			}
			// SWITCHBOARD_TOKEN is read here, not as the flag's default: a
			// default is printed by --help, and a token must never be.
			token, tokenWarning, err := daemon.TokenFromFlags(token, tokenFile)
			if err != nil {
				return err
			}
			if tokenWarning != "" {
				log.Warn(tokenWarning)
			}
			auth, err := daemon.AuthFrom(token, os.Getenv("SWITCHBOARD_TOKEN"), insecureNoAuth, client.CredentialPath)
			if err != nil {
				return err
			}
			hosts, err := daemon.HostsAllowed(allowedHosts, listen)
			if err != nil {
				return err
			}
			gwOpts, err := mcpFlags.options()
			if err != nil {
				return err
			}
			if err := sessFlags.apply(&gwOpts); err != nil {
				return err
			}
			nets, err := upstreamNetworks(upstreamNets)
			if err != nil {
				return err
			}
			if replica.resyncInterval < 0 {
				return fmt.Errorf("--resync-interval %s: must not be negative", replica.resyncInterval)
			}
			if err := conns.check(); err != nil {
				return err
			}
			box, err := daemon.SandboxRuntime(sandboxUser, log)
			if err != nil {
				return err
			}
			auditCfg, err := auditOpts.config()
			if err != nil {
				return err
			}
			gwOpts.Logger, gwOpts.Version = log, buildinfo.Read(version).Version
			stopTraces, err := startTraces(cmd.Context(), log, gwOpts.Version)
			if err != nil {
				return err
			}
			defer stopTraces()
			return daemon.Serve(ctx, log, daemon.Config{Listen: listen, DSN: dsn, Auth: auth, AllowedHosts: hosts,
				AllowedNetworks: nets, ReplicaID: replica.id, ResyncInterval: replica.resyncInterval, OAuthKeyFile: oauthKeyFile,
				Sandbox: box, IdleTimeout: conns.idleTimeout, MaxConnsPerAddress: conns.perAddress, Audit: auditCfg}, gwOpts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", envOr("SWITCHBOARD_LISTEN", defaultListen), "address to listen on (env SWITCHBOARD_LISTEN)")
	f.StringVar(&dsn, "db", envOr("SWITCHBOARD_DB", defaultDB), "database: sqlite:PATH or postgres://... (env SWITCHBOARD_DB)")
	f.StringVar(&token, "token", "", "bearer token required on the API and /mcp; every local user can read a command line: prefer --token-file or SWITCHBOARD_TOKEN (default: the generated credential)")
	f.StringVar(&tokenFile, "token-file", "", "read the bearer token from this file, which must be this user's and of mode 0600 (or stricter); instead of --token")
	registerOAuthKeyFlag(f, &oauthKeyFile)
	f.BoolVar(&insecureNoAuth, daemon.InsecureNoAuthFlag, false, "require no credential at all: anyone who can reach the listener can run any command as this user")
	f.StringSliceVar(&allowedHosts, "allowed-host", envList("SWITCHBOARD_ALLOWED_HOSTS"),
		`a Host name requests may carry besides loopback names and the listening address; repeatable, "*" for any (env SWITCHBOARD_ALLOWED_HOSTS, comma-separated)`)
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile (go tool pprof) of the whole run to this file when serve exits; for benchmarks")
	f.StringVar(&memProfile, "mem-profile", "", "write a heap profile (go tool pprof) to this file on SIGTERM or SIGINT, before serve shuts down: what the running daemon keeps live; for benchmarks")
	registerUpstreamNetworks(f, &upstreamNets)
	registerSandboxUser(f, &sandboxUser)
	mcpFlags.register(f)
	sessFlags.register(f)
	conns.register(f)
	auditOpts.register(f)
	f.StringVar(&replica.id, "replica-id", os.Getenv("SWITCHBOARD_REPLICA_ID"),
		"this replica's name in the metrics and logs, among the serve processes sharing a database (env SWITCHBOARD_REPLICA_ID; default: random at start)")
	f.DurationVar(&replica.resyncInterval, "resync-interval", registry.DefaultResyncInterval,
		"how often to compare every server with the database, in case a change notification from another replica was lost; 0: never")
	return cmd
}

// startCPUProfile starts writing a CPU profile to path; stop ends it.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// heapProfileAtStop returns a context that ends when ctx does, once a
// heap profile has been written to path: the shutdown that follows frees
// the servers' sessions, so a profile written at exit would show none.
func heapProfileAtStop(ctx context.Context, path string, log *slog.Logger) context.Context {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, func() {
		defer cancel()
		if err := writeHeapProfile(path); err != nil {
			log.Error("--mem-profile: the heap profile was not written", "err", err)
		}
	})
	return inner
}

// writeHeapProfile writes the heap profile as of a fresh collection, so
// that its in-use figures are the live heap.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// registerUpstreamNetworks adds --allow-upstream-network, shared by serve
// and stdio.
func registerUpstreamNetworks(f *pflag.FlagSet, nets *[]string) {
	f.StringSliceVar(nets, "allow-upstream-network", envList("SWITCHBOARD_ALLOW_UPSTREAM_NETWORKS"),
		"a CIDR (or address) remote servers may have although it is link-local, a cloud metadata address or unspecified; repeatable (env SWITCHBOARD_ALLOW_UPSTREAM_NETWORKS, comma-separated)")
}

// upstreamNetworks parses --allow-upstream-network values: CIDRs, or
// single addresses.
func upstreamNetworks(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				return nil, fmt.Errorf("--allow-upstream-network %q: want a CIDR such as 169.254.0.0/16, or an address", v)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p)
	}
	return out, nil
}

// connFlags bound the connections of serve's listener.
type connFlags struct {
	idleTimeout time.Duration
	perAddress  int
}

// defaultIdleTimeout closes a keep-alive connection that has sent no
// request for this long: clients reconnect at once when they need to,
// and idle connections cannot pile up to the open-file limit.
const defaultIdleTimeout = 2 * time.Minute

func (cf *connFlags) register(f *pflag.FlagSet) {
	f.DurationVar(&cf.idleTimeout, "idle-timeout", defaultIdleTimeout,
		"close a connection that waits this long for its next request (and one that takes this long, at most 10s, to send a request's headers); streams (events, MCP, SSE calls) are not cut")
	f.IntVar(&cf.perAddress, "max-connections-per-address", httpapi.DefaultMaxConnsPerAddress,
		"cap on the open connections of one client IP (IPv6: its /64); one over it is closed at once; 0: no cap")
}

func (cf *connFlags) check() error {
	switch {
	case cf.idleTimeout <= 0:
		return fmt.Errorf("--idle-timeout %s: must be positive", cf.idleTimeout)
	case cf.perAddress < 0:
		return fmt.Errorf("--max-connections-per-address %d: must not be negative", cf.perAddress)
	}
	return nil
}

// replicaFlags name this replica and pace its resync with the database.
type replicaFlags struct {
	id             string
	resyncInterval time.Duration
}

// envList returns the comma-separated list in the environment variable
// key, without empty entries.
func envList(key string) []string {
	var out []string
	for v := range strings.SplitSeq(os.Getenv(key), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// endpointFlags are the flags of the MCP endpoint, shared by serve and
// stdio; 0 turns each off, as a person would expect of a timeout flag.
type endpointFlags struct {
	readyTimeout, maxTotalTimeout time.Duration
	mcpMode                       string
}

func (ef *endpointFlags) register(f *pflag.FlagSet) {
	f.DurationVar(&ef.readyTimeout, "ready-timeout", gateway.DefaultReadyTimeout,
		"how long a list (or a call of a tool not listed yet) waits for servers still making their first attempt, from their start; 0: answer at once")
	f.DurationVar(&ef.maxTotalTimeout, "max-total-timeout", gateway.DefaultMaxTotalTimeout,
		"cap on one tool call through MCP, progress or not, for servers without max_total_timeout_ms; 0: no cap")
	f.StringVar(&ef.mcpMode, "mcp-mode", sb.ModeCatalog,
		`how the aggregated endpoint shows the tools: "catalog" lists them all; "search" lists search_tools and call_tool, which find and call them`)
}

// options returns the gateway options the flags ask for.
func (ef *endpointFlags) options() (gateway.Options, error) {
	switch {
	case ef.readyTimeout < 0:
		return gateway.Options{}, fmt.Errorf("--ready-timeout %s: must not be negative", ef.readyTimeout)
	case ef.maxTotalTimeout < 0 || ef.maxTotalTimeout > sb.MaxInvokeTimeout:
		return gateway.Options{}, fmt.Errorf("--max-total-timeout %s: must be between 0 (no cap) and %s", ef.maxTotalTimeout, sb.MaxInvokeTimeout)
	case ef.mcpMode != sb.ModeCatalog && ef.mcpMode != sb.ModeSearch:
		return gateway.Options{}, fmt.Errorf("--mcp-mode %q: must be %q or %q", ef.mcpMode, sb.ModeCatalog, sb.ModeSearch)
	}
	o := gateway.Options{ReadyTimeout: ef.readyTimeout, MaxTotalTimeout: ef.maxTotalTimeout, MCPMode: ef.mcpMode}
	// The gateway's zero value is its default; "off" is negative.
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = -1
	}
	if o.MaxTotalTimeout == 0 {
		o.MaxTotalTimeout = -1
	}
	return o, nil
}

// sessionFlags bound the MCP sessions of serve (stdio has one client); 0
// turns a cap off.
type sessionFlags struct {
	max, perAddress, perPrincipal int
	timeout                       time.Duration
}

func (sf *sessionFlags) register(f *pflag.FlagSet) {
	f.IntVar(&sf.max, "max-mcp-sessions", gateway.DefaultMaxSessions,
		"cap on live MCP sessions (Streamable HTTP); a new one over it gets HTTP 503; 0: no cap")
	f.IntVar(&sf.perAddress, "max-mcp-sessions-per-address", gateway.DefaultMaxSessionsPerAddress,
		"cap on the live MCP sessions one credential holds from one client IP (IPv6: its /64; behind a reverse proxy, the proxy's); a new one over it gets HTTP 429; 0: no cap")
	f.IntVar(&sf.perPrincipal, "max-mcp-sessions-per-principal", gateway.DefaultMaxSessionsPerPrincipal,
		"cap on the live MCP sessions of one credential from every address; a new one over it gets HTTP 429; 0: no cap")
	f.DurationVar(&sf.timeout, "mcp-session-timeout", gateway.DefaultSessionTimeout,
		"how long an MCP session may go without a request before it is closed")
}

// apply sets the gateway options the flags ask for.
func (sf *sessionFlags) apply(o *gateway.Options) error {
	switch {
	case sf.max < 0:
		return fmt.Errorf("--max-mcp-sessions %d: must not be negative", sf.max)
	case sf.perAddress < 0:
		return fmt.Errorf("--max-mcp-sessions-per-address %d: must not be negative", sf.perAddress)
	case sf.perPrincipal < 0:
		return fmt.Errorf("--max-mcp-sessions-per-principal %d: must not be negative", sf.perPrincipal)
	case sf.timeout <= 0:
		return fmt.Errorf("--mcp-session-timeout %s: must be positive", sf.timeout)
	}
	// The gateway's zero value is its default; "no cap" is negative.
	off := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	o.MaxSessions, o.MaxSessionsPerAddress, o.MaxSessionsPerPrincipal = off(sf.max), off(sf.perAddress), off(sf.perPrincipal)
	o.SessionTimeout = sf.timeout
	return nil
}

func newLogger(cmd *cobra.Command, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: l})), nil
}
