package wire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// streamLeaks fails t if goroutines it did not find at its start are left
// once its cleanups have run.
func streamLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// pipeStream is a Stream over one end of a pipe; the test plays the
// server on the other, and the go-sdk's reader (drain) on the Stream.
func pipeStream(t *testing.T, limit int) (*Stream, *bufio.Reader, net.Conn) {
	t.Helper()
	client, server := net.Pipe()
	c := NewStream(client, client, &Options{Limit: limit})
	go func() {
		for {
			if _, err := c.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		c.Close()
		server.Close()
		<-c.Done()
	})
	return c, bufio.NewReader(server), server
}

func TestStreamCallReturnsTheResultAsSent(t *testing.T) {
	streamLeaks(t)
	c, r, server := pipeStream(t, 0)
	go func() {
		line, _ := r.ReadString('\n')
		if !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":"sb-1","method":"tools/call","params":{"name":"echo"}}`) {
			io.WriteString(server, "{\"jsonrpc\":\"2.0\",\"id\":\"sb-1\",\"error\":{\"code\":1,\"message\":\"bad request line\"}}\n")
			return
		}
		io.WriteString(server, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n")
		io.WriteString(server, "{\"id\":\"sb-1\",\"jsonrpc\":\"2.0\",\"result\":{ \"content\" : [] }}\n")
	}()
	res, err := c.Call(context.Background(), &Request{Method: "tools/call", Params: []byte("{\n\"name\": \"echo\"\n}")})
	if err != nil || string(res) != `{ "content" : [] }` {
		t.Fatalf("Call = %s, %v; want the result as the server wrote it", res, err)
	}
}

func TestStreamCallGetsTheServersError(t *testing.T) {
	streamLeaks(t)
	c, r, server := pipeStream(t, 0)
	go func() {
		r.ReadString('\n')
		io.WriteString(server, "{\"jsonrpc\":\"2.0\",\"id\":\"sb-1\",\"error\":{\"code\":-32602,\"message\":\"no such tool\"}}\n")
	}()
	_, err := c.Call(context.Background(), &Request{Method: "tools/call", Params: []byte(`{}`)})
	we, ok := AsError(err)
	if !ok || we.Kind != KindRPC || !we.Sent || we.RPC.Code != -32602 || err.Error() != "no such tool" {
		t.Fatalf("Call error %#v; want KindRPC -32602", err)
	}
}

// An answer is read as encoding/json reads it: a null error is no error.
func TestStreamCallReadsTheAnswerAsEncodingJSONDoes(t *testing.T) {
	streamLeaks(t)
	c, r, server := pipeStream(t, 0)
	go func() {
		r.ReadString('\n')
		io.WriteString(server, "{\"jsonrpc\":\"2.0\",\"id\":\"sb-1\",\"error\":null,\"result\":{\"content\":[]}}\n")
	}()
	res, err := c.Call(context.Background(), &Request{Method: "tools/call", Params: []byte(`{}`)})
	if err != nil || string(res) != `{"content":[]}` {
		t.Fatalf("Call = %s, %v; want the result beside a null error", res, err)
	}
}

// A malformed line ends the connection, naming the JSON error; a Call in
// flight fails as sent, one made after as not sent.
func TestStreamMalformedLineEndsTheConnection(t *testing.T) {
	streamLeaks(t)
	c, r, server := pipeStream(t, 0)
	go func() {
		r.ReadString('\n')
		io.WriteString(server, "{\"jsonrpc\":\"2.0\",\"id\":\"sb-1\",\"result\":{tools}}\n")
	}()
	_, err := c.Call(context.Background(), &Request{Method: "tools/list"})
	we, ok := AsError(err)
	if !ok || we.Kind != KindProtocol || !we.Sent || !strings.Contains(err.Error(), "invalid character") {
		t.Fatalf("in flight: %v; want KindProtocol, sent, naming the JSON error", err)
	}
	<-c.Done()
	_, err = c.Call(context.Background(), &Request{Method: "tools/list"})
	if we, ok := AsError(err); !ok || we.Sent || !strings.Contains(err.Error(), "invalid character") {
		t.Fatalf("after the end: %v; want not sent, naming the JSON error", err)
	}
}

// A message over the limit ends the connection with KindTooLarge, which
// the Call in flight gets.
func TestStreamOversizedMessage(t *testing.T) {
	streamLeaks(t)
	c, r, server := pipeStream(t, 100)
	go func() {
		r.ReadString('\n')
		io.WriteString(server, `{"jsonrpc":"2.0","id":"sb-1","result":{"text":"`+strings.Repeat("x", 200)+"\"}}\n")
	}()
	_, err := c.Call(context.Background(), &Request{Method: "tools/call"})
	if we, ok := AsError(err); !ok || we.Kind != KindTooLarge || we.Limit != 100 || !we.Sent {
		t.Fatalf("Call: %v; want KindTooLarge at 100, sent", err)
	}
	<-c.Done()
	if we, ok := AsError(c.Err()); !ok || we.Kind != KindTooLarge {
		t.Fatalf("Err = %v; want KindTooLarge", c.Err())
	}
}

// A Call whose ctx ends tells the server with notifications/cancelled.
func TestStreamCallCancelled(t *testing.T) {
	streamLeaks(t)
	c, r, _ := pipeStream(t, 0)
	ctx, cancel := context.WithCancelCause(context.Background())
	got := make(chan string, 1)
	go func() {
		r.ReadString('\n') // the request
		cancel(errors.New("the caller gave up"))
		line, _ := r.ReadString('\n')
		got <- line
	}()
	if _, err := c.Call(ctx, &Request{Method: "tools/call"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v; want context.Canceled", err)
	}
	want := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sb-1","reason":"the caller gave up"}}` + "\n"
	if line := <-got; line != want {
		t.Fatalf("the server read %q; want %q", line, want)
	}
}
