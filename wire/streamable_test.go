package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/switchboard-mcp/switchboard/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The shared HTTP transport keeps idle keep-alive connections.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	)
}

const (
	legacyVersion    = "2025-11-25"
	statelessVersion = "2026-07-28"
)

// fixture is a go-sdk Streamable HTTP server on 127.0.0.1 behind a
// handler that can fault one request (by the X-Fault header a Call sends,
// or faultNext for the go-sdk's next tools/call) and records what it saw.
type fixture struct {
	url    string
	srv    *httptest.Server
	server *mcp.Server

	faultNext atomic.Value // string: the fault for the next tools/call POST
	resumes   atomic.Int32 // GETs naming a Last-Event-ID
	getFault  atomic.Bool  // the standalone GET sends an oversized event, then a notification
	mu        sync.Mutex
	recorded  http.Header // headers of the last POST with X-Record
	sdkCall   http.Header // headers of the go-sdk's last tools/call

	cancelled  chan struct{} // closed when the "block" tool's ctx ends
	blocking   chan struct{} // closed when the "block" tool has started
	blockOnce  sync.Once
	release    chan struct{} // closed as the test ends, before the server's Close
	cancelOnce sync.Once
}

func newFixture(t *testing.T, opts *mcp.StreamableHTTPOptions) *fixture {
	t.Helper()
	f := &fixture{cancelled: make(chan struct{}), blocking: make(chan struct{}), release: make(chan struct{})}
	f.faultNext.Store("")
	server := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Text string }
			json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "progress", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range 3 {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + ":" + fmt.Sprint(res.Content["name"])}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.blockOnce.Do(func() { close(f.blocking) })
			select {
			case <-ctx.Done():
				f.cancelOnce.Do(func() { close(f.cancelled) })
				return nil, ctx.Err()
			case <-f.release: // the test is over
				return nil, errors.New("released")
			}
		})
	server.AddTool(&mcp.Tool{Name: "cut", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// The first stream ends here; the answer is kept in the event
			// store for the client's GET to resume it.
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: time.Millisecond})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after the cut"}}}, nil
		})
	f.server = server
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, opts)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			f.resumes.Add(1)
		}
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "" && f.getFault.Load() {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"%s\"}}\n\n", strings.Repeat("a", 1<<20))
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		fault := r.Header.Get("X-Fault")
		if fault == "" && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				fault, _ = f.faultNext.Swap("").(string)
				if !bytes.Contains(body, []byte(`"sb-`)) {
					f.mu.Lock()
					f.sdkCall = r.Header.Clone()
					f.mu.Unlock()
				}
			}
		}
		if r.Header.Get("X-Record") != "" {
			f.mu.Lock()
			f.recorded = r.Header.Clone()
			f.mu.Unlock()
		}
		if fault != "" && f.fault(w, r, fault) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	f.url = f.srv.URL
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.release) })
	return f
}

// hugeSize is the size of the answer of the "huge-*" faults.
const hugeSize = 300 << 20

// fault answers r as fault says; false for a fault that is not one.
func (f *fixture) fault(w http.ResponseWriter, r *http.Request, fault string) bool {
	if n, err := strconv.Atoi(fault); err == nil {
		http.Error(w, http.StatusText(n), n)
		return true
	}
	switch fault {
	case "html":
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Sign in to continue</body></html>")
	case "huge-json", "huge-sse":
		var req struct{ ID json.RawMessage }
		json.NewDecoder(r.Body).Decode(&req)
		head := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text","text":"`
		if fault == "huge-sse" {
			w.Header().Set("Content-Type", "text/event-stream")
			head = "event: message\ndata: " + head
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		if _, err := io.WriteString(w, head); err != nil {
			return true
		}
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		for range hugeSize / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return true // the client stopped reading
			}
		}
		io.WriteString(w, `"}]}}`+"\n\n")
	default:
		return false
	}
	return true
}

func (f *fixture) lastSDKCall() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sdkCall
}

func (f *fixture) lastRecorded() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recorded
}

// connect connects a go-sdk client over a new Streamable to f.
func connect(t *testing.T, f *fixture, version string, opts *wire.Options, copts *mcp.ClientOptions) (*wire.Streamable, *mcp.ClientSession) {
	t.Helper()
	conn := wire.NewStreamable(f.url, nil, opts)
	client := mcp.NewClient(&mcp.Implementation{Name: "wire-test", Version: "1"}, copts)
	cs, err := client.Connect(context.Background(), wire.Transport{C: conn}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		conn.Close()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		conn.Close()
	})
	return conn, cs
}

