package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file keeps the session's resource subscriptions. A subscription
// belongs to the server's session, and a reconnect makes a new one that
// knows of none: the session remembers what its callers subscribed to and
// subscribes again on every new link, before it reports connected.

// Subscribe subscribes to updates of the resource at uri, on this link and
// on every link after it, until as many Unsubscribe calls as Subscribe calls
// for uri. Updates arrive through Options.OnNotification. Only the first
// subscription to a uri is sent to the server.
func (s *Session) Subscribe(ctx context.Context, uri string) error {
	s.mu.Lock()
	s.subs[uri]++
	first := s.subs[uri] == 1
	s.mu.Unlock()
	if !first {
		return nil
	}
	cs, err := s.Client(ctx)
	if err == nil {
		err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	}
	if err != nil {
		s.forget(uri)
	}
	return err
}

// Unsubscribe ends one Subscribe to uri; the last one is sent to the server.
func (s *Session) Unsubscribe(ctx context.Context, uri string) error {
	if !s.forget(uri) {
		return nil
	}
	cs, err := s.Client(ctx)
	if err != nil {
		return err
	}
	return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
}

// forget drops one subscription to uri and reports whether it was the last.
func (s *Session) forget(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.subs[uri]
	switch {
	case !ok:
		return false
	case n <= 1:
		delete(s.subs, uri)
		return true
	}
	s.subs[uri] = n - 1
	return false
}

// resubscribe subscribes a new link to every resource the session's callers
// are subscribed to. A server that refuses one is logged, not dropped: the
// link serves everything else.
func (s *Session) resubscribe(ctx context.Context, l *link) {
	s.mu.Lock()
	uris := make([]string, 0, len(s.subs))
	for uri := range s.subs {
		uris = append(uris, uri)
	}
	s.mu.Unlock()
	for _, uri := range uris {
		rctx, cancel := context.WithTimeout(ctx, s.opts.ProbeTimeout)
		err := l.cs.Subscribe(rctx, &mcp.SubscribeParams{URI: uri})
		cancel()
		if err != nil {
			s.log.Warn("subscribing again after a reconnect failed", "uri", uri, "error", s.redact.String(err.Error()))
		}
	}
}
