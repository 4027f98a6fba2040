package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/toolsearch"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// mirror is one MCP server that shows upstream servers' tools, prompts and
// resources: the aggregate (every server, names prefixed), one server
// (names unchanged), or a toolset (what it selects, names prefixed unless
// it renames them; toolset.go).
type mirror struct {
	g      *Gateway
	server *mcp.Server
	info   []byte // the server's mcp.Implementation, encoded (relay_stateless.go)
	only   string // the one server of a per-server mirror; "" for the aggregate
	set    string // the toolset of a toolset mirror; "" otherwise
	// version is the toolset's version the mirror shows (toolset.go).
	version int64
	// send is the server's sending handler below the list_changed hold;
	// heldReqs are the notifications the hold kept back, by method and
	// session, and told the sessions told of each list since it last
	// changed, by method; both guarded by g.hold.mu (listhold.go).
	send     mcp.MethodHandler
	heldReqs map[string]map[*mcp.ServerSession]mcp.Request
	told     map[string]map[weak.Pointer[mcp.ServerSession]]bool
	// search is set in search mode: the go-sdk's server lists
	// search_tools and call_tool, not the tools (search.go).
	search bool
	// index holds the tools the mirror shows, for search_tools (in
	// search mode) and Gateway.Search (the aggregate's, made on its first
	// search); nil otherwise.
	index *toolsearch.Index

	mu      sync.Mutex
	shown   map[string]*exposure // by upstream server
	tools   map[string]origin    // exposed tool name -> origin
	prompts map[string]origin    // exposed prompt name -> origin
	uris    map[string]string    // resource URI or URI template -> server
	hidden  map[string]bool      // server + "\x00" + URI already warned of as hidden
	// warnings says, by server, what of it this mirror does not show and
	// why, as of its last sync (Gateway.Warnings).
	warnings map[string][]string

	// hints are the cache hints of the lists the mirror serves, as of its
	// last sync (cachehints.go); read without m.mu, which the go-sdk's
	// server must not wait for.
	hints atomic.Pointer[upstream.ListHints]
}

// origin is what an exposed name stands for.
type origin struct{ server, name string }

// exposure is what one upstream server currently shows in a mirror, by
// exposed name (or URI), with the upstream objects they were made from, so
// that only what changed is replaced.
type exposure struct {
	tools     map[string]*mcp.Tool
	prompts   map[string]*mcp.Prompt
	resources map[string]*mcp.Resource
	templates map[string]*mcp.ResourceTemplate
	hints     upstream.ListHints // the server's lists' cache hints
}

func (g *Gateway) newMirror(only string) *mirror {
	return g.newMirrorOf(only, "")
}

// newMirrorOf returns a per-server mirror (only), a toolset's (set), or the
// aggregate (neither).
func (g *Gateway) newMirrorOf(only, set string) *mirror {
	m := &mirror{g: g, only: only, set: set, shown: make(map[string]*exposure),
		tools: make(map[string]origin), prompts: make(map[string]origin), uris: make(map[string]string)}
	name := "switchboard"
	switch {
	case only != "":
		name = "switchboard/" + only
	case set != "":
		name = "switchboard/toolsets/" + set
	}
	impl := &mcp.Implementation{Name: name, Version: g.opts.Version}
	m.info, _ = json.Marshal(impl)
	m.server = mcp.NewServer(impl, &mcp.ServerOptions{
		// Advertise everything from the start: a client that connects
		// before the upstream servers do must still learn, through
		// list_changed, of what they bring.
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler:  m.complete,
		SubscribeHandler:   m.subscribe,
		UnsubscribeHandler: m.unsubscribe,
		SetCacheable:       m.setCacheable,
	})
	m.server.AddReceivingMiddleware(m.traceRequests, m.auditRequests, g.clients.countSession, m.awaitReady, m.discover)
	m.server.AddSendingMiddleware(m.holdListChanged)
	return m
}

