package audit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// Instrument wraps a plugin so that each of its calls is recorded: every
// tools/call of every surface runs through the executor, so one wrapper
// sees them all (as metrics.Instrument measures them). The surface and
// principal come from the call's context (WithSurface, sb.WithPrincipal).
// A nil *Log returns p as it is.
func (l *Log) Instrument(p executor.Plugin) executor.Plugin {
	if l == nil {
		return p
	}
	return &instrumented{Plugin: p, l: l}
}

// instrumented is a recorded plugin: Serves and Servers are the wrapped
// plugin's.
type instrumented struct {
	executor.Plugin
	l *Log
}

func (i *instrumented) Invoke(ctx context.Context, server, tool string, args any, opts sb.InvokeOptions) (*upstream.Result, error) {
	start := i.l.now()
	res, err := i.Plugin.Invoke(ctx, server, tool, args, opts)
	e := sb.AuditEntry{Time: start, Kind: sb.AuditTool, Server: server, Name: tool, Outcome: Outcome(err),
		Duration: i.l.now().Sub(start)}
	if res == nil {
		var te *upstream.ToolError
		if errors.As(err, &te) {
			res = te.Result
		}
	}
	if res != nil {
		e.ResultBytes = int64(len(res.Raw))
	}
	i.l.Record(ctx, e, argBytes(args))
	return res, err
}

// Refused records a call the executor refused before any plugin (a bad
// address, an unknown server): every call attempt leaves an entry, with
// its failure's code. Its server and tool are the address's, as given.
func (i *instrumented) Refused(ctx context.Context, addr string, args any, err error) {
	server, tool, ok := strings.Cut(addr, "/")
	if !ok {
		server, tool = "", addr
	}
	i.l.Record(ctx, sb.AuditEntry{Time: i.l.now(), Kind: sb.AuditTool, Server: server, Name: tool, Outcome: Outcome(err)}, argBytes(args))
}

// argBytes is the arguments of a call as sent: the surfaces pass them
// as the bytes they read (json.RawMessage); anything else is encoded.
func argBytes(args any) []byte {
	switch a := args.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return a
	case []byte:
		return a
	}
	b, _ := json.Marshal(args)
	return b
}

// Outcome names the result of a call: "ok", or the failure's code
// (sb.CodeOf), as the metrics and the API name it.
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return string(sb.CodeOf(err))
}

// noop is what Begin returns when there is no log.
func noop(any, error) {}

// Begin starts the record of a call that does not run through the
// executor (resources/read, prompts/get): call the function it returns
// with the call's result and error when the call ends. args are the
// call's arguments, if any. A nil *Log returns a function that does
// nothing.
func (l *Log) Begin(ctx context.Context, kind sb.AuditKind, server, name string, args []byte) func(result any, err error) {
	if l == nil {
		return noop
	}
	start := l.now()
	return func(result any, err error) {
		e := sb.AuditEntry{Time: start, Kind: kind, Server: server, Name: name, Outcome: Outcome(err), Duration: l.now().Sub(start)}
		if err == nil && result != nil {
			if b, merr := json.Marshal(result); merr == nil {
				e.ResultBytes = int64(len(b))
			}
		}
		l.Record(ctx, e, args)
	}
}