// callParams are tools/call params for tool with args, carrying the
// 2026-07-28 _meta triple when version asks for it.
func callParams(version, tool string, args any, meta map[string]any) json.RawMessage {
	if meta == nil {
		meta = map[string]any{}
	}
	if version >= statelessVersion {
		meta[mcp.MetaKeyProtocolVersion] = version
		meta[mcp.MetaKeyClientCapabilities] = map[string]any{}
	}
	p := map[string]any{"name": tool, "arguments": args}
	if len(meta) > 0 {
		p["_meta"] = meta
	}
	b, _ := json.Marshal(p)
	return b
}

func text(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var r mcp.CallToolResult
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("result %s: %v", result, err)
	}
	if len(r.Content) != 1 {
		t.Fatalf("result %s: want one content", result)
	}
	return r.Content[0].(*mcp.TextContent).Text
}

func wantError(t *testing.T, err error, kind wire.Kind, status int, sent bool) *wire.Error {
	t.Helper()
	we, ok := wire.AsError(err)
	if !ok {
		t.Fatalf("error %v (%T): not a *wire.Error", err, err)
	}
	if we.Kind != kind || we.Status != status || we.Sent != sent {
		t.Fatalf("error %v: got kind %v status %d sent %v, want %v %d %v", err, we.Kind, we.Status, we.Sent, kind, status, sent)
	}
	return we
}

// TestStreamableHandshakeAndCall: a go-sdk client connects over the wire to
// the go-sdk's own servers of both generations and both answer forms,
// calls through the go-sdk, and Call returns the result as bytes with the
// headers of its protocol.
func TestStreamableHandshakeAndCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		asked   string // the version the client asks for
		version string // the version agreed
		opts    mcp.StreamableHTTPOptions
	}{
		{"stateful-sse", legacyVersion, legacyVersion, mcp.StreamableHTTPOptions{}},
		{"stateful-json", legacyVersion, legacyVersion, mcp.StreamableHTTPOptions{JSONResponse: true}},
		{"stateless-legacy", legacyVersion, legacyVersion, mcp.StreamableHTTPOptions{Stateless: true}},
		{"stateless-2026-sse", statelessVersion, statelessVersion, mcp.StreamableHTTPOptions{Stateless: true}},
		{"stateless-2026-json", statelessVersion, statelessVersion, mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
		// A stateful server refuses server/discover with HTTP 400 and a
		// JSON-RPC error (KindRPC), which the go-sdk reads to fall back to
		// initialize.
		{"stateful-2026-fallback", statelessVersion, legacyVersion, mcp.StreamableHTTPOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, &tc.opts)
			var warned warnings
			conn, cs := connect(t, f, tc.asked, &wire.Options{Logger: slog.New(&warned)}, nil)
			if got := cs.InitializeResult().ProtocolVersion; got != tc.version {
				t.Fatalf("negotiated %q, want %q", got, tc.version)
			}
			if got := conn.ProtocolVersion(); got != tc.version {
				t.Fatalf("the wire took version %q, want %q", got, tc.version)
			}
			if stateful := !tc.opts.Stateless; stateful != (conn.SessionID() != "") {
				t.Fatalf("session id %q on a stateful=%v server", conn.SessionID(), stateful)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "via go-sdk"}})
			if err != nil || res.Content[0].(*mcp.TextContent).Text != "via go-sdk" {
				t.Fatalf("go-sdk CallTool: %v, %v", res, err)
			}
			raw, err := conn.Call(context.Background(), &wire.Request{
				Method: "tools/call", Name: "echo",
				Params: callParams(tc.version, "echo", map[string]any{"text": "as bytes"}, nil),
				Header: http.Header{"X-Record": {"1"}},
			})
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if got := text(t, raw); got != "as bytes" {
				t.Fatalf("Call's result says %q", got)
			}
			h := f.lastRecorded()
			if got := h.Get("Mcp-Protocol-Version"); got != tc.version {
				t.Errorf("Call sent Mcp-Protocol-Version %q, want %q", got, tc.version)
			}
			wantMethod, wantName := "", ""
			if tc.version >= statelessVersion {
				wantMethod, wantName = "tools/call", "echo"
			}
			if h.Get("Mcp-Method") != wantMethod || h.Get("Mcp-Name") != wantName {
				t.Errorf("Call sent Mcp-Method %q Mcp-Name %q, want %q %q", h.Get("Mcp-Method"), h.Get("Mcp-Name"), wantMethod, wantName)
			}
			if got := h.Get("Mcp-Session-Id"); got != conn.SessionID() {
				t.Errorf("Call sent session %q, want %q", got, conn.SessionID())
			}
			h = f.lastSDKCall()
			if h.Get("Mcp-Protocol-Version") != tc.version || h.Get("Mcp-Method") != wantMethod || h.Get("Mcp-Name") != wantName {
				t.Errorf("the go-sdk's tools/call was sent with Mcp-Protocol-Version %q Mcp-Method %q Mcp-Name %q, want %q %q %q",
					h.Get("Mcp-Protocol-Version"), h.Get("Mcp-Method"), h.Get("Mcp-Name"), tc.version, wantMethod, wantName)
			}
			_, err = conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "nosuch",
				Params: callParams(tc.version, "nosuch", map[string]any{}, nil)})
			if we, ok := wire.AsError(err); !ok || we.Kind != wire.KindRPC || !we.Sent || we.RPC == nil {
				t.Fatalf("Call of an unknown tool: %v, want the server's JSON-RPC error", err)
			}
			if tc.asked != tc.version {
				// Call of the newer protocol on the older server: the
				// server's JSON-RPC error in its 400, typed.
				_, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "echo",
					Params: callParams(tc.asked, "echo", map[string]any{"text": "x"}, nil)})
				if we := wantError(t, err, wire.KindRPC, http.StatusBadRequest, true); we.RPC == nil || we.RPC.Code != mcp.CodeUnsupportedProtocolVersion {
					t.Fatalf("RPC error %v, want code %d", we.RPC, mcp.CodeUnsupportedProtocolVersion)
				}
			}
			warned.mu.Lock()
			if len(warned.limits) != 0 {
				// A stateless server answers the standalone GET 405: none.
				t.Errorf("%d warnings logged", len(warned.limits))
			}
			warned.mu.Unlock()
			sid := conn.SessionID()
			conn.Close()
			if sid != "" {
				// Close ended the session on the server.
				req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", tc.version)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("after Close, the session answers %d, want 404", resp.StatusCode)
				}
			}
		})
	}
}