// exposedName is the name a tool or prompt of server gets in this mirror.
func (m *mirror) exposedName(kind sb.Kind, server, name string) string {
	if m.only != "" {
		return name
	}
	if sel, ok := m.selector(kind, server, name); ok && sel.As != "" {
		return sel.As
	}
	return aggregateName(server, name)
}

// sync brings what this mirror shows of server in step with the server's
// session: everything it offers while connected, nothing otherwise.
func (m *mirror) sync(server string) {
	if m.only != "" && server != m.only {
		return
	}
	var tools []*mcp.Tool
	var resources []*mcp.Resource
	var templates []*mcp.ResourceTemplate
	var prompts []*mcp.Prompt
	var hints upstream.ListHints
	if s, ok := m.g.src.Session(server); ok && s != nil && s.Status() == sb.StatusConnected {
		tools, resources, templates, prompts = s.Catalog()
		hints = s.CacheHints()
	}
	if m.set != "" {
		tools, resources, templates, prompts = m.selected(server, tools, resources, templates, prompts)
	}

	defer m.g.batch()()
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.shown[server]
	if old == nil {
		old = &exposure{}
	}
	next := &exposure{
		resources: make(map[string]*mcp.Resource),
		templates: make(map[string]*mcp.ResourceTemplate),
		hints:     hints,
	}

	removeTool, addTool := func(name string) { m.server.RemoveTools(name) }, func(name string, t *mcp.Tool) error { return m.addTool(name, server, t) }
	if m.search {
		// The catalog is searched, not listed (search.go).
		removeTool, addTool = func(string) {}, func(string, *mcp.Tool) error { return nil }
	}
	var changed []string // the lists the go-sdk's server shows differently now
	var toolsChanged, promptsChanged bool
	next.tools, toolsChanged = syncNamed(m, sb.KindTool, server, tools, old.tools, m.tools,
		func(t *mcp.Tool) string { return t.Name }, removeTool, addTool)
	if toolsChanged && !m.search {
		changed = append(changed, toolListChanged)
	}
	m.reindex(server, old.tools, next.tools)
	next.prompts, promptsChanged = syncNamed(m, sb.KindPrompt, server, prompts, old.prompts, m.prompts,
		func(p *mcp.Prompt) string { return p.Name },
		func(name string) { m.server.RemovePrompts(name) },
		func(name string, p *mcp.Prompt) error {
			m.addPrompt(name, server, p)
			return nil
		})
	if promptsChanged {
		changed = append(changed, promptListChanged)
	}

	// Resources and templates keep their URIs; the first server to show a
	// URI keeps it (servers are visited in name order by the resync).
	var warnings []string
	for _, r := range resources {
		if owner, ok := m.uris[r.URI]; ok && owner != server {
			m.warnHidden(server, owner, r.URI)
			warnings = append(warnings, fmt.Sprintf("resource %s is not shown on /mcp: server %q shows the same URI", r.URI, owner))
			continue
		}
		// A listed resource is read before any template: one that fits
		// another server's template would take that server's read of it.
		if owner, theirs, ok := m.overlapping(server, r.URI); ok {
			m.warnOverlap(server, owner, r.URI, theirs)
			warnings = append(warnings, fmt.Sprintf("resource %s is not shown on /mcp: it fits %s of server %q, which would lose its read to it",
				r.URI, theirs, owner))
			continue
		}
		m.uris[r.URI] = server
		next.resources[r.URI] = r
	}
	// A template that overlaps another server's (some URI fits both) is not
	// shown either: the go-sdk routes a read to the first template that
	// fits, in sorted order, so a server whose template sorts first
	// (file:///repo/s{+x}) would take the reads meant for another's
	// (file:///repo/{+path}).
	for _, t := range templates {
		if owner, ok := m.uris[t.URITemplate]; ok && owner != server {
			m.warnHidden(server, owner, t.URITemplate)
			warnings = append(warnings, fmt.Sprintf("resource template %s is not shown on /mcp: server %q shows the same template", t.URITemplate, owner))
			continue
		}
		if owner, theirs, ok := m.overlapping(server, t.URITemplate); ok || m.fitsResourceOf(server, t.URITemplate, &owner, &theirs) {
			m.warnOverlap(server, owner, t.URITemplate, theirs)
			warnings = append(warnings, fmt.Sprintf("resource template %s is not shown on /mcp: it overlaps %s of server %q, which could lose its reads to it",
				t.URITemplate, theirs, owner))
			continue
		}
		m.uris[t.URITemplate] = server
		next.templates[t.URITemplate] = t
	}
	var goneR, goneT []string
	for uri := range old.resources {
		if _, ok := next.resources[uri]; !ok {
			goneR = append(goneR, uri)
			delete(m.uris, uri)
		}
	}
	for uri := range old.templates {
		if _, ok := next.templates[uri]; !ok {
			goneT = append(goneT, uri)
			delete(m.uris, uri)
		}
	}
	resourcesChanged := len(goneR) > 0 || len(goneT) > 0
	if len(goneR) > 0 {
		m.server.RemoveResources(goneR...)
	}
	if len(goneT) > 0 {
		m.server.RemoveResourceTemplates(goneT...)
	}
	for uri, r := range next.resources {
		if old.resources[uri] != r {
			m.server.AddResource(r, m.readResource(server))
			resourcesChanged = true
		}
	}
	for uri, t := range next.templates {
		if old.templates[uri] != t {
			m.server.AddResourceTemplate(t, m.readResource(server))
			resourcesChanged = true
		}
	}
	if resourcesChanged {
		changed = append(changed, resourceListChanged)
	}
	m.changed(changed...)
	m.shown[server] = next
	m.hints.Store(m.listHints())
	if m.warnings == nil {
		m.warnings = make(map[string][]string)
	}
	if len(warnings) > 0 {
		m.warnings[server] = warnings
	} else {
		delete(m.warnings, server)
	}
}

