package daemon

// This file checks what serve's and stdio's flags say and turns it into
// the gateway's options and the parts of a Config: cmd/switchboard binds
// the flags to these types, and the errors name the flags.

import (
	"fmt"
	"net/netip"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/gateway"
)

// Endpoint is the MCP endpoint of serve and stdio as their flags give it
// (--ready-timeout, --max-total-timeout, --mcp-mode): 0 turns a timeout
// off, as a person would expect of a timeout flag.
type Endpoint struct {
	ReadyTimeout, MaxTotalTimeout time.Duration
	Mode                          string
}

// Options returns the gateway options e asks for.
func (e *Endpoint) Options() (gateway.Options, error) {
	switch {
	case e.ReadyTimeout < 0:
		return gateway.Options{}, fmt.Errorf("--ready-timeout %s: must not be negative", e.ReadyTimeout)
	case e.MaxTotalTimeout < 0 || e.MaxTotalTimeout > sb.MaxInvokeTimeout:
		return gateway.Options{}, fmt.Errorf("--max-total-timeout %s: must be between 0 (no cap) and %s", e.MaxTotalTimeout, sb.MaxInvokeTimeout)
	case e.Mode != sb.ModeCatalog && e.Mode != sb.ModeSearch:
		return gateway.Options{}, fmt.Errorf("--mcp-mode %q: must be %q or %q", e.Mode, sb.ModeCatalog, sb.ModeSearch)
	}
	o := gateway.Options{ReadyTimeout: e.ReadyTimeout, MaxTotalTimeout: e.MaxTotalTimeout, MCPMode: e.Mode}
	// The gateway's zero value is its default; "off" is negative.
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = -1
	}
	if o.MaxTotalTimeout == 0 {
		o.MaxTotalTimeout = -1
	}
	return o, nil
}

// Sessions bound the MCP sessions of serve (stdio has one client) as the
// --max-mcp-sessions* and --mcp-session-timeout flags give them: 0 turns
// a cap off.
type Sessions struct {
	Max, PerAddress, PerPrincipal int
	Timeout                       time.Duration
}

// Apply sets the gateway options s asks for.
func (s *Sessions) Apply(o *gateway.Options) error {
	switch {
	case s.Max < 0:
		return fmt.Errorf("--max-mcp-sessions %d: must not be negative", s.Max)
	case s.PerAddress < 0:
		return fmt.Errorf("--max-mcp-sessions-per-address %d: must not be negative", s.PerAddress)
	case s.PerPrincipal < 0:
		return fmt.Errorf("--max-mcp-sessions-per-principal %d: must not be negative", s.PerPrincipal)
	case s.Timeout <= 0:
		return fmt.Errorf("--mcp-session-timeout %s: must be positive", s.Timeout)
	}
	// The gateway's zero value is its default; "no cap" is negative.
	off := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	o.MaxSessions, o.MaxSessionsPerAddress, o.MaxSessionsPerPrincipal = off(s.Max), off(s.PerAddress), off(s.PerPrincipal)
	o.SessionTimeout = s.Timeout
	return nil
}

// Check refuses the resync interval and connection bounds of c that
// Serve cannot keep, naming their flags.
func (c *Config) Check() error {
	switch {
	case c.ResyncInterval < 0:
		return fmt.Errorf("--resync-interval %s: must not be negative", c.ResyncInterval)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("--idle-timeout %s: must be positive", c.IdleTimeout)
	case c.MaxConnsPerAddress < 0:
		return fmt.Errorf("--max-connections-per-address %d: must not be negative", c.MaxConnsPerAddress)
	}
	return nil
}

// UpstreamNetworks parses --allow-upstream-network values: CIDRs, or
// single addresses.
func UpstreamNetworks(values []string) ([]netip.Prefix, error) {
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

// AuditFrom returns the audit log the --audit flags ask for: on, and
// entries kept for days and at most maxRows (0: no bound).
func AuditFrom(on bool, days int, maxRows int64) (AuditConfig, error) {
	switch {
	case days < 0:
		return AuditConfig{}, fmt.Errorf("--audit-retention-days %d: must not be negative", days)
	case maxRows < 0:
		return AuditConfig{}, fmt.Errorf("--audit-max-rows %d: must not be negative", maxRows)
	}
	return AuditConfig{Off: !on, Retention: audit.Retention{MaxAge: audit.Days(days), MaxRows: maxRows}}, nil
}
