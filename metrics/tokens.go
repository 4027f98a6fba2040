package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	sb "github.com/switchboard-mcp/switchboard"
)

// newTokenCalls counts the calls of each principal: an API token by its
// name (never its secret), or admin, anonymous or local. Tokens are few
// (an operator creates each), so the label's cardinality stays small.
func newTokenCalls() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_token_calls_total",
		Help: "Tool calls by who made them (an API token's name, or admin, anonymous, local) and outcome (ok, or the failure's code).",
	}, []string{"token", "outcome"})
}

// countByToken counts one call of the principal in ctx (local if none: a
// call that came through no HTTP request).
func (m *Metrics) countByToken(ctx context.Context, outcome string) {
	name := sb.PrincipalLocal
	if p, ok := sb.PrincipalFrom(ctx); ok && p.Name != "" {
		name = p.Name
	}
	m.byToken.WithLabelValues(name, outcome).Inc()
}