// syncNamed shows server's named items (tools or prompts) in the mirror:
// it claims an exposed name for each, removes the ones that are gone, and
// (re)adds the ones that are new or changed, so that an unchanged list
// causes no list_changed notification. It returns what is now shown, by
// exposed name, and whether it removed or added any. m.mu is held.
func syncNamed[T comparable](m *mirror, kind sb.Kind, server string, items []T, old map[string]T, names map[string]origin,
	nameOf func(T) string, remove func(exposed string), add func(exposed string, item T) error) (next map[string]T, changed bool) {
	next = make(map[string]T, len(items))
	for _, it := range items {
		name := nameOf(it)
		next[m.claim(names, origin{server, name}, m.exposedName(kind, server, name))] = it
	}
	for name := range old {
		if _, ok := next[name]; !ok {
			remove(name)
			delete(names, name)
			changed = true
		}
	}
	for name, it := range next {
		if old[name] == it {
			continue
		}
		changed = true
		if err := add(name, it); err != nil {
			m.g.log.Warn("cannot mirror", "server", server, "name", nameOf(it), "error", err)
			delete(next, name)
			delete(names, name)
		}
	}
	return next, changed
}

// claim returns the name under which o is shown, taking want unless
// another origin holds it; then a numbered variant, so that a collision is
// resolved and never fatal.
func (m *mirror) claim(names map[string]origin, o origin, want string) string {
	name := want
	for i := 2; ; i++ {
		if held, ok := names[name]; !ok || held == o {
			names[name] = o
			return name
		}
		suffix := fmt.Sprintf("_%d", i)
		name = want[:min(len(want), maxNameLen-len(suffix))] + suffix
	}
}

