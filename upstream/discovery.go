package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
)

// catalog is what a server offers. It is replaced whole, never modified, so
// a snapshot handed out stays valid.
type catalog struct {
	tools     []*mcp.Tool
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
	hints     ListHints     // the lists' cache hints
	schemas   *schemaCache  // resolved input schemas of tools, filled on first use
	infos     []sb.ToolInfo // the tools as RuntimeInfo shows them, made once per listing

	// The descriptions and schemas each list shares with other sessions'
	// (intern.go); resources and templates are listed together.
	toolsShared, resourcesShared, promptsShared interned
}

// relayLogLevel is the level of log messages asked of every server.
const relayLogLevel = "info"

// protocol20260728 is the first protocol version without sessions, ping
// or logging/setLevel.
const protocol20260728 = "2026-07-28"

// maxListItems bounds one list (every page of it): a server that pages
// forever must not exhaust memory or hold up the connection.
const maxListItems = 10000

// discover lists everything a freshly connected server advertises. Failing
// to list tools fails the attempt (phase discover); resources and prompts
// are extras, and a server that advertises but cannot list them still
// serves its tools.
func (s *Session) discover(ctx context.Context, l *link) *failure {
	c, err := l.list(ctx, listAll, catalog{})
	if err != nil {
		if ctx.Err() != nil {
			return fail(sb.PhaseDiscover, sb.CodeTimeout, retryFast, err,
				"listing tools did not complete within the %s startup timeout", s.cfg.StartupTimeout())
		}
		return fail(sb.PhaseDiscover, sb.CodeListFailed, retryFast, err, "listing tools failed: %s", describe(err))
	}
	if c.err != nil {
		s.log.Warn("listing resources or prompts failed; serving tools only", "error", s.redact.String(c.err.Error()))
	}
	s.warnTruncated(c)
	l.catalog = c.catalog
	// Servers send log messages only once a level is set. "info" lets
	// Switchboard log them and relay them to its own clients (who filter
	// further by the level they set) without debug chatter.
	// Bounded like a probe: a server that never answers it would
	// otherwise hold the connection for the whole startup timeout (120 s
	// for stdio), and the calls waiting for it past their own timeout.
	if r := l.cs.InitializeResult(); r.Capabilities != nil && r.Capabilities.Logging != nil && r.ProtocolVersion < protocol20260728 {
		lctx, cancel := context.WithTimeout(ctx, s.opts.ProbeTimeout)
		err := l.setLogLevel(lctx, relayLogLevel)
		unanswered := lctx.Err() != nil && ctx.Err() == nil
		cancel()
		switch {
		case err != nil && unanswered:
			s.log.Warn("the server did not answer logging/setLevel; connecting without", "timeout", s.opts.ProbeTimeout)
		case err != nil:
			s.log.Debug("server refused logging/setLevel", "error", s.redact.String(err.Error()))
		}
	}
	return nil
}

type listResult struct {
	catalog
	err       error    // a non-fatal failure listing resources or prompts
	truncated []string // the lists cut at maxListItems
}

// warnTruncated says which lists were cut: the rest of them is not served.
func (s *Session) warnTruncated(r listResult) {
	if len(r.truncated) > 0 {
		s.log.Warn("the server lists more items than Switchboard keeps; the rest are not served",
			"lists", r.truncated, "kept", maxListItems)
	}
}

// list re-lists the kinds named, keeping the others from prev. Only the
// capabilities the server advertised are listed.
func (l *link) list(ctx context.Context, kinds listKind, prev catalog) (listResult, error) {
	r := listResult{catalog: prev}
	caps := l.cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	if kinds&listTools != 0 && caps.Tools != nil {
		var hint mcp.Cacheable
		tools, cut, err := collect(l.toolPages(ctx, &hint))
		if err != nil {
			return r, err
		}
		if cut {
			r.truncated = append(r.truncated, "tools/list")
		}
		r.tools, r.hints.Tools = tools, hint
		r.schemas = &schemaCache{}
		r.toolsShared = nil
		r.infos = toolInfos(tools, &r.toolsShared)
	}
	if kinds&listResources != 0 && caps.Resources != nil {
		relist(ctx, &r, "resources/list", &r.resources, &r.hints.Resources, l.resourcePages)
		relist(ctx, &r, "resources/templates/list", &r.templates, &r.hints.Templates, l.templatePages)
		r.resourcesShared = nil
		for _, res := range r.resources {
			res.Description = r.resourcesShared.string(res.Description)
		}
		for _, t := range r.templates {
			t.Description = r.resourcesShared.string(t.Description)
		}
	}
	if kinds&listPrompts != 0 && caps.Prompts != nil {
		relist(ctx, &r, "prompts/list", &r.prompts, &r.hints.Prompts, l.promptPages)
		r.promptsShared = nil
		for _, p := range r.prompts {
			p.Description = r.promptsShared.string(p.Description)
		}
	}
	return r, nil
}

// collect gathers every page of a list, up to maxListItems; cut reports
// that there was more.
func collect[T any](seq iter.Seq2[T, error]) (out []T, cut bool, err error) {
	for v, err := range seq {
		if err != nil {
			return nil, false, err
		}
		if len(out) == maxListItems {
			return out, true, nil
		}
		out = append(out, v)
	}
	return out, false, nil
}

// relist replaces *dst with every page of the list pages makes, and *hint
// with its cache hints. On failure the previous list stays, so a transient
// error while refreshing does not make everything disappear; the error is
// recorded in r.
func relist[T any](ctx context.Context, r *listResult, name string, dst *[]T, hint *mcp.Cacheable,
	pages func(context.Context, *mcp.Cacheable) iter.Seq2[T, error]) {
	var h mcp.Cacheable
	v, cut, err := collect(pages(ctx, &h))
	if err != nil {
		r.err = fmt.Errorf("%s: %w", name, err)
		return
	}
	if cut {
		r.truncated = append(r.truncated, name)
	}
	*dst, *hint = v, h
}

// toolInfos renders tools for RuntimeInfo. It runs once per listing, not
// on every Info call (views and metrics scrapes call Info often).
//
// It also keeps each tool's schemas as the JSON they are
// (json.RawMessage) rather than as the go-sdk decoded them (maps of
// interfaces, several times the size): an idle session holds its tools
// for its whole life, and everything that reads a schema marshals it
// first. The view shares the input schema's bytes. Descriptions and
// schemas are interned in shared.
func toolInfos(tools []*mcp.Tool, shared *interned) []sb.ToolInfo {
	infos := make([]sb.ToolInfo, len(tools))
	for i, t := range tools {
		t.Description = shared.string(t.Description)
		// validTools (rawlist.go) left the schema marshalled already.
		schema, ok := t.InputSchema.(json.RawMessage)
		var err error
		if !ok {
			schema, err = json.Marshal(t.InputSchema)
		}
		if err == nil && t.InputSchema != nil {
			schema = shared.json(schema)
			t.InputSchema = json.RawMessage(schema)
		}
		if t.OutputSchema != nil {
			if b, err := json.Marshal(t.OutputSchema); err == nil {
				t.OutputSchema = shared.json(b)
			}
		}
		infos[i] = sb.ToolInfo{Name: t.Name, Description: t.Description, InputSchema: schema}
	}
	return infos
}
