package switchboard

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
)

// AuditConfig is a server's opt-in to more of the audit log. Its zero
// value keeps a call's size and the SHA-256 of its arguments, never the
// arguments themselves.
type AuditConfig struct {
	// Arguments keeps each call's arguments (tools/call arguments,
	// prompts/get arguments) in the audit log, with credential-like
	// values masked as views mask them (MaskArguments).
	Arguments bool `json:"arguments,omitempty"`
}

// AuditKind is what an [AuditEntry] records.
type AuditKind string

const (
	AuditTool     AuditKind = "tool"     // a tools/call; Name is the tool
	AuditResource AuditKind = "resource" // a resources/read; Name is the URI
	AuditPrompt   AuditKind = "prompt"   // a prompts/get; Name is the prompt
	// AuditTask is a tasks/update or tasks/cancel of the Tasks extension;
	// Name is the method and the server's task id, "tasks/cancel t-1".
	AuditTask AuditKind = "task"
	// AuditAPI is an API request that changes something (any method but
	// GET and HEAD); Name is its method and path, "PUT /api/v1/servers/x".
	AuditAPI AuditKind = "api"
)

// The surfaces a call arrives on, as AuditEntry.Surface names them.
const (
	SurfaceMCP       = "mcp"        // /mcp, every server's tools
	SurfaceMCPServer = "mcp_server" // /mcp/{name}, one server's
	SurfaceToolset   = "toolset"    // /toolsets/{name}/mcp (AuditEntry.Toolset names it)
	SurfaceAPI       = "api"        // the HTTP API, the web page's calls included
	SurfaceStdio     = "stdio"      // switchboard stdio
)

// AuditEntry is one line of the audit log: who did what, where, with what
// outcome. It holds no secret: Principal is a token's name, Arguments is
// kept only for a server that opted in (AuditConfig) and is masked.
type AuditEntry struct {
	// ID orders the entries of one database; set by the store.
	ID        int64
	Time      time.Time // when the call began
	Principal string    // the token's name, or PrincipalAdmin, PrincipalLocal, PrincipalAnonymous
	Surface   string    // SurfaceMCP, ...
	Toolset   string    // the toolset of SurfaceToolset; "" otherwise
	Kind      AuditKind
	Server    string // the upstream server; for AuditAPI, the {name} of a servers route, else ""
	Name      string // the tool, resource URI, prompt, or "METHOD /path"
	// Outcome is "ok" or the failure's code (CodeOf), as the metrics
	// name it.
	Outcome      string
	Duration     time.Duration
	RequestBytes int64 // the arguments' (or the API request body's) length
	ResultBytes  int64 // the result's (or the API answer's) length
	// ArgsSHA256 is the hex SHA-256 of the arguments as sent (the API
	// request body, for AuditAPI); "" if there were none.
	ArgsSHA256 string
	// Arguments, masked; nil unless the server opted in.
	Arguments json.RawMessage
}

// AuditQuery selects audit entries. Empty fields select everything.
type AuditQuery struct {
	Server, Name, Principal, Outcome string
	Since, Until                     time.Time // Since <= Time < Until
	// After, if not zero, selects the entries whose ID is above it, the
	// oldest first (following the log); else the newest are selected.
	After int64
	// Limit caps the entries; if zero or negative, DefaultAuditLimit.
	Limit int
}

// DefaultAuditLimit and MaxAuditLimit bound AuditQuery.Limit.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 10_000
)

// AuditStore keeps the audit log. The sqlite and postgres stores implement
// it; replicas sharing a database share one log.
type AuditStore interface {
	// AppendAudit stores entries in one write, each given the next ID.
	AppendAudit(ctx context.Context, entries []AuditEntry) error
	// ListAudit returns the entries q selects, ordered by ID (oldest
	// first): the newest q.Limit, or with q.After the first q.Limit after
	// it.
	ListAudit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	// TrimAudit deletes at most max entries, the oldest first, of those
	// older than before (if not zero) or beyond the newest keep (if keep
	// is above zero), and returns how many it deleted.
	TrimAudit(ctx context.Context, before time.Time, keep int64, max int) (int64, error)
}

// MaskArguments returns the JSON value args with what a view would hide
// replaced by SecretMask: the string value of every member whose name is
// credential-like (token, key, secret, pass, auth, ...: the words MaskURL
// reads in a query), a string with a well-known credential prefix
// (sk-..., ghp_..., as MaskArgs hides them), the credentials of a URL
// (MaskURL), and, if r is not nil, its server's own secrets (Redactor). A
// value that is not JSON is replaced whole.
func MaskArguments(args json.RawMessage, r *Redactor) json.RawMessage {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber() // 2^53 and above stay as they were sent
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(`"` + SecretMask + `"`)
	}
	out, err := json.Marshal(maskValue(v, false, r))
	if err != nil {
		return json.RawMessage(`"` + SecretMask + `"`)
	}
	return out
}

// maskValue masks v; secret says its member's name is credential-like.
func maskValue(v any, secret bool, r *Redactor) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = maskValue(e, secret || credentialParam.MatchString(k), r)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = maskValue(e, secret, r)
		}
		return v
	case string:
		switch {
		case secret || secretValue(v):
			return SecretMask
		case r != nil:
			return r.String(v)
		default:
			return MaskURL(v)
		}
	}
	if secret && v != nil {
		return SecretMask // a number or a boolean under a secret's name
	}
	return v
}