// addTool mirrors one tool. The go-sdk panics on an input schema that is
// not an object; an upstream's bad schema must cost that tool, not the
// gateway.
func (m *mirror) addTool(name, server string, t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	cp := *t
	cp.Name = name
	if cp.InputSchema == nil {
		cp.InputSchema = map[string]any{"type": "object"}
	}
	if sel, ok := m.selector(sb.KindTool, server, t.Name); ok {
		override(&cp, sel)
	}
	m.server.AddTool(&cp, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !m.allows(sb.KindTool, server, t.Name) {
			return nil, unknownTool(req.Params.Name)
		}
		return m.g.call(m.audited(ctx), m.server, req, server, t.Name)
	})
	return nil
}

// addPrompt mirrors one prompt.
func (m *mirror) addPrompt(name, server string, p *mcp.Prompt) {
	cp := *p
	cp.Name = name
	if sel, ok := m.selector(sb.KindPrompt, server, p.Name); ok && sel.Description != "" {
		cp.Description = sel.Description
	}
	m.server.AddPrompt(&cp, m.getPrompt(server, p.Name))
}

// warnHidden says, once per server and URI, that a resource (or template)
// of server is not shown because owner shows the same URI: clients could
// not tell whose it is. m.mu is held.
func (m *mirror) warnHidden(server, owner, uri string) {
	key := server + "\x00" + uri
	if m.hidden[key] {
		return
	}
	if m.hidden == nil {
		m.hidden = make(map[string]bool)
	}
	m.hidden[key] = true
	m.g.log.Warn("two servers show one resource URI; only the first is served under it",
		"uri", uri, "shown_for", owner, "hidden_for", server)
}

// overlapping finds a template of another server than server, shown in
// this mirror, that some URI fitting tmpl would fit too: the first by
// server name, then by template. It reads the shown URIs, not every
// server's lists, so that a sync costs one pass over them however many
// servers there are (the 2,000 servers of a benchmark synced in 21 s with
// a sort of every server per template). m.mu is held.
func (m *mirror) overlapping(server, tmpl string) (owner, theirs string, ok bool) {
	for uri, other := range m.uris {
		if other == server || m.shown[other] == nil || m.shown[other].templates[uri] == nil || !templatesOverlap(tmpl, uri) {
			continue
		}
		if !ok || other < owner || other == owner && uri < theirs {
			owner, theirs, ok = other, uri, true
		}
	}
	return owner, theirs, ok
}

// fitsResourceOf reports whether a resource that another server than
// server shows in this mirror fits tmpl, setting owner and uri to the
// first by server name, then by URI. m.mu is held.
func (m *mirror) fitsResourceOf(server, tmpl string, owner, uri *string) bool {
	found := false
	for u, other := range m.uris {
		if other == server || m.shown[other] == nil || m.shown[other].resources[u] == nil || !templateMatches(tmpl, u) {
			continue
		}
		if !found || other < *owner || other == *owner && u < *uri {
			*owner, *uri, found = other, u, true
		}
	}
	return found
}

// warnOverlap says, once per server and template, that a template of
// server is not shown because it overlaps owner's. m.mu is held.
func (m *mirror) warnOverlap(server, owner, tmpl, theirs string) {
	key := server + "\x00" + tmpl
	if m.hidden[key] {
		return
	}
	if m.hidden == nil {
		m.hidden = make(map[string]bool)
	}
	m.hidden[key] = true
	m.g.log.Warn("a resource template overlaps another server's; it is not shown, so that no server takes another's reads",
		"template", tmpl, "hidden_for", server, "overlaps", theirs, "shown_for", owner)
}

// Warnings says what of server the aggregate /mcp does not show, and why
// (a resource URI or template another server holds), for the server's
// view. It is safe for concurrent use.
func (g *Gateway) Warnings(server string) []string {
	m := g.agg
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.warnings[server])
}

// dropGone removes what servers that no longer exist showed.
func (m *mirror) dropGone(names []string) {
	defer m.g.batch()()
	m.mu.Lock()
	var gone []string
	for server := range m.shown {
		if !slices.Contains(names, server) {
			gone = append(gone, server)
		}
	}
	m.mu.Unlock()
	for _, server := range gone {
		m.sync(server)
		m.mu.Lock()
		delete(m.shown, server)
		m.mu.Unlock()
	}
}

