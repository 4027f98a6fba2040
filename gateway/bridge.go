package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/rawjson"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// A 2026-07-28 client cannot be sent requests (SEP-2322): a server asks it
// for input by answering its call with a request for input, and the client
// calls again with the answers. An upstream of 2025-11-25 asks by sending
// elicitation/create, sampling/createMessage or roots/list during the
// call. The
// gateway bridges the two: such a client's call runs apart from its
// request (bridgedCall), and an upstream request of that call is held
// while the client is answered with a request for input naming it, whose
// requestState is a key of the gateway's table (held). The client's retry
// with that state finds the call, hands each answer to the upstream
// request it answers, and waits again for what comes next: the call's
// result, or another request for input.
//
// A state is opaque (random), bound to the principal and to the server
// and tool of the call, and taken once: each round has a state of its own.
// The table holds at most heldMax calls, each at most heldTTL; a call
// whose client never calls again is cancelled at expiry, and its upstream
// requests with it. A retry with a state the table does not hold (expired,
// taken, made up) is refused with -32602, as is one of another principal
// or call (which leaves the state to its owner).
//
// Each request the client is asked has an id of the gateway's, stable
// across rounds (a request not answered, or answered with another kind
// of result, is asked again under the same id): the upstream's method and
// the request's place in the call ("elicitation-1", "sampling-2",
// "roots-3"). A 2025-11-25 upstream's request carries no id of its own to
// name it by. An upstream that sends several requests at once (a go-sdk
// server fulfilling a request for input of its own) sends them one
// goroutine each: the gateway collects what comes within askSettle of
// the last one into one request for input, so that the client answers
// them in one round.

const (
	// heldTTL is how long a held call waits for its client's retry.
	heldTTL = 5 * time.Minute
	// heldMax bounds the calls held at once; past it, an upstream's request
	// is refused as for a client that cannot be asked.
	heldMax = 1024
	// heldStatePrefix starts the requestState of a held call, which tells
	// it from an upstream's own (a 2026-07-28 upstream's, passed through).
	heldStatePrefix = "sb1."
	// askSettle is how long a request for input waits, after an upstream
	// request, for another one sent with it; askSettleMax bounds the wait.
	askSettle    = 50 * time.Millisecond
	askSettleMax = 500 * time.Millisecond
)

// heldAsk is an upstream's request held for the client's answer.
type heldAsk struct {
	id     string
	req    mcp.InputRequest
	answer chan json.RawMessage // takes one answer
}

// answers reports whether r is a result of the kind a's request asks for:
// an elicitation's answer does not answer a sampling request, nor roots
// an elicitation.
func (a *heldAsk) answers(r mcp.InputResponse) bool {
	switch a.req.(type) {
	case *mcp.ElicitParams:
		_, ok := r.(*mcp.ElicitResult)
		return ok
	case *mcp.CreateMessageParams:
		switch r.(type) {
		case *mcp.CreateMessageResult, *mcp.CreateMessageWithToolsResult:
			return true
		}
	case *mcp.ListRootsParams:
		_, ok := r.(*mcp.ListRootsResult)
		return ok
	}
	return false
}

// bridgedCall is a 2026-07-28 client's call whose upstream may ask for
// input.
type bridgedCall struct {
	principal, server, tool string
	caps                    *mcp.ClientCapabilities // what the client declared
	roots                   bool                    // it declared roots (caps cannot tell)

	asks   chan *heldAsk
	done   chan struct{} // closed when the call has returned raw and err
	raw    *upstream.Result
	err    error
	cancel context.CancelFunc

	mu      sync.Mutex
	ids     int
	parked  bool               // held in the table, for the client's retry
	waiting []*heldAsk         // asked of the client, not answered yet
	fwd     *progressForwarder // the current request's, if it takes progress
}

// heldTable holds the bridged calls that wait for their clients' retries,
// by requestState.
type heldTable struct {
	mu sync.Mutex
	m  map[string]*heldEntry
}

type heldEntry struct {
	b     *bridgedCall
	timer *time.Timer
}