// TestStreamableProgressBeforeResult: the progress a tool reports on the
// call's stream reaches OnMessage in order, before the result.
func TestStreamableProgressBeforeResult(t *testing.T) {
	f := newFixture(t, &mcp.StreamableHTTPOptions{})
	var mu sync.Mutex
	var seen []string
	conn, _ := connect(t, f, legacyVersion, &wire.Options{OnMessage: func(msg []byte) {
		var m struct {
			Method string
			Params struct{ Progress float64 }
			Result json.RawMessage
		}
		json.Unmarshal(msg, &m)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case m.Method == "notifications/progress":
			seen = append(seen, fmt.Sprint("progress ", m.Params.Progress))
		case m.Result != nil && bytes.Contains(msg, []byte(`"sb-`)):
			seen = append(seen, "result")
		}
	}}, nil)
	raw, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "progress",
		Params: callParams(legacyVersion, "progress", map[string]any{}, map[string]any{"progressToken": "p1"})})
	if err != nil || text(t, raw) != "done" {
		t.Fatalf("Call: %s, %v", raw, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen, ", "); got != "progress 1, progress 2, progress 3, result" {
		t.Fatalf("OnMessage saw %s", got)
	}
}

// TestStreamableElicitationDuringCall: a server request on a Call's stream
// reaches the go-sdk client's handler through Read, and its answer, which
// the go-sdk writes, reaches the tool.
func TestStreamableElicitationDuringCall(t *testing.T) {
	f := newFixture(t, &mcp.StreamableHTTPOptions{})
	var elicits atomic.Int32
	conn, _ := connect(t, f, legacyVersion, &wire.Options{OnMessage: func(msg []byte) {
		if bytes.Contains(msg, []byte(`"elicitation/create"`)) {
			elicits.Add(1)
		}
	}}, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}})
	raw, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "ask",
		Params: callParams(legacyVersion, "ask", map[string]any{}, nil)})
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if got := text(t, raw); got != "accept:Ada" {
		t.Fatalf("the tool was answered %q", got)
	}
	if elicits.Load() != 1 {
		t.Fatalf("OnMessage saw %d elicitation requests, want 1", elicits.Load())
	}
}

