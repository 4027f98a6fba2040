package wire_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/wire"
)

// sseServer is a real go-sdk server behind the go-sdk's SSE handler on
// 127.0.0.1, with tools that exercise what the connection carries.
type sseServer struct {
	*httptest.Server
	// refuseCalls, while positive, makes the handler answer that many
	// tools/call POSTs with 503 without passing them on.
	refuseCalls atomic.Int32
	// blockStarted hears of each call of "block" as it starts, and
	// blockEnded of its ctx ending, with the cause.
	blockStarted chan struct{}
	blockEnded   chan error
	// release ends every "block" call at the test's end: the go-sdk's SSE
	// server waits for its handlers when the stream is cut, without
	// cancelling them.
	release chan struct{}
	// callAccepted hears of each tools/call POST answered.
	callAccepted chan struct{}
}

// bigAnswer is the size of the "big" tool's text: over the limit of the
// tests that set one.
const bigAnswer = 256 << 10

var errReleased = errors.New("released by the test's end")

type textArgs struct {
	Text string `json:"text"`
}

func newSSEServer(t testing.TB) *sseServer {
	t.Helper()
	s := &sseServer{blockStarted: make(chan struct{}, 4), blockEnded: make(chan error, 4), release: make(chan struct{}), callAccepted: make(chan struct{}, 16)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "ssetest", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		for i := range 3 {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
			if err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: a.Text, RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + ":" + fmt.Sprint(res.Content["name"])}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "big"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("z", bigAnswer)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		s.blockStarted <- struct{}{}
		select {
		case <-ctx.Done():
			s.blockEnded <- context.Cause(ctx)
			return nil, nil, ctx.Err()
		case <-s.release:
			s.blockEnded <- errReleased
			return nil, nil, errReleased
		}
	})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && s.refuseCalls.Load() > 0 {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/call"`)) && s.refuseCalls.Add(-1) >= 0 {
				http.Error(w, "overloaded", http.StatusServiceUnavailable)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		var body []byte
		if r.Method == http.MethodPost {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			select {
			case s.callAccepted <- struct{}{}:
			default:
			}
		}
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.release) })
	return s
}

// client is a connection and the go-sdk client over it.
type client struct {
	conn    *wire.SSE
	session *mcp.ClientSession
	hc      *http.Client

	mu   sync.Mutex
	msgs []string // what OnMessage saw
}

func (c *client) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// dial connects a go-sdk client to url over DialSSE; its elicitation
// handler accepts with the name "ada".
func dial(t testing.TB, url string, limit int) *client {
	t.Helper()
	c := &client{hc: &http.Client{Transport: &http.Transport{}}}
	conn, err := wire.DialSSE(context.Background(), url, c.hc, &wire.Options{Limit: limit, OnMessage: func(msg []byte) {
		c.mu.Lock()
		c.msgs = append(c.msgs, string(msg))
		c.mu.Unlock()
	}})
	if err != nil {
		t.Fatalf("DialSSE: %v", err)
	}
	c.conn = conn
	cl := mcp.NewClient(&mcp.Implementation{Name: "wiretest", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
	})
	cs, err := cl.Connect(context.Background(), wire.Transport{C: conn}, nil)
	if err != nil {
		conn.Close()
		t.Fatalf("Connect: %v", err)
	}
	c.session = cs
	t.Cleanup(func() {
		cs.Close()
		conn.Close()
		c.hc.CloseIdleConnections()
	})
	return c
}

func noLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func callTool(name string, args any, meta string) *wire.Request {
	a, _ := json.Marshal(args)
	p := `{"name":"` + name + `","arguments":` + string(a)
	if meta != "" {
		p += `,"_meta":` + meta
	}
	return &wire.Request{Method: "tools/call", Params: json.RawMessage(p + "}"), Name: name}
}

// text returns the first text of a tools/call result.
func sseText(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r.Content[0].Text
}

func wantKind(t *testing.T, err error, kind wire.Kind) *wire.Error {
	t.Helper()
	we, ok := wire.AsError(err)
	if !ok || we.Kind != kind {
		t.Fatalf("error %v (%T), want a *wire.Error of kind %q", err, err, kind)
	}
	return we
}

