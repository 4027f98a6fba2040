package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
)

// A relayed call of a client that declared elicitation or sampling carries
// the upstream's requests to that client (elicitation/create,
// sampling/createMessage) on the call's own event stream, as the go-sdk
// does for Gateway.call, and takes the client's answer from the POST that
// carries it (serveRelay: the id is one the relay issued, pending on that
// session).
//
// The relay does not repeat the go-sdk's checks of these requests and their
// answers (capabilities and mode, the protocol version, the answer decoded
// and, on accept, validated against the requested schema with its defaults
// applied): each request is made by the go-sdk's own ServerSession.Elicit or
// CreateMessage, on a session of a server of the relay's own that is
// connected in memory and carries the client's initialize parameters. The
// request that session writes is sent to the client with a relay-issued id;
// the client's response goes back to it with the session's id, and the
// go-sdk's verdict is what the upstream gets, as on the go-sdk path.
//
// When the upstream gives up on its request (it cancelled it, or its call
// ended), the client is told with notifications/cancelled on the stream, as
// the go-sdk tells it.

// serverRequestPrefixes start the ids of the requests the relay sends to
// clients: a namespace the go-sdk, which numbers its requests, never uses.
var serverRequestPrefixes = map[string]string{
	"elicitation/create":     "sb-elicit-",
	"sampling/createMessage": "sb-sample-",
}

// elicitParams is the go-sdk's form of an upstream's elicitation request.
func elicitParams(er sb.ElicitationRequest) (*mcp.ElicitParams, error) {
	p := &mcp.ElicitParams{Message: er.Message, Mode: er.Mode, URL: er.URL}
	if len(er.RequestedSchema) > 0 {
		var schema any
		if err := json.Unmarshal(er.RequestedSchema, &schema); err != nil {
			return nil, err
		}
		p.RequestedSchema = schema
	}
	return p, nil
}

// askElicitation asks ss's client what er asks and returns its answer as
// the go-sdk checked it.
func askElicitation(ctx context.Context, ss *mcp.ServerSession, er sb.ElicitationRequest) (sb.ElicitationResponse, error) {
	p, err := elicitParams(er)
	if err != nil {
		return sb.ElicitationResponse{}, err
	}
	res, err := ss.Elicit(ctx, p)
	if err != nil {
		return sb.ElicitationResponse{}, err
	}
	return sb.ElicitationResponse{Action: res.Action, Content: res.Content}, nil
}