// owns reports whether this mirror shows uri as server's.
func (m *mirror) owns(server, uri string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.uris[uri] == server
}

// serverOf finds the server that shows a resource URI. A URI that is not
// listed but fits a template is routed to the template's server; in a
// per-server mirror everything goes to its server.
func (m *mirror) serverOf(uri string) (string, bool) {
	if m.only != "" {
		return m.only, true
	}
	return m.shows(uri)
}

// shows finds the server that lists uri, or the one whose template fits
// it best: the longest literal text before the first expression, then the
// fewest expressions (templates of two servers never overlap, but one
// server's may).
func (m *mirror) shows(uri string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.uris[uri]; ok {
		return s, true
	}
	best, bestPrefix, bestVars := "", -1, 0
	for _, server := range slices.Sorted(maps.Keys(m.shown)) {
		for _, t := range m.shown[server].templates {
			if !templateMatches(t.URITemplate, uri) {
				continue
			}
			prefix, vars := len(literalPrefix(t.URITemplate)), strings.Count(t.URITemplate, "{")
			if prefix > bestPrefix || prefix == bestPrefix && vars < bestVars {
				best, bestPrefix, bestVars = server, prefix, vars
			}
		}
	}
	return best, bestPrefix >= 0
}

// templateMatches is a cheap check that uri fits an RFC 6570 template: the
// literal text before the first expression must prefix it, and the text
// after the last must end it.
func templateMatches(tmpl, uri string) bool {
	prefix, suffix := literalPrefix(tmpl), literalSuffix(tmpl)
	if prefix == tmpl {
		return tmpl == uri
	}
	return len(uri) >= len(prefix)+len(suffix) && strings.HasPrefix(uri, prefix) && strings.HasSuffix(uri, suffix)
}

// templatesOverlap reports whether some URI may fit both templates: unless
// their literal beginnings or ends differ (one is no prefix, or suffix, of
// the other), an expression may stand for what the other spells out.
func templatesOverlap(a, b string) bool {
	pa, pb := literalPrefix(a), literalPrefix(b)
	sa, sb := literalSuffix(a), literalSuffix(b)
	if pa == a || pb == b { // a URI, not a template
		return templateMatches(a, b) || templateMatches(b, a)
	}
	return (strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)) && (strings.HasSuffix(sa, sb) || strings.HasSuffix(sb, sa))
}

// literalPrefix is tmpl up to its first expression; all of it if it has
// none.
func literalPrefix(tmpl string) string {
	if i := strings.IndexByte(tmpl, '{'); i >= 0 {
		return tmpl[:i]
	}
	return tmpl
}

// literalSuffix is tmpl after its last expression; "" if it has none.
func literalSuffix(tmpl string) string {
	if i := strings.LastIndexByte(tmpl, '}'); i >= 0 && strings.IndexByte(tmpl, '{') >= 0 {
		return tmpl[i+1:]
	}
	return ""
}