// put holds b under a new state, cancelling it after heldTTL unless it is
// taken before; false if the table is full.
func (t *heldTable) put(b *bridgedCall) (string, bool) {
	var key [16]byte
	_, _ = rand.Read(key[:]) // never fails (crypto/rand)
	state := heldStatePrefix + hex.EncodeToString(key[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= heldMax {
		return "", false
	}
	if t.m == nil {
		t.m = make(map[string]*heldEntry)
	}
	t.m[state] = &heldEntry{b: b, timer: time.AfterFunc(heldTTL, func() { t.expire(state) })}
	b.park(true)
	return state, true
}

// expire drops the call held under state, if it still is, and cancels it.
func (t *heldTable) expire(state string) {
	t.mu.Lock()
	e := t.m[state]
	delete(t.m, state)
	t.mu.Unlock()
	if e != nil {
		e.timer.Stop()
		e.b.cancel()
	}
}

// errStateUnknown and errStateNotYours refuse a retry's requestState.
var (
	errStateUnknown  = errors.New("requestState is unknown or has expired: call again without it")
	errStateNotYours = errors.New("requestState belongs to another call")
)

// take removes and returns the call held under state if principal made it
// to server's tool; another's is left where it is.
func (t *heldTable) take(state, principal, server, tool string) (*bridgedCall, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[state]
	switch {
	case e == nil:
		return nil, errStateUnknown
	case e.b.principal != principal || e.b.server != server || e.b.tool != tool:
		return nil, errStateNotYours
	}
	delete(t.m, state)
	e.timer.Stop()
	e.b.park(false)
	return e.b, nil
}

// closeAll cancels every held call and waits for them to return.
func (t *heldTable) closeAll() {
	t.mu.Lock()
	m := t.m
	t.m = nil
	t.mu.Unlock()
	for _, e := range m {
		e.timer.Stop()
		e.b.cancel()
	}
	for _, e := range m {
		<-e.b.done
	}
}

// len is how many calls are held.
func (t *heldTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// bridged reports whether the call of in (clientInput) is for the bridge:
// the client is of the 2026-07-28 protocol, and this is a first call or a
// retry with a state of the gateway's (an upstream's own goes to it).
func bridged(in *sb.InputRound) bool {
	return in != nil && (in.State == "" || strings.HasPrefix(in.State, heldStatePrefix))
}

// bridgeCall runs a 2026-07-28 client's tools/call of server's tool with
// opts, or resumes the held call its retry names (with the retry's
// responses), and returns what comes first: the call's result, or a
// request for input. notify, if set, sends the client the call's
// progress.
func (g *Gateway) bridgeCall(ctx context.Context, server, tool string, args any, opts sb.InvokeOptions, responses mcp.InputResponseMap, notify func(sb.Progress)) (*upstream.Result, error) {
	return g.bridge(ctx, server, tool, opts, responses, notify, func(ctx context.Context, opts sb.InvokeOptions) (*upstream.Result, error) {
		return g.ex.Execute(ctx, server+"/"+tool, args, opts)
	})
}

// bridge is bridgeCall for any request that run makes of server with the
// options it is given: what tells a held request from another is server
// and what (a tool's name, or the method and name of another request).
func (g *Gateway) bridge(ctx context.Context, server, tool string, opts sb.InvokeOptions, responses mcp.InputResponseMap, notify func(sb.Progress),
	run func(context.Context, sb.InvokeOptions) (*upstream.Result, error)) (*upstream.Result, error) {
	principal, _ := sb.PrincipalFrom(ctx)
	// The progress of this request goes to its client from the first
	// notification on: a new call's forwarder is in place before its
	// upstream call starts (set after, the upstream's first progress
	// could come first and be dropped: conformance's
	// tools-call-with-progress got 2 of 3 so at load).
	var fwd *progressForwarder
	if notify != nil {
		fwd = newProgressForwarder(notify)
		defer fwd.flush()
	}
	var b *bridgedCall
	if state := opts.Input.State; state != "" {
		var err error
		if b, err = g.held.take(state, principal.Name, server, tool); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		b.mu.Lock()
		b.fwd = fwd
		b.mu.Unlock()
		b.answer(responses)
	} else {
		b = &bridgedCall{principal: principal.Name, server: server, tool: tool, caps: declared(opts.Input.Capabilities),
			roots: declaresRoots(opts.Input.Capabilities), asks: make(chan *heldAsk), done: make(chan struct{}), fwd: fwd}
		// The upstream is called as for a client of its own generation: a
		// 2026-07-28 upstream still answers with its own requests for
		// input, which pass through.
		b.hook(&opts)
		var cctx context.Context
		cctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
		go func() {
			defer close(b.done)
			defer b.cancel()
			b.raw, b.err = run(cctx, opts)
		}()
	}
	if fwd != nil {
		// Runs before fwd.flush (deferred first): no progress is enqueued
		// on a forwarder that has flushed.
		defer func() {
			b.mu.Lock()
			b.fwd = nil
			b.mu.Unlock()
		}()
	}
	asks, err := b.next(ctx)
	if err != nil {
		return nil, err
	}
	if asks == nil {
		return b.raw, b.err
	}
	state, ok := g.held.put(b)
	if !ok {
		b.cancel()
		<-b.done
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many calls (%d) wait for their clients' input: call again later", heldMax)}
	}
	return inputRequired(asks, state)
}

// declared decodes the capabilities a 2026-07-28 client declared; none if
// it declared none (or nothing readable).
func declared(raw json.RawMessage) *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, caps)
	}
	return caps
}

// declaresRoots reports whether the capabilities raw name roots. The
// go-sdk's ClientCapabilities cannot tell: its Roots is a struct, there
// whether declared or not.
func declaresRoots(raw json.RawMessage) bool {
	_, ok := rawjson.Get(raw, "roots")
	return ok
}

