// Package metrics exposes Switchboard's Prometheus metrics: the state of
// every server (read from the registry at scrape time), the latency,
// outcome, timeouts and concurrency of tool calls (recorded by wrapping the
// executor's plugins), and the downstream MCP sessions (read from the
// gateway at scrape time). It knows its sources by the small interfaces
// Source, Sessions and Connections, not by their packages. Labels carry
// server names only, never config values.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Source lists the servers' views; the registry implements it.
type Source interface {
	List() []sb.ServerView
}

// Sessions reports the downstream MCP sessions; *gateway.Gateway
// implements it.
type Sessions interface {
	SessionStats() sb.SessionStats
}

// The limits that refuse new sessions, as the label limit names them: the
// names a refused session's JSON-RPC error gives them (data.limit,
// limitGlobal and the others).
const (
	limitGlobal       = "global"
	limitPerAddress   = "per_address"
	limitPerPrincipal = "per_principal"
)

// ConnStats describes the connections of serve's HTTP listener.
type ConnStats struct {
	// Open is how many are open.
	Open int
	// MaxPerAddress caps those of one peer address; 0 for none.
	MaxPerAddress int
	// RefusedPerAddress counts the connections closed at once since the
	// start, over MaxPerAddress.
	RefusedPerAddress uint64
	// IdleTimeout closes a connection that waits this long for its next
	// request; 0 for none.
	IdleTimeout time.Duration
}

// Connections reports the connections of a listener; httpapi.Listener
// implements it.
type Connections interface {
	ConnStats() ConnStats
}

// Metrics holds Switchboard's collectors on a registry of its own.
type Metrics struct {
	reg      *prometheus.Registry
	latency  *prometheus.HistogramVec
	calls    *prometheus.CounterVec
	timeouts *prometheus.CounterVec
	inflight *prometheus.GaugeVec
	byToken  *prometheus.CounterVec // tokens.go
}

// New returns the metrics for the servers of src.
func New(src Source) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_call_duration_seconds",
			Help:    "Duration of tool calls, by server and outcome.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"server", "outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_calls_total",
			Help: "Tool calls, by server and outcome (ok, or the failure's code: tool_error, timeout, cancelled, unavailable, connection_lost, invalid_arguments, unknown_tool, ...).",
		}, []string{"server", "outcome"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_call_timeouts_total",
			Help: "Tool calls ended by a timeout, by server and the limit that fired (request or total).",
		}, []string{"server", "limit"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchboard_calls_in_flight",
			Help: "Tool calls in flight, by server.",
		}, []string{"server"}),
	}
	m.byToken = newTokenCalls()
	m.reg.MustRegister(m.latency, m.calls, m.timeouts, m.inflight, m.byToken, &serverCollector{src: src},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ReportSessions adds the metrics of the downstream MCP sessions of s,
// read at scrape time. Call it at most once.
func (m *Metrics) ReportSessions(s Sessions) {
	m.reg.MustRegister(&sessionCollector{src: s})
}

// ReportConnections adds the metrics of the listener connections of c,
// read at scrape time. Call it at most once.
func (m *Metrics) ReportConnections(c Connections) {
	m.reg.MustRegister(&connCollector{src: c})
}

// connCollector reports the listener's connections at scrape time.
type connCollector struct{ src Connections }

var (
	connsDesc = prometheus.NewDesc("switchboard_http_connections",
		"Open connections of the HTTP listener.", nil, nil)
	connLimitDesc = prometheus.NewDesc("switchboard_http_connections_limit",
		"Cap on open connections of the HTTP listener, by limit (per_address); absent if there is none.", []string{"limit"}, nil)
	connsRefusedDesc = prometheus.NewDesc("switchboard_http_connections_refused_total",
		"Connections closed as soon as accepted, by the limit that refused them (per_address).", []string{"limit"}, nil)
	connIdleDesc = prometheus.NewDesc("switchboard_http_idle_timeout_seconds",
		"How long a connection may wait for its next request before it is closed; absent if never.", nil, nil)
)

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- connsDesc
	ch <- connLimitDesc
	ch <- connsRefusedDesc
	ch <- connIdleDesc
}

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.ConnStats()
	ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(st.Open))
	if st.MaxPerAddress > 0 {
		ch <- prometheus.MustNewConstMetric(connLimitDesc, prometheus.GaugeValue, float64(st.MaxPerAddress), "per_address")
	}
	ch <- prometheus.MustNewConstMetric(connsRefusedDesc, prometheus.CounterValue, float64(st.RefusedPerAddress), "per_address")
	if st.IdleTimeout > 0 {
		ch <- prometheus.MustNewConstMetric(connIdleDesc, prometheus.GaugeValue, st.IdleTimeout.Seconds())
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Instrument wraps a plugin so that its calls are measured.
func (m *Metrics) Instrument(p executor.Plugin) executor.Plugin {
	return &instrumented{Plugin: p, m: m}
}

// instrumented is a measured plugin: Serves and Servers are the wrapped
// plugin's.
type instrumented struct {
	executor.Plugin
	m *Metrics
}

func (i *instrumented) Invoke(ctx context.Context, server, tool string, args any, opts sb.InvokeOptions) (*upstream.Result, error) {
	g := i.m.inflight.WithLabelValues(server)
	g.Inc()
	start := time.Now()
	res, err := i.Plugin.Invoke(ctx, server, tool, args, opts)
	g.Dec()
	outcome := Outcome(err)
	i.m.latency.WithLabelValues(server, outcome).Observe(time.Since(start).Seconds())
	i.m.calls.WithLabelValues(server, outcome).Inc()
	i.m.countByToken(ctx, outcome)
	var te *upstream.TimeoutError
	if errors.As(err, &te) {
		i.m.timeouts.WithLabelValues(server, te.Limit).Inc()
	}
	return res, err
}

// Outcome names the result of a call for metrics and logs: "ok", or the
// failure's code (sb.CodeOf), the same code the API and /mcp report.
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return string(sb.CodeOf(err))
}

