package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// The floor: the least a tools/call round trip can cost with the same wire
// format, written by hand with encoding/json and no SDK. A request and its
// answer are the same newline-delimited JSON-RPC messages an MCP client and
// server exchange for the echo tool; the server answers inline in its read
// loop, the client matches answers to callers by id.

// floorRequest is a tools/call request as the floor client sends it.
type floorRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      int64           `json:"id"`
	Method  string          `json:"method"`
	Params  floorCallParams `json:"params"`
}

type floorCallParams struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// floorResponse is the server's answer, decoded by the client.
type floorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      int64           `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *floorError     `json:"error,omitempty"`
}

type floorError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// floorResult is what the echo tool returns, shaped like an MCP
// CallToolResult (text content plus structured content).
type floorResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
}

// serveFloor answers tools/call requests for the echo tool read from r on
// w until r ends. It is the floor's whole server.
func serveFloor(r io.Reader, w io.Writer) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	enc := json.NewEncoder(w)
	for {
		var req struct {
			ID     int64 `json:"id"`
			Method string
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
		type text struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		resp := struct {
			JSONRPC string `json:"jsonrpc"`
			ID      int64  `json:"id"`
			Result  any    `json:"result"`
		}{JSONRPC: "2.0", ID: req.ID}
		if req.Method != "tools/call" || req.Params.Name != "echo" {
			resp.Result = map[string]any{"isError": true, "content": []text{{"text", "unknown tool"}}}
		} else {
			resp.Result = struct {
				Content           []text            `json:"content"`
				StructuredContent map[string]string `json:"structuredContent"`
			}{[]text{{"text", req.Params.Arguments.Text}}, map[string]string{"text": req.Params.Arguments.Text}}
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
	}
}

// floorClient is the floor's client: one writer shared under a lock, one
// reader goroutine that hands each answer to the caller waiting on its id.
type floorClient struct {
	wmu sync.Mutex
	enc *json.Encoder
	w   io.Closer

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan floorResponse
	err     error // why the reader stopped; set before done is closed
	done    chan struct{}
}

// newFloorClient starts the client's reader on r; w carries requests.
func newFloorClient(r io.Reader, w io.WriteCloser) *floorClient {
	c := &floorClient{enc: json.NewEncoder(w), w: w, pending: make(map[int64]chan floorResponse), done: make(chan struct{})}
	go c.read(r)
	return c
}

func (c *floorClient) read(r io.Reader) {
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var resp floorResponse
		if err := dec.Decode(&resp); err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			close(c.done)
			return
		}
		c.mu.Lock()
		ch := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
}

// echo calls the echo tool with args and checks that text came back.
func (c *floorClient) echo(ctx context.Context, args map[string]any, text string) error {
	id := c.nextID.Add(1)
	ch := make(chan floorResponse, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	c.wmu.Lock()
	err := c.enc.Encode(floorRequest{JSONRPC: "2.0", ID: id, Method: "tools/call", Params: floorCallParams{Name: "echo", Arguments: args}})
	c.wmu.Unlock()
	if err != nil {
		c.forget(id)
		return err
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return fmt.Errorf("floor: error %d: %s", resp.Error.Code, resp.Error.Message)
		}
		var res floorResult
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			return err
		}
		if res.IsError || len(res.Content) != 1 || res.Content[0].Text != text {
			return fmt.Errorf("floor: unexpected result %s", resp.Result)
		}
		return nil
	case <-c.done:
		return fmt.Errorf("floor: connection closed: %w", c.err)
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	}
}

func (c *floorClient) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// close closes the request stream; the server then ends, and with it the
// answer stream and the reader.
func (c *floorClient) close() error { return c.w.Close() }

// childRoleEnv names the role of a harness binary re-executed as a child.
const childRoleEnv = "SBBENCH_CHILD"

// floorServerRole is the role of the stdio floor server: the harness's own
// binary, re-executed, serving the floor on its stdin and stdout.
const floorServerRole = "floor-server"

// MaybeRunChild runs the child role this process was started for, if any,
// and exits; otherwise it returns at once. Every binary that runs the
// harness (the sbbench driver, the bench package's tests) calls it first
// thing in main or TestMain, since the stdio floor server is that binary
// re-executed.
func MaybeRunChild() {
	switch os.Getenv(childRoleEnv) {
	case "":
		return
	case floorServerRole:
		if err := serveFloor(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "floor server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childRoleEnv, os.Getenv(childRoleEnv))
		os.Exit(2)
	}
}