// hook sets opts to send the upstream's requests of the call to b, and its
// progress to the client's current request.
func (b *bridgedCall) hook(opts *sb.InvokeOptions) {
	opts.OnElicitation = func(ctx context.Context, er sb.ElicitationRequest) (sb.ElicitationResponse, error) {
		p, err := elicitParamsFor(er, &mcp.InitializeParams{Capabilities: b.caps})
		if err != nil {
			return sb.ElicitationResponse{}, err
		}
		raw, err := b.ask(ctx, "elicitation", p)
		if err != nil {
			return sb.ElicitationResponse{}, err
		}
		return checkElicitation(er.RequestedSchema, raw)
	}
	opts.OnSampling = func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		if b.caps.Sampling == nil {
			return nil, errors.New("client does not support sampling")
		}
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		if p.Messages == nil {
			p.Messages = []*mcp.SamplingMessage{}
		}
		res, err := b.ask(ctx, "sampling", &p)
		if err != nil {
			return nil, err
		}
		return checkSampling(res)
	}
	opts.OnRoots = func(ctx context.Context) (json.RawMessage, error) {
		if !b.roots {
			return nil, errors.New("client does not support roots")
		}
		return b.ask(ctx, "roots", &mcp.ListRootsParams{})
	}
	opts.Parked = func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.parked
	}
	opts.OnProgress = func(p sb.Progress) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.fwd != nil {
			b.fwd.enqueue(p)
		}
	}
}

// ask holds the upstream's request r until the client answers it in a
// retry, and returns the answer; ctx is the upstream's (it ends with the
// call).
func (b *bridgedCall) ask(ctx context.Context, kind string, r mcp.InputRequest) (json.RawMessage, error) {
	b.mu.Lock()
	b.ids++
	a := &heldAsk{id: kind + "-" + strconv.Itoa(b.ids), req: r, answer: make(chan json.RawMessage, 1)}
	b.mu.Unlock()
	select {
	case b.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case raw := <-a.answer:
		return raw, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answer hands each request waiting for the client the answer of
// responses that names it, if it is of the kind asked; those not answered
// wait on, to be asked again.
func (b *bridgedCall) answer(responses mcp.InputResponseMap) {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := b.waiting[:0]
	for _, a := range b.waiting {
		r, ok := responses[a.id]
		if !ok || r == nil || !a.answers(r) {
			left = append(left, a)
			continue
		}
		raw, err := json.Marshal(r)
		if err != nil {
			left = append(left, a)
			continue
		}
		a.answer <- raw
	}
	b.waiting = left
}

// next waits for what comes of b: its outcome (nil asks), or the requests
// the client is to answer, which are then waiting. A request still
// unanswered is asked again. If ctx ends first, the call is cancelled.
func (b *bridgedCall) next(ctx context.Context) ([]*heldAsk, error) {
	b.mu.Lock()
	waiting := len(b.waiting) > 0
	b.mu.Unlock()
	if !waiting {
		select {
		case a := <-b.asks:
			b.hold(a)
		case <-b.done:
			return nil, nil
		case <-ctx.Done():
			b.cancel()
			<-b.done
			return nil, ctx.Err()
		}
	}
	// Requests the upstream sent together are asked together: those
	// that come within askSettle of the one before.
	settle := time.NewTimer(askSettle)
	defer settle.Stop()
	most := time.NewTimer(askSettleMax)
	defer most.Stop()
collect:
	for {
		select {
		case a := <-b.asks:
			b.hold(a)
			settle.Reset(askSettle)
		case <-settle.C:
			break collect
		case <-most.C:
			break collect
		case <-b.done:
			return nil, nil // the upstream gave up on its requests
		case <-ctx.Done():
			b.cancel()
			<-b.done
			return nil, ctx.Err()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*heldAsk(nil), b.waiting...), nil
}

// park marks b as held in the table, or taken from it.
func (b *bridgedCall) park(held bool) {
	b.mu.Lock()
	b.parked = held
	b.mu.Unlock()
}

// hold marks a as asked of the client.
func (b *bridgedCall) hold(a *heldAsk) {
	b.mu.Lock()
	b.waiting = append(b.waiting, a)
	b.mu.Unlock()
}

// inputRequired is the result that asks the client what asks ask, under
// state.
func inputRequired(asks []*heldAsk, state string) (*upstream.Result, error) {
	res := &mcp.CallToolResult{InputRequests: make(mcp.InputRequestMap, len(asks)), RequestState: state}
	for _, a := range asks {
		res.InputRequests[a.id] = a.req
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	// Marked as the go-sdk's server marks it for a client of 2026-07-28,
	// for the relay, which writes the bytes as they are.
	raw = append(raw[:len(raw)-1], `,"resultType":"input_required"}`...)
	return upstream.NewResult(raw)
}