// askSampling asks ss's client for the completion raw (CreateMessageParams)
// asks for, and returns the result the go-sdk decoded and checked.
func askSampling(ctx context.Context, ss *mcp.ServerSession, raw json.RawMessage) (json.RawMessage, error) {
	var p mcp.CreateMessageParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	res, err := ss.CreateMessage(ctx, &p)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// callRequests carries the server requests of one relayed call.
type callRequests struct {
	g         *Gateway
	d         *downstream
	sessionID string
	sse       *sseWriter

	mu     sync.Mutex
	ended  bool
	active sync.WaitGroup // requests in progress; none begins once ended
	stop   context.CancelFunc
	ctx    context.Context // ends when the call does
}

// serverRequests returns the carrier of d's server requests for one call
// that answers on sse, and sets opts to send them through it. The caller
// calls end before it writes the call's response.
func (g *Gateway) serverRequests(ctx context.Context, d *downstream, sessionID string, sse *sseWriter, opts *sb.InvokeOptions) *callRequests {
	cr := &callRequests{g: g, d: d, sessionID: sessionID, sse: sse}
	cr.ctx, cr.stop = context.WithCancel(ctx)
	opts.OnElicitation = func(ctx context.Context, er sb.ElicitationRequest) (res sb.ElicitationResponse, err error) {
		err = cr.ask(ctx, func(ctx context.Context, ss *mcp.ServerSession) (err error) {
			res, err = askElicitation(ctx, ss, er)
			return err
		})
		return res, err
	}
	opts.OnSampling = func(ctx context.Context, raw json.RawMessage) (res json.RawMessage, err error) {
		err = cr.ask(ctx, func(ctx context.Context, ss *mcp.ServerSession) (err error) {
			res, err = askSampling(ctx, ss, raw)
			return err
		})
		return res, err
	}
	return cr
}

// errCallEnded refuses a server request that comes after its call ended.
var errCallEnded = errors.New("the call this request belongs to has ended")

// end ends every request of the call still open and waits for them: after
// it, nothing more is written on the call's stream but its response.
func (cr *callRequests) end() {
	cr.mu.Lock()
	cr.ended = true
	cr.mu.Unlock()
	cr.stop()
	cr.active.Wait()
}

// ask runs fn with a go-sdk session standing for the client, whose
// requests are carried to the client on the call's stream. ctx is the
// upstream's; the request ends with it or with the call.
func (cr *callRequests) ask(ctx context.Context, fn func(context.Context, *mcp.ServerSession) error) error {
	cr.mu.Lock()
	if cr.ended {
		cr.mu.Unlock()
		return errCallEnded
	}
	cr.active.Add(1)
	cr.mu.Unlock()
	defer cr.active.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(cr.ctx, cancel)()

	client, server := mcp.NewInMemoryTransports()
	ss, err := cr.g.relays.asker.Connect(ctx, server, &mcp.ServerSessionOptions{
		State: &mcp.ServerSessionState{InitializeParams: cr.d.ss.InitializeParams(), InitializedParams: &mcp.InitializedParams{}}})
	if err != nil {
		return err
	}
	conn, err := client.Connect(ctx)
	if err != nil {
		ss.Close()
		return err
	}
	carried := make(chan struct{})
	go func() {
		defer close(carried)
		cr.carry(ctx, conn)
	}()
	err = fn(ctx, ss)
	cancel()
	ss.Close()
	conn.Close()
	<-carried
	return err
}

// carry sends the one request the asking session writes on conn to the
// client, waits for the client's response, and hands it to the session;
// if ctx ends first, it tells the client the request is cancelled.
func (cr *callRequests) carry(ctx context.Context, conn mcp.Connection) {
	msg, err := conn.Read(ctx)
	if err != nil {
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || serverRequestPrefixes[req.Method] == "" {
		return // the session sends nothing else: cannot happen
	}
	prefix := serverRequestPrefixes[req.Method]
	id := prefix + strconv.FormatUint(cr.g.relays.nextRequest.Add(1), 10)
	rawID, _ := json.Marshal(id)
	reply := cr.g.relays.expect(cr.sessionID, rawID)
	defer cr.g.relays.forget(cr.sessionID, rawID)

	out := *req
	out.ID, _ = jsonrpc.MakeID(id)
	b, err := jsonrpc.EncodeMessage(&out)
	if err != nil {
		return
	}
	cr.sse.event(b)
	select {
	case r := <-reply:
		r.ID = req.ID
		_ = conn.Write(ctx, r)
	case <-ctx.Done():
		// As the go-sdk does when a request's context ends.
		params, _ := json.Marshal(&mcp.CancelledParams{Reason: ctx.Err().Error(), RequestID: id})
		if b, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: "notifications/cancelled", Params: params}); err == nil {
			cr.sse.event(b)
		}
	}
}

// expect registers a request to the client of session sessionID with the
// raw id, and returns where its response will be delivered.
func (rs *relayState) expect(sessionID string, rawID []byte) <-chan *jsonrpc.Response {
	reply := make(chan *jsonrpc.Response, 1)
	rs.mu.Lock()
	rs.pending[relayKey(sessionID, rawID)] = reply
	rs.mu.Unlock()
	return reply
}

// forget drops a request of expect's once it is answered or given up.
func (rs *relayState) forget(sessionID string, rawID []byte) {
	rs.mu.Lock()
	delete(rs.pending, relayKey(sessionID, rawID))
	rs.mu.Unlock()
}

// deliver hands msg, a client's response, to the request of the session it
// answers, if one is pending, answers the POST that carried it as the
// go-sdk does (202 Accepted), and reports whether it did. A request takes
// one response: another one with the same id, or one the go-sdk cannot
// decode, goes to the go-sdk.
func (rs *relayState) deliver(sessionID string, rawID, msg []byte, w http.ResponseWriter) bool {
	decoded, err := jsonrpc.DecodeMessage(msg)
	resp, ok := decoded.(*jsonrpc.Response)
	if err != nil || !ok {
		return false
	}
	key := relayKey(sessionID, rawID)
	rs.mu.Lock()
	reply := rs.pending[key]
	delete(rs.pending, key)
	rs.mu.Unlock()
	if reply == nil {
		return false
	}
	reply <- resp
	w.WriteHeader(http.StatusAccepted)
	return true
}
