package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// eventServer answers an event-stream GET with an early hint, then one
// event, and holds the stream open until the client goes away, which it
// reports on gone.
func eventServer(t *testing.T) (url string, gone <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		ch <- struct{}{}
	}))
	t.Cleanup(ts.Close)
	return ts.URL, ch
}

func streamGET(t *testing.T, ctx context.Context, url string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	tr := NewPolicy(nil).transport
	if !tr.ownsStream(req) {
		t.Fatal("an event-stream GET to a plain http URL is not carried on a connection of its own")
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestStreamConnection: an event stream on a connection of its own reads
// like net/http's: informational answers skipped, the chunked body
// decoded; closing the body, or the end of the request's context, closes
// the connection (the server sees the client go), and a read in progress
// then fails with the context's error.
func TestStreamConnection(t *testing.T) {
	t.Run("close", func(t *testing.T) {
		url, gone := eventServer(t)
		resp := streamGET(t, context.Background(), url)
		defer resp.Body.Close() // if the test fails first
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("answer %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		buf := make([]byte, 64)
		n, err := io.ReadAtLeast(resp.Body, buf, len("data: one\n\n"))
		if err != nil || string(buf[:n]) != "data: one\n\n" {
			t.Fatalf("read %q, %v; want the event", buf[:n], err)
		}
		resp.Body.Close()
		<-gone
	})
	t.Run("context", func(t *testing.T) {
		url, gone := eventServer(t)
		ctx, cancel := context.WithCancel(context.Background())
		resp := streamGET(t, ctx, url)
		defer resp.Body.Close()
		read := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, resp.Body)
			read <- err
		}()
		cancel()
		if err := <-read; !errors.Is(err, context.Canceled) {
			t.Errorf("read after the context ended: %v, want %v", err, context.Canceled)
		}
		<-gone
	})
}

// TestStreamConnectionObeysTheAddressPolicy: a stream's connection is
// dialed like every other: a blocked address is refused before connect(2).
func TestStreamConnectionObeysTheAddressPolicy(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "http://169.254.169.254/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	_, err = NewPolicy(nil).transport.stream(req)
	var be *BlockedAddressError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "169.254.169.254") {
		t.Fatalf("stream to a metadata address: %v, want a *BlockedAddressError", err)
	}
}

// TestStreamsOnlyOfPlainHTTPGetOwnConnections: everything else goes
// through net/http: other methods, other answers, TLS.
func TestStreamsOnlyOfPlainHTTPGetOwnConnections(t *testing.T) {
	for _, tc := range []struct{ method, url, accept string }{
		{http.MethodPost, "http://127.0.0.1/mcp", "text/event-stream"},
		{http.MethodGet, "http://127.0.0.1/mcp", "application/json"},
		{http.MethodGet, "https://127.0.0.1/mcp", "text/event-stream"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", tc.accept)
		if NewPolicy(nil).transport.ownsStream(req) {
			t.Errorf("%s %s (Accept: %s) would get a connection of its own", tc.method, tc.url, tc.accept)
		}
	}
}

// TestStreamHeadersAreBounded: a server that sends headers without end
// fails the request once they pass maxHeaderBytes, as net/http would,
// rather than filling memory.
func TestStreamHeadersAreBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = http.ReadRequest(bufio.NewReader(conn))
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Long: ")
		line := strings.Repeat("a", 64<<10)
		for range maxHeaderBytes/len(line) + 2 {
			if _, err := io.WriteString(conn, line); err != nil {
				return // the client gave up
			}
		}
	}()
	req, err := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := NewPolicy(nil).transport.stream(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("headers over the bound were accepted")
	}
	if !strings.Contains(err.Error(), "exceeded") {
		t.Errorf("error %q does not say the headers were too long", err)
	}
	<-served
}