// client returns the live session of server for a request on its behalf,
// bounded by the server's call timeout.
func (m *mirror) client(ctx context.Context, server string) (*mcp.ClientSession, context.Context, context.CancelFunc, error) {
	s, ok := m.g.src.Session(server)
	if !ok || s == nil {
		return nil, nil, nil, fmt.Errorf("server %q is not available", server)
	}
	ctx, cancel := context.WithTimeout(ctx, s.Config().CallTimeout())
	cs, err := s.Client(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return cs, ctx, cancel, nil
}

func (m *mirror) readResource(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (res *mcp.ReadResourceResult, err error) {
		if !m.allows(sb.KindResource, server, req.Params.URI) {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		ctx, span, meta := upstreamSpan(ctx, "resources/read", server, req.Params.URI, req.Params.Meta)
		if span.IsRecording() {
			defer func() { endSpan(span, requestOutcome(res, err), err) }()
		}
		done := m.g.opts.Audit.Begin(m.auditedBy(ctx, req.Extra), sb.AuditResource, server, req.Params.URI, nil)
		p := *req.Params
		p.Meta = meta
		res, err = m.readFrom(ctx, server, &p, req.ProtocolVersion() >= "2026-07-28", req.Session)
		done(res, err)
		return res, err
	}
}

func (m *mirror) getPrompt(server, name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (res *mcp.GetPromptResult, err error) {
		if !m.allows(sb.KindPrompt, server, name) {
			return nil, fmt.Errorf("unknown prompt %q", req.Params.Name)
		}
		ctx, span, meta := upstreamSpan(ctx, "prompts/get", server, name, req.Params.Meta)
		if span.IsRecording() {
			defer func() { endSpan(span, requestOutcome(res, err), err) }()
		}
		p := *req.Params
		p.Name, p.Meta = name, meta
		done := m.g.opts.Audit.Begin(m.auditedBy(ctx, req.Extra), sb.AuditPrompt, server, name, promptArgs(p.Arguments))
		res, err = m.getFrom(ctx, server, &p, req.ProtocolVersion() >= "2026-07-28", req.Session)
		done(res, err)
		return res, err
	}
}

func (m *mirror) complete(ctx context.Context, req *mcp.CompleteRequest) (res *mcp.CompleteResult, err error) {
	p := *req.Params
	if p.Ref == nil {
		return nil, fmt.Errorf("completion request without a ref")
	}
	ref := *p.Ref
	var server string
	switch ref.Type {
	case "ref/prompt":
		m.mu.Lock()
		o, ok := m.prompts[ref.Name]
		m.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("unknown prompt %q", ref.Name)
		}
		server, ref.Name = o.server, o.name
		if !m.allows(sb.KindPrompt, server, o.name) {
			return nil, fmt.Errorf("unknown prompt %q", req.Params.Ref.Name)
		}
	case "ref/resource":
		s, ok := m.serverOf(ref.URI)
		if !ok || !m.allows(sb.KindResource, s, ref.URI) {
			return nil, fmt.Errorf("unknown resource %q", ref.URI)
		}
		server = s
	default:
		return nil, fmt.Errorf("unknown completion ref type %q", ref.Type)
	}
	p.Ref = &ref
	target := ref.Name
	if ref.Type == "ref/resource" {
		target = ref.URI
	}
	ctx, span, meta := upstreamSpan(ctx, "completion/complete", server, target, p.Meta)
	if span.IsRecording() {
		defer func() { endSpan(span, requestOutcome(res, err), err) }()
	}
	cs, ctx, cancel, err := m.client(ctx, server)
	if err != nil {
		return nil, err
	}
	defer cancel()
	p.Meta = upstreamMeta(cs, meta)
	return cs.Complete(ctx, &p)
}

// subscribe and unsubscribe go through the upstream session, which counts
// them (many clients may subscribe to one resource) and subscribes again
// after every reconnect.
func (m *mirror) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	s, err := m.sessionOf(req.Params.URI)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.Config().CallTimeout())
	defer cancel()
	return s.Subscribe(ctx, req.Params.URI)
}

func (m *mirror) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	s, err := m.sessionOf(req.Params.URI)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.Config().CallTimeout())
	defer cancel()
	return s.Unsubscribe(ctx, req.Params.URI)
}

// sessionOf returns the session of the server that serves the resource.
func (m *mirror) sessionOf(uri string) (*upstream.Session, error) {
	server, ok := m.serverOf(uri)
	if !ok || !m.allows(sb.KindResource, server, uri) {
		return nil, fmt.Errorf("unknown resource %q", uri)
	}
	s, ok := m.g.src.Session(server)
	if !ok || s == nil {
		return nil, fmt.Errorf("server %q is not available", server)
	}
	return s, nil
}
