package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// jsonServer is a Streamable HTTP server that answers every request with
// one application/json body (as stateless go-sdk, TypeScript and Python
// servers can), written by hand so that the big answers it streams cost
// this test process nothing: the memory a test measures is the client's.
// "big" answers a result of bigBytes bytes; with bigList, tools/list is
// as big.
type jsonServer struct {
	bigBytes      int
	bigList       bool
	contentLength bool // announce the size of the big answers
}

// rpcRequest is what a hand-written test server reads of a POSTed
// JSON-RPC message.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// readRequest reads the JSON-RPC request a POST carries. It answers
// anything else itself (405 to a GET: no stream of its own; 400 to what is
// not JSON; 202 to a notification) and then reports false.
func readRequest(w http.ResponseWriter, r *http.Request) (rpcRequest, bool) {
	var req rpcRequest
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return req, false
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return req, false
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return req, false
	}
	return req, true
}

func (js *jsonServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	answer := func(result string) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}
	switch {
	case req.Method == "initialize":
		answer(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"json","version":"1"}}`)
	case req.Method == "tools/list" && js.bigList:
		js.stream(w, req.ID, `{"tools":[{"name":"big","inputSchema":{"type":"object"},"description":"`, `"}]}`)
	case req.Method == "tools/list":
		answer(`{"tools":[{"name":"big","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}]}`)
	case req.Method == "tools/call" && req.Params.Name == "big":
		js.stream(w, req.ID, `{"content":[{"type":"text","text":"`, `"}]}`)
	case req.Method == "tools/call":
		answer(`{"content":[{"type":"text","text":"small"}]}`)
	default:
		answer(`{}`)
	}
}

// stream writes a result of bigBytes 'x' between prefix and suffix, from
// one reused chunk, and stops when the client stops reading.
func (js *jsonServer) stream(w http.ResponseWriter, id json.RawMessage, prefix, suffix string) {
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s`, id, prefix)
	tail := suffix + "}"
	if js.contentLength {
		w.Header().Set("Content-Length", strconv.Itoa(len(head)+js.bigBytes+len(tail)))
	}
	io.WriteString(w, head)
	chunk := []byte(strings.Repeat("x", 32<<10))
	for left := js.bigBytes; left > 0; left -= len(chunk) {
		if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
			return
		}
	}
	io.WriteString(w, tail)
}

// allocatedDuring returns how many bytes of heap this process allocated
// while fn ran: a bound on how much its heap could have grown by, whatever
// the garbage collector did meanwhile.
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestOversizedHTTPAnswerIsNeverHeldWhole: a remote server that answers a
// call with a result far over the cap (64 MiB against 4 MiB) must not make
// Switchboard hold it: before, a Streamable HTTP JSON answer was read
// whole whatever its size (a 300 MB result took the daemon from 27 MB to
// 2.26 GB), and an event stream buffered 16 MiB and then killed the
// session. Now every answer is read into at most the cap plus 1 MiB: the
// call fails with ErrResultTooLarge naming the limit, this process
// allocates less than 4x the cap during the call, and the same session,
// never dropped, serves the next call.
func TestOversizedHTTPAnswerIsNeverHeldWhole(t *testing.T) {
	const (
		maxResult = 4 << 20
		big       = 64 << 20
	)
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) *sb.ServerConfig
	}{
		{"streamable-http json", func(t *testing.T) *sb.ServerConfig {
			ts := serve(t, (&jsonServer{bigBytes: big}).ServeHTTP)
			return &sb.ServerConfig{Name: "big", Transport: sb.TransportStreamableHTTP, URL: ts.URL, ProtocolVersion: "2025-06-18"}
		}},
		{"streamable-http json with Content-Length", func(t *testing.T) *sb.ServerConfig {
			ts := serve(t, (&jsonServer{bigBytes: big, contentLength: true}).ServeHTTP)
			return &sb.ServerConfig{Name: "big", Transport: sb.TransportStreamableHTTP, URL: ts.URL, ProtocolVersion: "2025-06-18"}
		}},
		{"streamable-http event stream", func(t *testing.T) *sb.ServerConfig {
			return &sb.ServerConfig{Name: "big", Transport: sb.TransportStreamableHTTP, URL: testserver.StartHTTP(t).URL}
		}},
		{"legacy sse", func(t *testing.T) *sb.ServerConfig {
			return &sb.ServerConfig{Name: "big", Transport: sb.TransportSSE, URL: testserver.StartHTTP(t).BaseURL + "/sse"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, events := badInputSession(t, tc.cfg(t), upstream.Options{MaxResultBytes: maxResult, HealthInterval: -1})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := s.Info()
			var err error
			allocated := allocatedDuring(func() {
				_, err = s.CallTool(context.Background(), "big", map[string]any{"bytes": big}, sb.InvokeOptions{Timeout: 60 * time.Second})
			})
			t.Logf("a %d MiB result against a %d MiB cap: %.1f MiB allocated during the call; %v", big>>20, maxResult>>20, float64(allocated)/(1<<20), err)
			if !errors.Is(err, upstream.ErrResultTooLarge) || sb.CodeOf(err) != sb.CodeResultTooLarge ||
				!strings.Contains(err.Error(), strconv.Itoa(maxResult)+"-byte limit") {
				t.Errorf("call: %T %v; want ErrResultTooLarge naming the %d-byte limit", err, err, maxResult)
			}
			if allocated >= 4*maxResult {
				t.Errorf("%d bytes allocated during the call; want less than 4x the cap (%d)", allocated, 4*maxResult)
			}
			res, err := s.CallTool(context.Background(), "echo", map[string]any{"text": "after"}, sb.InvokeOptions{Timeout: 10 * time.Second})
			if err != nil || res == nil {
				t.Fatalf("the next call: %v", err)
			}
			if after := s.Info(); after.Status != sb.StatusConnected || after.Reconnects != before.Reconnects {
				t.Errorf("the session was disturbed: %s with %d reconnects -> %s with %d", before.Status, before.Reconnects, after.Status, after.Reconnects)
			}
			for _, e := range events() {
				if e.Reason == sb.ReasonDropped || e.Reason == sb.ReasonAttemptFailed {
					t.Errorf("event %+v after an oversized result", e)
				}
			}
		})
	}
}

// TestOversizedListingFailsNamingTheLimit: a tools/list answer over the
// cap is not read whole either; the attempt fails in phase discover with
// a message that names the limit.
func TestOversizedListingFailsNamingTheLimit(t *testing.T) {
	const maxResult = 1 << 20
	ts := serve(t, (&jsonServer{bigBytes: 32 << 20, bigList: true}).ServeHTTP)
	s, _ := badInputSession(t, &sb.ServerConfig{Name: "biglist", Transport: sb.TransportStreamableHTTP, URL: ts.URL,
		ProtocolVersion: "2025-06-18", Retry: &sb.RetryConfig{MaxAttempts: 1}}, upstream.Options{MaxResultBytes: maxResult})
	var err error
	allocated := allocatedDuring(func() { err = s.Start(context.Background()) })
	info := s.Info()
	t.Logf("a 32 MiB listing against a 1 MiB cap: %.1f MiB allocated; %v", float64(allocated)/(1<<20), err)
	if info.Error == nil || info.Error.Phase != sb.PhaseDiscover || !strings.Contains(info.Error.Message, "-byte limit") {
		t.Fatalf("Start: %v; error %+v; want a failure in phase discover naming the limit", err, info.Error)
	}
	if allocated >= 8*maxResult {
		t.Errorf("%d bytes allocated while connecting; want less than 8x the cap", allocated)
	}
}

// TestServerInfoIsCutToASaneLength: the server's name and version are
// kept for as long as the session lives and shown in every listing of the
// servers; a server that names itself with a megabyte would make every
// listing a megabyte. They are cut, with a mark, as is the instructions
// text the session keeps.
func TestServerInfoIsCutToASaneLength(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: strings.Repeat("n", 1<<20), Version: strings.Repeat("v", 100<<10)},
		&mcp.ServerOptions{Instructions: strings.Repeat("i", 1<<20)})
	mcp.AddTool(srv, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ts := serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil).ServeHTTP)
	// Last, after the session's own cleanup: the go-sdk handler keeps a
	// session whose client's goodbye it did not read (the answers here are
	// cut) until it is closed.
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	s, _ := badInputSession(t, &sb.ServerConfig{Name: "vain", Transport: sb.TransportStreamableHTTP, URL: ts.URL}, upstream.Options{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	if info.ServerInfo == nil || len(info.ServerInfo.Name) > 256+len("…") || !strings.HasSuffix(info.ServerInfo.Name, "…") ||
		len(info.ServerInfo.Version) > 64+len("…") || !strings.HasSuffix(info.ServerInfo.Version, "…") {
		t.Fatalf("server info: %.300v; want the name cut to 256 bytes and the version to 64, each with a mark", info.ServerInfo)
	}
	cs, err := s.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cs.InitializeResult().Instructions); n > 16<<10+len("…") {
		t.Errorf("instructions of %d bytes kept; want at most 16 KiB", n)
	}
}