// TestStreamableCancelReachesServer: a Call whose ctx ends aborts and
// tells the server, whose handler's ctx ends.
func TestStreamableCancelReachesServer(t *testing.T) {
	for _, opts := range []mcp.StreamableHTTPOptions{{}, {JSONResponse: true}} {
		t.Run(fmt.Sprint("json=", opts.JSONResponse), func(t *testing.T) {
			f := newFixture(t, &opts)
			conn, _ := connect(t, f, legacyVersion, nil, nil)
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-f.blocking
				cancel()
			}()
			_, err := conn.Call(ctx, &wire.Request{Method: "tools/call", Name: "block",
				Params: callParams(legacyVersion, "block", map[string]any{}, nil)})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Call: %v, want context.Canceled", err)
			}
			<-f.cancelled // the handler's ctx ended: the server was told
			if _, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "echo",
				Params: callParams(legacyVersion, "echo", map[string]any{"text": "x"}, nil)}); err != nil {
				t.Fatalf("the next Call: %v", err)
			}
		})
	}
}

// TestStreamableCloseEndsRequests: Close does not wait for the answers of
// requests in flight, Call's or the go-sdk's: they fail as closed. (On a
// stateless server: the go-sdk's stateful one holds Close's DELETE until
// the handlers in flight return.)
func TestStreamableCloseEndsRequests(t *testing.T) {
	for _, sdk := range []bool{false, true} {
		t.Run(fmt.Sprint("go-sdk=", sdk), func(t *testing.T) {
			f := newFixture(t, &mcp.StreamableHTTPOptions{Stateless: true})
			conn, cs := connect(t, f, legacyVersion, nil, nil)
			errc := make(chan error, 1)
			go func() {
				var err error
				if sdk {
					_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
				} else {
					_, err = conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "block",
						Params: callParams(legacyVersion, "block", map[string]any{}, nil)})
				}
				errc <- err
			}()
			<-f.blocking
			if err := conn.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			err := <-errc
			if sdk {
				if err == nil {
					t.Fatal("the go-sdk's call succeeded on a closed connection")
				}
				return
			}
			// The stateless server sends the answer's headers with its
			// first event: whether a status came depends on the race.
			if we, ok := wire.AsError(err); !ok || we.Kind != wire.KindClosed || !we.Sent {
				t.Fatalf("Call: %v, want a sent request closed", err)
			}
		})
	}
}

// TestStreamableSessionMissing: a 404 to a request naming the session
// fails it with KindSessionMissing and ends the connection with it.
func TestStreamableSessionMissing(t *testing.T) {
	f := newFixture(t, &mcp.StreamableHTTPOptions{})
	conn, cs := connect(t, f, legacyVersion, nil, nil)
	req, _ := http.NewRequest(http.MethodDelete, f.url, nil)
	req.Header.Set("Mcp-Session-Id", conn.SessionID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, err = conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "echo",
		Params: callParams(legacyVersion, "echo", map[string]any{"text": "x"}, nil)})
	if we, ok := wire.AsError(err); ok && we.Kind == wire.KindClosed {
		// The standalone stream's GET was answered 404 first, which
		// ended the connection and the Call in flight with it.
		err = we.Err
	}
	wantError(t, err, wire.KindSessionMissing, http.StatusNotFound, true)
	<-conn.Done()
	wantError(t, conn.Err(), wire.KindSessionMissing, http.StatusNotFound, true)
	if _, err := cs.ListTools(context.Background(), nil); !errors.Is(err, mcp.ErrConnectionClosed) && err == nil {
		t.Fatalf("the go-sdk session lists tools on an ended connection")
	}
}

// TestStreamableStatusFailsOneRequest: an HTTP error status fails the one
// request it answers, sent, with its status, whether Call or the go-sdk
// sent it; the connection goes on.
func TestStreamableStatusFailsOneRequest(t *testing.T) {
	f := newFixture(t, &mcp.StreamableHTTPOptions{})
	conn, cs := connect(t, f, legacyVersion, nil, nil)
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusRequestEntityTooLarge} {
		_, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "echo",
			Params: callParams(legacyVersion, "echo", map[string]any{"text": "x"}, nil),
			Header: http.Header{"X-Fault": {strconv.Itoa(status)}}})
		wantError(t, err, wire.KindStatus, status, true)

		f.faultNext.Store(strconv.Itoa(status))
		_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
		wantError(t, err, wire.KindStatus, status, true)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still up"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "still up" {
		t.Fatalf("after the refusals, CallTool: %v, %v", res, err)
	}
	if conn.Err() != nil {
		t.Fatalf("the connection ended: %v", conn.Err())
	}
}

