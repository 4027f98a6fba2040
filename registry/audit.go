package registry

import sb "github.com/switchboard-mcp/switchboard"

// KeepsArguments returns a copy of the config of the server name if it
// keeps its calls' arguments in the audit log ("audit": {"arguments":
// true}), for masking them of its secrets; nil for any other server,
// which costs a lookup and no copy (package audit asks on every call).
func (r *Registry) KeepsArguments(name string) *sb.ServerConfig {
	e, err := r.get(name)
	if err != nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if a := e.stored.Config.Audit; a == nil || !a.Arguments {
		return nil
	}
	return e.stored.Config.Clone()
}
