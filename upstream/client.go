package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every link connects through one go-sdk client per ClientInfo, shared by
// every session of the process, rather than a client of its own: a go-sdk
// Client copies the protocol's method table when it is made (about 4 KiB),
// and a daemon with thousands of idle sessions kept that many copies.
//
// The client's handlers and middleware are the same for every link; they
// find the link a message belongs to by its go-sdk session (linkOf). A link
// is registered by the first message it sends, which carries the link in
// its context (connect): every message a server sends comes after that,
// since the client speaks first. It is forgotten when the link is closed.

var (
	clientsMu sync.Mutex
	clients   = map[string]*mcp.Client{} // by ClientInfo, as JSON

	linksMu sync.Mutex
	links   = map[*mcp.ClientSession]*link{}
)

type linkKey struct{}

// errLinkGone answers a server request that arrives on a closed link.
var errLinkGone = errors.New("the session is closed")

// connect opens l's MCP session over t with the shared client.
func (s *Session) connect(ctx context.Context, l *link, t mcp.Transport) (*mcp.ClientSession, error) {
	l.session = s
	cs, err := sharedClient(&s.opts.ClientInfo, s.caps).Connect(context.WithValue(ctx, linkKey{}, l), t, s.sessionOptions())
	if err != nil {
		l.forget()
		return nil, err
	}
	l.version = cs.InitializeResult().ProtocolVersion
	if l.version >= protocol20260728 {
		l.newMeta = requestMeta(l.version, &s.opts.ClientInfo)
	}
	return cs, nil
}

// requestMeta returns the members of _meta that every request of the
// 2026-07-28 protocol carries, as the shared client's go-sdk session adds
// them to its own: the protocol version, the client's info and its
// capabilities (those its handlers give it: elicitation and sampling).
func requestMeta(version string, info *mcp.Implementation) []byte {
	caps := struct {
		Elicitation *mcp.ElicitationCapabilities `json:"elicitation"`
		Sampling    *mcp.SamplingCapabilities    `json:"sampling"`
	}{&mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}, &mcp.SamplingCapabilities{}}
	return requestMetaCaps(version, info, caps)
}

// requestMetaCaps is requestMeta with the capabilities caps (a JSON
// object, or a value json.Marshal makes one of): a 2026-07-28 client's own,
// on a call made for it (sb.InputRound).
func requestMetaCaps(version string, info *mcp.Implementation, caps any) []byte {
	b, _ := json.Marshal(map[string]any{ // plain data: never fails; keys sorted
		mcp.MetaKeyProtocolVersion:    version,
		mcp.MetaKeyClientInfo:         info,
		mcp.MetaKeyClientCapabilities: caps,
	})
	return b[1 : len(b)-1]
}

// sharedClient returns the client that introduces itself as info and
// declares caps (capset.go): the go-sdk declares elicitation and sampling
// in initialize when their handlers are set, so a set without one is a
// client without its handler, which refuses the server's request as a
// client without the capability does.
func sharedClient(info *mcp.Implementation, caps capSet) *mcp.Client {
	b, _ := json.Marshal(info) // plain data: never fails
	key := string(b) + "\x00" + caps.String()
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c := clients[key]; c != nil {
		return c
	}
	impl := *info
	opts := &mcp.ClientOptions{
		// No roots: Switchboard has no files to offer its upstreams.
		Capabilities:               &mcp.ClientCapabilities{},
		ToolListChangedHandler:     func(_ context.Context, r *mcp.ToolListChangedRequest) { onLink(r.Session, listTools) },
		ResourceListChangedHandler: func(_ context.Context, r *mcp.ResourceListChangedRequest) { onLink(r.Session, listResources) },
		PromptListChangedHandler:   func(_ context.Context, r *mcp.PromptListChangedRequest) { onLink(r.Session, listPrompts) },
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			if l := linkOf(r.Session); l != nil {
				l.session.log.Debug("upstream log message", "level", r.Params.Level, "logger", r.Params.Logger)
				l.session.notify(r.Params)
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if l := linkOf(r.Session); l != nil {
				l.session.notify(r.Params)
			}
		},
	}
	if caps&capElicit != 0 {
		opts.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			l := linkOf(r.Session)
			if l == nil {
				return nil, errLinkGone
			}
			return l.session.onElicit(ctx, r)
		}
	}
	if caps&capSample != 0 {
		opts.CreateMessageHandler = func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			l := linkOf(r.Session)
			if l == nil {
				return nil, errLinkGone
			}
			return l.session.onSample(ctx, r)
		}
	}
	c := mcp.NewClient(&impl, opts)
	c.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		bounded := boundDiscover(next)
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if l, ok := ctx.Value(linkKey{}).(*link); ok && l.session.autoProtocol() {
				return bounded(ctx, method, req)
			}
			return next(ctx, method, req)
		}
	})
	c.AddSendingMiddleware(registerLink) // outermost: the go-sdk wraps what was added before
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			cs, _ := req.GetSession().(*mcp.ClientSession)
			if l := linkOf(cs); l != nil {
				if r, ok := req.(*mcp.ListRootsRequest); ok && method == "roots/list" {
					return l.session.onListRoots(ctx, r)
				}
				return l.session.relayUnvalidatedElicitation(next)(ctx, method, req)
			}
			return next(ctx, method, req)
		}
	})
	clients[key] = c
	return c
}

// registerLink is a sending middleware that registers the link its
// context names (connect) under the go-sdk session sending.
func registerLink(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if l, ok := ctx.Value(linkKey{}).(*link); ok {
			if cs, ok := req.GetSession().(*mcp.ClientSession); ok {
				linksMu.Lock()
				if l.registered == nil {
					l.registered = cs
					links[cs] = l
				}
				linksMu.Unlock()
			}
		}
		return next(ctx, method, req)
	}
}

// linkOf returns the link of a go-sdk session, or nil once it is closed.
func linkOf(cs *mcp.ClientSession) *link {
	linksMu.Lock()
	defer linksMu.Unlock()
	return links[cs]
}

// onLink records a list_changed notification for the link of cs.
func onLink(cs *mcp.ClientSession, k listKind) {
	if l := linkOf(cs); l != nil {
		l.notify(k)
	}
}

// forget unregisters l: messages still arriving on its session are dropped.
func (l *link) forget() {
	linksMu.Lock()
	defer linksMu.Unlock()
	if l.registered != nil {
		delete(links, l.registered)
	}
}