// serverCollector reports every server's state at scrape time.
type serverCollector struct{ src Source }

var (
	statusDesc = prometheus.NewDesc("switchboard_server_status",
		"1 for the server's current status, 0 for the others.", []string{"server", "status"}, nil)
	reconnectsDesc = prometheus.NewDesc("switchboard_server_reconnects",
		"Transparent reconnects since the server's session started.", []string{"server"}, nil)
	attemptDesc = prometheus.NewDesc("switchboard_server_failed_attempts",
		"Failed connection attempts in the server's current retry cycle.", []string{"server"}, nil)
	toolsDesc = prometheus.NewDesc("switchboard_server_tools",
		"Tools the server lists.", []string{"server"}, nil)
)

var statuses = []sb.Status{sb.StatusConnecting, sb.StatusConnected, sb.StatusError, sb.StatusDisabled}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- statusDesc
	ch <- reconnectsDesc
	ch <- attemptDesc
	ch <- toolsDesc
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.src.List() {
		for _, st := range statuses {
			val := 0.0
			if v.Runtime.Status == st {
				val = 1
			}
			ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, val, v.Name, string(st))
		}
		ch <- prometheus.MustNewConstMetric(reconnectsDesc, prometheus.CounterValue, float64(v.Runtime.Reconnects), v.Name)
		ch <- prometheus.MustNewConstMetric(attemptDesc, prometheus.GaugeValue, float64(v.Runtime.Attempt), v.Name)
		ch <- prometheus.MustNewConstMetric(toolsDesc, prometheus.GaugeValue, float64(v.Runtime.ToolCount), v.Name)
	}
}

// sessionCollector reports the downstream MCP sessions at scrape time.
type sessionCollector struct{ src Sessions }

var (
	sessionsDesc = prometheus.NewDesc("switchboard_mcp_sessions",
		"Live downstream MCP sessions (Streamable HTTP, from their initialize until they end).", nil, nil)
	sessionLimitDesc = prometheus.NewDesc("switchboard_mcp_sessions_limit",
		"Cap on live downstream MCP sessions, by limit (global, per_address, per_principal); absent if there is none.", []string{"limit"}, nil)
	sessionsRefusedDesc = prometheus.NewDesc("switchboard_mcp_sessions_refused_total",
		"New downstream MCP sessions refused, by the limit that refused them (global: HTTP 503, per_address and per_principal: HTTP 429).", []string{"limit"}, nil)
	sessionsExpiredDesc = prometheus.NewDesc("switchboard_mcp_sessions_expired_total",
		"Downstream MCP sessions closed by the idle timeout (the others end with a DELETE).", nil, nil)
)

func (c *sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- sessionLimitDesc
	ch <- sessionsRefusedDesc
	ch <- sessionsExpiredDesc
}

func (c *sessionCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.SessionStats()
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(st.Live))
	for limit, max := range map[string]int{limitGlobal: st.MaxSessions, limitPerAddress: st.MaxSessionsPerAddress,
		limitPerPrincipal: st.MaxSessionsPerPrincipal} {
		if max > 0 {
			ch <- prometheus.MustNewConstMetric(sessionLimitDesc, prometheus.GaugeValue, float64(max), limit)
		}
	}
	ch <- prometheus.MustNewConstMetric(sessionsRefusedDesc, prometheus.CounterValue, float64(st.RefusedGlobal), limitGlobal)
	ch <- prometheus.MustNewConstMetric(sessionsRefusedDesc, prometheus.CounterValue, float64(st.RefusedPerAddress), limitPerAddress)
	ch <- prometheus.MustNewConstMetric(sessionsRefusedDesc, prometheus.CounterValue, float64(st.RefusedPerPrincipal), limitPerPrincipal)
	ch <- prometheus.MustNewConstMetric(sessionsExpiredDesc, prometheus.CounterValue, float64(st.Expired))
}

// ReportReplica adds the metrics of the replica id (one of the serve
// processes sharing a store): switchboard_replica_info{id} and
// switchboard_replica_last_sync_timestamp_seconds, read from lastSync at
// scrape time (zero before the first sync). Call it at most once.
func (m *Metrics) ReportReplica(id string, lastSync func() time.Time) {
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "switchboard_replica_info",
		Help:        "Always 1; its label names this replica among the serve processes sharing the database (--replica-id, or random at start).",
		ConstLabels: prometheus.Labels{"id": id},
	})
	info.Set(1)
	last := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchboard_replica_last_sync_timestamp_seconds",
		Help: "When this replica's servers were last known to match the database (a full resync, or a change applied from its notifications), in Unix seconds.",
	}, func() float64 {
		t := lastSync()
		if t.IsZero() {
			return 0
		}
		return float64(t.UnixNano()) / 1e9
	})
	m.reg.MustRegister(info, last)
}
