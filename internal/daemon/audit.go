package daemon

import (
	"context"
	"log/slog"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/registry"
)

// AuditConfig is the audit log of serve and stdio (the --audit flags).
type AuditConfig struct {
	Off       bool // --audit=false: nothing is recorded
	Retention audit.Retention
}

// startAudit starts the audit log of st, unless c is off or st keeps
// none: nil then, which records nothing. stop writes what is queued and
// ends its writer; call it before st closes.
func startAudit(c AuditConfig, st sb.Store, reg *registry.Registry, log *slog.Logger) (l *audit.Log, stop func()) {
	as, ok := st.(sb.AuditStore)
	if c.Off || !ok {
		return nil, func() {}
	}
	l = audit.New(audit.Options{Store: as, KeepsArguments: reg.KeepsArguments, Retention: c.Retention, Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx)
	}()
	return l, func() { cancel(); <-done }
}