// TestStreamableRefused: a port nothing listens on refuses the request,
// which was not sent.
func TestStreamableRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/mcp"
	l.Close()
	conn := wire.NewStreamable(url, nil, nil)
	defer conn.Close()
	_, err = conn.Call(context.Background(), &wire.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)})
	wantError(t, err, wire.KindRefused, 0, false)
}

// TestStreamableClientErrorsKept: what the caller's HTTP client refuses
// (its RoundTripper, its CheckRedirect) fails the request with that error
// kept, and says whether the request was sent.
func TestStreamableClientErrorsKept(t *testing.T) {
	f := newFixture(t, &mcp.StreamableHTTPOptions{})
	blocked := errors.New("the egress policy blocks this address")
	noRedirect := errors.New("redirects are refused")
	redirector := httptest.NewServer(http.RedirectHandler(f.url, http.StatusTemporaryRedirect))
	defer redirector.Close()
	for _, tc := range []struct {
		name string
		url  string
		hc   *http.Client
		want error
		sent bool
	}{
		{"blocked", f.url, &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, blocked })}, blocked, false},
		{"redirect", redirector.URL, &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return noRedirect }}, noRedirect, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := wire.NewStreamable(tc.url, tc.hc, nil)
			defer conn.Close()
			_, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)})
			wantError(t, err, wire.KindTransport, 0, tc.sent)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v does not keep %v", err, tc.want)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestStreamableHTMLPage: a 200 web page is not an answer.
func TestStreamableHTMLPage(t *testing.T) {
	f := newFixture(t, &mcp.StreamableHTTPOptions{})
	conn, _ := connect(t, f, legacyVersion, nil, nil)
	_, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "echo",
		Params: callParams(legacyVersion, "echo", map[string]any{"text": "x"}, nil),
		Header: http.Header{"X-Fault": {"html"}}})
	wantError(t, err, wire.KindProtocol, http.StatusOK, true)
}

// TestStreamableTooLarge: a 300 MB answer, as JSON or as an event, fails
// its request with KindTooLarge without the process holding it, and the
// connection stays up.
func TestStreamableTooLarge(t *testing.T) {
	const limit = 4 << 20
	for _, fault := range []string{"huge-json", "huge-sse"} {
		t.Run(fault, func(t *testing.T) {
			f := newFixture(t, &mcp.StreamableHTTPOptions{})
			conn, cs := connect(t, f, legacyVersion, &wire.Options{Limit: limit}, nil)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "echo",
				Params: callParams(legacyVersion, "echo", map[string]any{"text": "x"}, nil),
				Header: http.Header{"X-Fault": {fault}}})
			runtime.ReadMemStats(&after)
			we := wantError(t, err, wire.KindTooLarge, http.StatusOK, true)
			if we.Limit != limit {
				t.Errorf("Limit %d, want %d", we.Limit, limit)
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %d MiB answer refused; allocated during the call %.1f MiB, heap in use %.1f MiB (before %.1f MiB)",
				fault, hugeSize>>20, float64(allocated)/(1<<20), float64(after.HeapInuse)/(1<<20), float64(before.HeapInuse)/(1<<20))
			// The answer is refused once it passes the limit, and what was
			// read of it is not kept: the whole process (server included)
			// allocates a few limits' worth (the buffer doubling up to the
			// limit), where a reader that held the answer would allocate
			// all of it at least.
			if allocated > 4*limit || after.HeapInuse > hugeSize/4 {
				t.Fatalf("the call allocated %d bytes, heap in use %d, for a %d-byte answer", allocated, after.HeapInuse, hugeSize)
			}
			raw, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "echo",
				Params: callParams(legacyVersion, "echo", map[string]any{"text": "next"}, nil)})
			if err != nil || text(t, raw) != "next" {
				t.Fatalf("the next Call: %s, %v", raw, err)
			}
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatalf("the go-sdk session after: %v", err)
			}
		})
	}
}

