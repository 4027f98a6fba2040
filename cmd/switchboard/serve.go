package main

import (
	"os"
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
		sc             daemon.Config // the fields its flags set
		token          string
		tokenFile      string
		insecureNoAuth bool
		allowedHosts   []string
		upstreamNets   []string
		logLevel       string
		cpuProfile     string
		memProfile     string
		sandboxUser    string
		endpoint       daemon.Endpoint
		sessions       daemon.Sessions
		auditOpts      auditFlags
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
			log, err := daemon.NewLogger(cmd.ErrOrStderr(), logLevel)
			if err != nil {
				return err
			}
			if cpuProfile != "" {
				stop, err := daemon.StartCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			ctx := cmd.Context()
			if memProfile != "" {
				ctx = daemon.HeapProfileAtStop(ctx, memProfile, log)
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
			if sc.Auth, err = daemon.AuthFrom(token, os.Getenv("SWITCHBOARD_TOKEN"), insecureNoAuth, client.CredentialPath); err != nil {
				return err
			}
			if sc.AllowedHosts, err = daemon.HostsAllowed(allowedHosts, sc.Listen); err != nil {
				return err
			}
			gwOpts, err := endpoint.Options()
			if err != nil {
				return err
			}
			if err := sessions.Apply(&gwOpts); err != nil {
				return err
			}
			if sc.AllowedNetworks, err = daemon.UpstreamNetworks(upstreamNets); err != nil {
				return err
			}
			if err := sc.Check(); err != nil {
				return err
			}
			if sc.Sandbox, err = daemon.SandboxRuntime(sandboxUser, log); err != nil {
				return err
			}
			if sc.Audit, err = auditOpts.config(); err != nil {
				return err
			}
			gwOpts.Logger, gwOpts.Version = log, buildinfo.Read(version).Version
			stopTraces, err := daemon.StartTraces(cmd.Context(), log, gwOpts.Version)
			if err != nil {
				return err
			}
			defer stopTraces()
			return daemon.Serve(ctx, log, sc, gwOpts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sc.Listen, "listen", envOr("SWITCHBOARD_LISTEN", defaultListen), "address to listen on (env SWITCHBOARD_LISTEN)")
	f.StringVar(&sc.DSN, "db", envOr("SWITCHBOARD_DB", defaultDB), "database: sqlite:PATH or postgres://... (env SWITCHBOARD_DB)")
	f.StringVar(&token, "token", "", "bearer token required on the API and /mcp; every local user can read a command line: prefer --token-file or SWITCHBOARD_TOKEN (default: the generated credential)")
	f.StringVar(&tokenFile, "token-file", "", "read the bearer token from this file, which must be this user's and of mode 0600 (or stricter); instead of --token")
	registerOAuthKeyFlag(f, &sc.OAuthKeyFile)
	f.BoolVar(&insecureNoAuth, daemon.InsecureNoAuthFlag, false, "require no credential at all: anyone who can reach the listener can run any command as this user")
	f.StringSliceVar(&allowedHosts, "allowed-host", envList("SWITCHBOARD_ALLOWED_HOSTS"),
		`a Host name requests may carry besides loopback names and the listening address; repeatable, "*" for any (env SWITCHBOARD_ALLOWED_HOSTS, comma-separated)`)
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile (go tool pprof) of the whole run to this file when serve exits; for benchmarks")
	f.StringVar(&memProfile, "mem-profile", "", "write a heap profile (go tool pprof) to this file on SIGTERM or SIGINT, before serve shuts down: what the running daemon keeps live; for benchmarks")
	registerUpstreamNetworks(f, &upstreamNets)
	registerSandboxUser(f, &sandboxUser)
	registerEndpoint(f, &endpoint)
	f.IntVar(&sessions.Max, "max-mcp-sessions", gateway.DefaultMaxSessions,
		"cap on live MCP sessions (Streamable HTTP); a new one over it gets HTTP 503; 0: no cap")
	f.IntVar(&sessions.PerAddress, "max-mcp-sessions-per-address", gateway.DefaultMaxSessionsPerAddress,
		"cap on the live MCP sessions one credential holds from one client IP (IPv6: its /64; behind a reverse proxy, the proxy's); a new one over it gets HTTP 429; 0: no cap")
	f.IntVar(&sessions.PerPrincipal, "max-mcp-sessions-per-principal", gateway.DefaultMaxSessionsPerPrincipal,
		"cap on the live MCP sessions of one credential from every address; a new one over it gets HTTP 429; 0: no cap")
	f.DurationVar(&sessions.Timeout, "mcp-session-timeout", gateway.DefaultSessionTimeout,
		"how long an MCP session may go without a request before it is closed")
	f.DurationVar(&sc.IdleTimeout, "idle-timeout", defaultIdleTimeout,
		"close a connection that waits this long for its next request (and one that takes this long, at most 10s, to send a request's headers); streams (events, MCP, SSE calls) are not cut")
	f.IntVar(&sc.MaxConnsPerAddress, "max-connections-per-address", httpapi.DefaultMaxConnsPerAddress,
		"cap on the open connections of one client IP (IPv6: its /64); one over it is closed at once; 0: no cap")
	auditOpts.register(f)
	f.StringVar(&sc.ReplicaID, "replica-id", os.Getenv("SWITCHBOARD_REPLICA_ID"),
		"this replica's name in the metrics and logs, among the serve processes sharing a database (env SWITCHBOARD_REPLICA_ID; default: random at start)")
	f.DurationVar(&sc.ResyncInterval, "resync-interval", registry.DefaultResyncInterval,
		"how often to compare every server with the database, in case a change notification from another replica was lost; 0: never")
	return cmd
}

// registerUpstreamNetworks adds --allow-upstream-network, shared by serve
// and stdio.
func registerUpstreamNetworks(f *pflag.FlagSet, nets *[]string) {
	f.StringSliceVar(nets, "allow-upstream-network", envList("SWITCHBOARD_ALLOW_UPSTREAM_NETWORKS"),
		"a CIDR (or address) remote servers may have although it is link-local, a cloud metadata address or unspecified; repeatable (env SWITCHBOARD_ALLOW_UPSTREAM_NETWORKS, comma-separated)")
}

// defaultIdleTimeout closes a keep-alive connection that has sent no
// request for this long: clients reconnect at once when they need to,
// and idle connections cannot pile up to the open-file limit.
const defaultIdleTimeout = 2 * time.Minute

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

// registerEndpoint adds the flags of the MCP endpoint, shared by serve
// and stdio.
func registerEndpoint(f *pflag.FlagSet, e *daemon.Endpoint) {
	f.DurationVar(&e.ReadyTimeout, "ready-timeout", gateway.DefaultReadyTimeout,
		"how long a list (or a call of a tool not listed yet) waits for servers still making their first attempt, from their start; 0: answer at once")
	f.DurationVar(&e.MaxTotalTimeout, "max-total-timeout", gateway.DefaultMaxTotalTimeout,
		"cap on one tool call through MCP, progress or not, for servers without max_total_timeout_ms; 0: no cap")
	f.StringVar(&e.Mode, "mcp-mode", sb.ModeCatalog,
		`how the aggregated endpoint shows the tools: "catalog" lists them all; "search" lists search_tools and call_tool, which find and call them`)
}