func TestSSECallReturnsTheResultAsBytesBesideTheGoSDK(t *testing.T) {
	noLeaks(t)
	s := newSSEServer(t)
	c := dial(t, s.URL, 0)
	raw, err := c.conn.Call(context.Background(), callTool("echo", textArgs{"hello"}, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := sseText(t, raw); got != "hello" {
		t.Fatalf("echo = %q", got)
	}
	// The go-sdk's own requests run over the same connection.
	tools, err := c.session.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 5 {
		t.Fatalf("ListTools = %v, %v", tools, err)
	}
	res, err := c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: textArgs{"via sdk"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "via sdk" {
		t.Fatalf("CallTool = %v, %v", res, err)
	}
}

func TestSSEProgressReachesOnMessageBeforeTheResult(t *testing.T) {
	noLeaks(t)
	s := newSSEServer(t)
	c := dial(t, s.URL, 0)
	raw, err := c.conn.Call(context.Background(), callTool("progress", textArgs{}, `{"progressToken":"tok"}`))
	if err != nil {
		t.Fatal(err)
	}
	if sseText(t, raw) != "done" {
		t.Fatalf("result %s", raw)
	}
	var order []string
	for _, m := range c.seen() {
		switch {
		case strings.Contains(m, `"notifications/progress"`):
			var p struct {
				Params struct{ Progress float64 }
			}
			json.Unmarshal([]byte(m), &p)
			order = append(order, fmt.Sprint("progress ", p.Params.Progress))
		case strings.Contains(m, `"id":"sb-`):
			order = append(order, "result")
		}
	}
	if want := []string{"progress 1", "progress 2", "progress 3", "result"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("OnMessage saw %q, want %q", order, want)
	}
}

func TestSSEElicitationDuringACallIsAnsweredByTheGoSDKClient(t *testing.T) {
	noLeaks(t)
	s := newSSEServer(t)
	c := dial(t, s.URL, 0)
	raw, err := c.conn.Call(context.Background(), callTool("ask", textArgs{"your name?"}, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := sseText(t, raw); got != "accept:ada" {
		t.Fatalf("ask = %q", got)
	}
}

func TestSSECallCancelledReachesTheServersHandler(t *testing.T) {
	noLeaks(t)
	s := newSSEServer(t)
	c := dial(t, s.URL, 0)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.conn.Call(ctx, callTool("block", textArgs{}, ""))
		errc <- err
	}()
	<-s.blockStarted
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want context.Canceled", err)
	}
	// The handler's ctx ends by the notification, not by the session's end:
	// the connection still serves.
	if cause := <-s.blockEnded; !errors.Is(cause, context.Canceled) {
		t.Fatalf("the handler's ctx ended by %v, want context.Canceled", cause)
	}
	raw, err := c.conn.Call(context.Background(), callTool("echo", textArgs{"after"}, ""))
	if err != nil || sseText(t, raw) != "after" {
		t.Fatalf("Call after the cancellation = %s, %v", raw, err)
	}
}

func TestSSEPostRefusedWith503FailsThatCallAlone(t *testing.T) {
	noLeaks(t)
	s := newSSEServer(t)
	c := dial(t, s.URL, 0)
	s.refuseCalls.Store(1)
	_, err := c.conn.Call(context.Background(), callTool("echo", textArgs{"refused"}, ""))
	we := wantKind(t, err, wire.KindStatus)
	if we.Status != http.StatusServiceUnavailable || !we.Sent {
		t.Fatalf("error %+v, want status 503, sent", we)
	}
	raw, err := c.conn.Call(context.Background(), callTool("echo", textArgs{"next"}, ""))
	if err != nil || sseText(t, raw) != "next" {
		t.Fatalf("the next Call = %s, %v", raw, err)
	}
	// The go-sdk's own request, refused the same way, fails alone too.
	s.refuseCalls.Store(1)
	_, err = c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: textArgs{"sdk"}})
	if we := wantKind(t, err, wire.KindStatus); we.Status != http.StatusServiceUnavailable {
		t.Fatalf("CallTool error %+v", we)
	}
	res, err := c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: textArgs{"sdk again"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "sdk again" {
		t.Fatalf("the go-sdk's next CallTool = %v, %v", res, err)
	}
}

func TestSSEStreamCutEndsTheConnectionAndTheWaitingCall(t *testing.T) {
	noLeaks(t)
	s := newSSEServer(t)
	c := dial(t, s.URL, 0)
	errc := make(chan error, 1)
	go func() {
		_, err := c.conn.Call(context.Background(), callTool("block", textArgs{}, ""))
		errc <- err
	}()
	<-s.blockStarted
	<-s.callAccepted // the POST's 202 is written: only the answer is awaited
	s.CloseClientConnections()
	we := wantKind(t, <-errc, wire.KindClosed)
	if !we.Sent {
		t.Fatalf("the waiting Call's error %+v, want Sent", we)
	}
	<-c.conn.Done()
	cwe := wantKind(t, c.conn.Err(), wire.KindClosed)
	if cwe.Err == nil {
		t.Fatalf("Err() = %+v, want the read error kept", cwe)
	}
	if !errors.Is(c.conn.Err(), mcp.ErrConnectionClosed) {
		t.Fatalf("Err() = %v, not mcp.ErrConnectionClosed", c.conn.Err())
	}
	_, err := c.conn.Call(context.Background(), callTool("echo", textArgs{"late"}, ""))
	if we := wantKind(t, err, wire.KindClosed); we.Sent {
		t.Fatalf("a Call after the end: %+v, want not sent", we)
	}
}

func TestSSECloseFailsTheWaitingCall(t *testing.T) {
	noLeaks(t)
	s := newSSEServer(t)
	c := dial(t, s.URL, 0)
	errc := make(chan error, 1)
	go func() {
		_, err := c.conn.Call(context.Background(), callTool("block", textArgs{}, ""))
		errc <- err
	}()
	<-s.blockStarted
	c.conn.Close()
	wantKind(t, <-errc, wire.KindClosed)
	<-c.conn.Done()
	if err := c.conn.Err(); err != nil {
		t.Fatalf("Err() after Close = %v, want nil", err)
	}
}

func TestSSERefusedPort(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	_, err = wire.DialSSE(context.Background(), "http://"+addr+"/sse", hc, nil)
	we := wantKind(t, err, wire.KindRefused)
	if we.Sent || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("error %+v: want not sent, ECONNREFUSED", we)
	}
}

// rawSSE serves an event stream whose events the test writes, and counts
// the POSTs to its endpoint, passing each body to posts.
type rawSSE struct {
	*httptest.Server
	events chan string // written to the stream as they come; close to end it
	posts  chan []byte // every POST's body
	status int         // what a POST is answered with (0: 202)
}

func newRawSSE(t *testing.T, endpoint string) *rawSSE {
	r := &rawSSE{events: make(chan string, 8), posts: make(chan []byte, 8)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(req.Body)
			r.posts <- body
			w.WriteHeader(cmp.Or(r.status, http.StatusAccepted))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", endpoint)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev, ok := <-r.events:
				if !ok {
					return
				}
				io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			case <-req.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func TestSSEEndpointOfAnotherOriginIsRefused(t *testing.T) {
	noLeaks(t)
	r := newRawSSE(t, "http://127.0.0.2:9/messages")
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	_, err := wire.DialSSE(context.Background(), r.URL, hc, nil)
	wantKind(t, err, wire.KindTransport) // nothing was sent there
	var re *egress.RedirectError
	if !errors.As(err, &re) || re.To != "http://127.0.0.2:9/messages" {
		t.Fatalf("error %v; want an *egress.RedirectError naming the endpoint", err)
	}
}

// bigEvent writes one event of size bytes of data: head, then filler,
// then tail, in 64 KiB writes from one buffer.
func bigEvent(w io.Writer, head string, size int, tail string) {
	io.WriteString(w, "data: "+head)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for left := size - len(head) - len(tail); left > 0; left -= len(chunk) {
		if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
			return
		}
	}
	io.WriteString(w, tail+"\n\n")
}

func TestSSEOversizedAnswerFailsItsCallAloneWithTheHeapSmall(t *testing.T) {
	noLeaks(t)
	const size, limit = 300 << 20, 1 << 20
	answer := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(req.Body)
			var m struct{ ID any }
			json.Unmarshal(body, &m)
			if m.ID != nil {
				answer <- fmt.Sprint(m.ID)
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: /messages\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case id := <-answer:
				switch id {
				case "sb-1": // the id first, as the go-sdk writes it
					bigEvent(w, `{"jsonrpc":"2.0","id":"sb-1","result":{"content":[{"type":"text","text":"`, size, `"}]}}`)
				case "sb-2": // the id last, as the TypeScript SDK writes it
					bigEvent(w, `{"result":{"content":[{"type":"text","text":"`, 2*limit, `"}]},"jsonrpc":"2.0","id":"sb-2"}`)
				default:
					fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%q,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"small\"}]}}\n\n", id)
				}
				w.(http.Flusher).Flush()
			case <-req.Context().Done():
				return
			}
		}
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	conn, err := wire.DialSSE(context.Background(), srv.URL, hc, &wire.Options{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = conn.Call(context.Background(), callTool("big", nil, ""))
	runtime.ReadMemStats(&after)
	if we := wantKind(t, err, wire.KindTooLarge); we.Limit != limit || !we.Sent {
		t.Fatalf("error %+v", we)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MB answer over a %d MiB limit: %.1f MiB allocated while it was read and discarded, heap in use %.1f MiB after (%.1f before)",
		size>>20, limit>>20, float64(allocated)/(1<<20), float64(after.HeapInuse)/(1<<20), float64(before.HeapInuse)/(1<<20))
	if allocated > 32<<20 {
		t.Fatalf("%d bytes allocated while a %d-byte answer was discarded", allocated, size)
	}

	_, err = conn.Call(context.Background(), callTool("big", nil, ""))
	wantKind(t, err, wire.KindTooLarge)
	raw, err := conn.Call(context.Background(), callTool("small", nil, ""))
	if err != nil || sseText(t, raw) != "small" {
		t.Fatalf("the Call after two oversized answers = %s, %v", raw, err)
	}
}

func TestSSEOversizedMessageThatCannotBeToldApartEndsTheConnection(t *testing.T) {
	noLeaks(t)
	r := newRawSSE(t, "/messages")
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	conn, err := wire.DialSSE(context.Background(), r.URL, hc, &wire.Options{Limit: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Call(context.Background(), callTool("any", nil, ""))
		errc <- err
	}()
	<-r.posts
	var b bytes.Buffer
	bigEvent(&b, `{"result":{"text":"`, 8<<10, `"}, "jsonrpc": "2.0"}`)
	r.events <- b.String()
	<-conn.Done()
	wantKind(t, conn.Err(), wire.KindTooLarge)
	if we := wantKind(t, <-errc, wire.KindClosed); !we.Sent {
		t.Fatalf("the waiting Call: %+v", we)
	}
}

func TestSSEOversizedAnswerFromTheGoSDKServerFailsEachRequestAlone(t *testing.T) {
	noLeaks(t)
	s := newSSEServer(t)
	c := dial(t, s.URL, bigAnswer/2)
	_, err := c.conn.Call(context.Background(), callTool("big", textArgs{}, ""))
	if we := wantKind(t, err, wire.KindTooLarge); we.Limit != bigAnswer/2 {
		t.Fatalf("Call: %+v", we)
	}
	// The go-sdk's own request is failed with the wire's error, as its
	// jsonrpc2 layer hands a response's error to the caller.
	_, err = c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: textArgs{}})
	wantKind(t, err, wire.KindTooLarge)
	raw, err := c.conn.Call(context.Background(), callTool("echo", textArgs{"still here"}, ""))
	if err != nil || sseText(t, raw) != "still here" {
		t.Fatalf("Call after = %s, %v", raw, err)
	}
	if _, err := c.session.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("the go-sdk's ListTools after: %v", err)
	}
}

