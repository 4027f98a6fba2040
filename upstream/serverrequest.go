package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/wire"
)

// This file answers the requests a server sends in the middle of a tool
// call: elicitation (a question for a person), sampling (a completion
// from a model) and roots/list (the caller's roots). Each goes to the call
// it belongs to, through that call's InvokeOptions, with the call's
// request timer paused while it is answered. Switchboard has no roots of
// its own: a roots/list that no call can take is refused, never answered
// with an empty list the client did not give.

// only returns the one call in flight that accepts a server request
// (elicitation or sampling), as told by accepts. The protocol does not say
// which request a server request belongs to (over stdio it cannot), so with
// several candidates none is chosen: answering one caller's question with
// another caller's person, or model, would be worse than refusing.
func (cs *calls) only(accepts func(*call) bool) (*call, int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var found *call
	n := 0
	for _, c := range cs.m {
		if accepts(c) {
			found = c
			n++
		}
	}
	if n != 1 {
		return nil, n
	}
	return found, 1
}

// serverRequestCall finds the call a server request belongs to: the one
// whose own stream carried it (Streamable HTTP: the wire marks it with the
// call's token, wire.Request.Tag), else the one call that accepts such
// requests and is not parked.
func (s *Session) serverRequestCall(kind string, meta mcp.Meta, accepts func(*call) bool) (*call, error) {
	if tok, ok := wire.TagOf(meta); ok {
		if c := s.calls.byToken(tok); c != nil && accepts(c) {
			return c, nil
		}
		return nil, fmt.Errorf("the call to %s that this %s request belongs to has ended", s.cfg.Name, kind)
	}
	c, n := s.calls.only(func(c *call) bool {
		// A call parked for its client's retry sends nothing more until
		// then (sb.InvokeOptions.Parked).
		return accepts(c) && (c.opts.Parked == nil || !c.opts.Parked())
	})
	switch {
	case c != nil:
		return c, nil
	case n == 0:
		return nil, fmt.Errorf("no caller of %s is able to answer %s requests", s.cfg.Name, kind)
	}
	return nil, fmt.Errorf("%d calls to %s accept %s at once; cannot tell which one this request belongs to", n, s.cfg.Name, kind)
}

// during runs fn on behalf of call c: c's request timer is paused (a
// person or a model is thinking), and fn's context ends with the call.
func (c *call) during(ctx context.Context, fn func(ctx context.Context) error) error {
	c.timer.pause()
	defer c.timer.resume()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	return fn(ctx)
}

// onSample is the go-sdk's sampling handler for every link of the session.
func (s *Session) onSample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c, err := s.serverRequestCall("sampling", req.Params.Meta, func(c *call) bool { return c.opts.OnSampling != nil })
	if err != nil {
		return nil, err
	}
	return c.sample(ctx, req.Params)
}

// sample asks c's caller for the sampling p asks.
func (c *call) sample(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var res mcp.CreateMessageResult
	err = c.during(ctx, func(ctx context.Context) error {
		out, err := c.opts.OnSampling(ctx, params)
		if err != nil {
			return err
		}
		return json.Unmarshal(out, &res)
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// onElicit is the go-sdk's elicitation handler for every link of the session.
func (s *Session) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if invoked, ok := ctx.Value(elicitInvokedKey{}).(*bool); ok {
		*invoked = true
	}
	c, err := s.serverRequestCall("elicitation", req.Params.Meta, func(c *call) bool { return c.opts.OnElicitation != nil })
	if err != nil {
		return nil, err
	}
	return c.elicit(ctx, req.Params)
}

// elicit asks c's caller what p asks.
func (c *call) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	er := sb.ElicitationRequest{Message: p.Message, Mode: p.Mode, URL: p.URL}
	if p.RequestedSchema != nil {
		er.RequestedSchema, _ = json.Marshal(p.RequestedSchema)
	}
	var resp sb.ElicitationResponse
	err := c.during(ctx, func(ctx context.Context) (err error) {
		resp, err = c.opts.OnElicitation(ctx, er)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &mcp.ElicitResult{Action: resp.Action, Content: resp.Content}, nil
}

// onListRoots is the answer to a server's roots/list for every link of the
// session (sharedClient's receiving middleware: the go-sdk's client would
// answer it with its own roots, which are none).
func (s *Session) onListRoots(ctx context.Context, req *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var meta mcp.Meta
	if req.Params != nil {
		meta = req.Params.Meta
	}
	c, err := s.serverRequestCall("roots", meta, func(c *call) bool { return c.opts.OnRoots != nil })
	if err != nil {
		return nil, err
	}
	return c.listRoots(ctx)
}

// listRoots asks c's caller for its roots.
func (c *call) listRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	var res mcp.ListRootsResult
	err := c.during(ctx, func(ctx context.Context) error {
		out, err := c.opts.OnRoots(ctx)
		if err != nil {
			return err
		}
		return json.Unmarshal(out, &res)
	})
	if err != nil {
		return nil, err
	}
	if res.Roots == nil {
		res.Roots = []*mcp.Root{} // the spec's result has the member: never null
	}
	return &res, nil
}

type elicitInvokedKey struct{}

// relayUnvalidatedElicitation lets an elicitation through that the go-sdk
// would refuse before any handler saw it. The go-sdk checks form schemas
// against its own reading of the spec (it rejects, for instance, untitled
// enums written with anyOf, which the conformance suite sends); Switchboard
// relays elicitations to a client that does its own checking, and a relay
// must not be stricter than the two ends. Schemas the go-sdk accepts still
// go through it, so that it applies their defaults to the answer.
func (s *Session) relayUnvalidatedElicitation(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "elicitation/create" || s.caps&capElicit == 0 {
			// A session that declared no elicitation (capset.go) has
			// the go-sdk refuse it, as a client without the capability.
			return next(ctx, method, req)
		}
		invoked := new(bool)
		res, err := next(context.WithValue(ctx, elicitInvokedKey{}, invoked), method, req)
		if err == nil || *invoked {
			return res, err
		}
		er, ok := req.(*mcp.ElicitRequest)
		if !ok || (er.Params.Mode != "" && er.Params.Mode != "form") {
			return res, err
		}
		s.log.Debug("relaying an elicitation whose schema the go-sdk refused", "error", err)
		return s.onElicit(ctx, er)
	}
}