// TestStreamableResumesCutStream: a POST's stream that the server cuts
// before the answer is resumed with GET and Last-Event-ID, for Call and
// for the go-sdk's calls alike.
func TestStreamableResumesCutStream(t *testing.T) {
	f := newFixture(t, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	conn, cs := connect(t, f, legacyVersion, nil, nil)
	raw, err := conn.Call(context.Background(), &wire.Request{Method: "tools/call", Name: "cut",
		Params: callParams(legacyVersion, "cut", map[string]any{}, nil)})
	if err != nil || text(t, raw) != "after the cut" {
		t.Fatalf("Call: %s, %v", raw, err)
	}
	if n := f.resumes.Load(); n != 1 {
		t.Fatalf("%d resuming GETs, want 1", n)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "cut", Arguments: map[string]any{}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "after the cut" {
		t.Fatalf("go-sdk CallTool: %v, %v", res, err)
	}
	if n := f.resumes.Load(); n != 2 {
		t.Fatalf("%d resuming GETs, want 2", n)
	}
}

// warnings counts the warnings logged to it, with their "limit" attribute.
type warnings struct {
	mu     sync.Mutex
	limits []int64
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	limit := int64(-1)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "limit" {
			limit = a.Value.Int64()
		}
		return true
	})
	w.limits = append(w.limits, limit)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// TestStreamableStandaloneStream: after the handshake, the server's
// messages outside any request reach the go-sdk on the standalone GET
// stream; one over the limit there is dropped with a warning, and the
// stream goes on.
func TestStreamableStandaloneStream(t *testing.T) {
	for _, oversized := range []bool{false, true} {
		t.Run(fmt.Sprint("oversized=", oversized), func(t *testing.T) {
			f := newFixture(t, &mcp.StreamableHTTPOptions{})
			f.getFault.Store(oversized)
			changed := make(chan struct{}, 1)
			var warned warnings
			_, _ = connect(t, f, legacyVersion, &wire.Options{Limit: 64 << 10, Logger: slog.New(&warned)}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				}})
			if !oversized {
				// Outside any request: the server sends it on the standalone stream.
				f.server.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return &mcp.CallToolResult{}, nil
					})
			}
			<-changed
			warned.mu.Lock()
			defer warned.mu.Unlock()
			if oversized && (len(warned.limits) != 1 || warned.limits[0] != 64<<10) {
				t.Fatalf("warnings with limits %v, want one of 65536", warned.limits)
			}
			if !oversized && len(warned.limits) != 0 {
				t.Fatalf("warnings %v", warned.limits)
			}
		})
	}
}

// BenchmarkStreamableCall: a 1 KiB echo by Call against the go-sdk
// client's CallTool over its own transport, on the same server.
func BenchmarkStreamableCall(b *testing.B) {
	server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Text string }
			json.Unmarshal(req.Params.Arguments, &args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()
	payload := strings.Repeat("x", 1024)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)

	b.Run("wire", func(b *testing.B) {
		conn := wire.NewStreamable(srv.URL, nil, nil)
		cs, err := client.Connect(context.Background(), wire.Transport{C: conn}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		defer cs.Close()
		req := &wire.Request{Method: "tools/call", Name: "echo", Params: callParams(legacyVersion, "echo", map[string]any{"text": payload}, nil)}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := conn.Call(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-sdk", func(b *testing.B) {
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": payload}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), params); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// closeCounter counts the connections its dialer made that were closed.
type closeCounter struct{ closed atomic.Int32 }

func (cc *closeCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, cc: cc}, nil
}

type countedConn struct {
	net.Conn
	cc   *closeCounter
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.cc.closed.Add(1) })
	return c.Conn.Close()
}

// A Call's stream, read to its end after the answer, keeps its HTTP
// connection for the next request: the caller's return does not abort it
// (net/http closed the connection of a body still being drained, and the
// next call dialed anew: 24 connections for 300 calls).
func TestStreamableCallsKeepTheirConnections(t *testing.T) {
	f := newFixture(t, nil)
	cc := &closeCounter{}
	tr := &http.Transport{DialContext: cc.dial, MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	conn := wire.NewStreamable(f.url, &http.Client{Transport: tr}, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "wire-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), wire.Transport{C: conn}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		conn.Close()
	})
	req := &wire.Request{Method: "tools/call", Name: "echo", Params: callParams(legacyVersion, "echo", map[string]any{"text": "hi"}, nil)}
	for i := range 300 {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := conn.Call(ctx, req)
		cancel() // as a relayed call's request ends once it is answered
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := cc.closed.Load(); n != 0 {
		t.Fatalf("%d connections closed during 300 calls; want none", n)
	}
}