func TestSSEPostAnswered404EndsTheConnection(t *testing.T) {
	noLeaks(t)
	r := newRawSSE(t, "/messages")
	r.status = http.StatusNotFound
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	conn, err := wire.DialSSE(context.Background(), r.URL, hc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.Call(context.Background(), callTool("any", nil, ""))
	if we := wantKind(t, err, wire.KindSessionMissing); we.Status != http.StatusNotFound || !we.Sent {
		t.Fatalf("Call: %+v", we)
	}
	<-conn.Done()
	wantKind(t, conn.Err(), wire.KindSessionMissing)
}

func TestSSEBatchAnswerReachesItsCall(t *testing.T) {
	noLeaks(t)
	r := newRawSSE(t, "/messages")
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	conn, err := wire.DialSSE(context.Background(), r.URL, hc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		<-r.posts
		r.events <- `data: [{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}},` +
			`{"jsonrpc":"2.0","id":"sb-1","result":{"content":[{"type":"text","text":"batched"}]}}]` + "\n\n"
	}()
	readc := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background()) // the notification, for the go-sdk
		readc <- err
	}()
	raw, err := conn.Call(context.Background(), callTool("any", nil, ""))
	if err != nil || sseText(t, raw) != "batched" {
		t.Fatalf("Call = %s, %v", raw, err)
	}
	if err := <-readc; err != nil {
		t.Fatalf("Read: %v", err)
	}
}
