package testserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxPeekBytes bounds how much of a POST body the fault layer buffers. It is
// well above the SDK's own limit, so oversized bodies still get the SDK's 413.
const maxPeekBytes = 64 << 20

// shutdownGrace bounds how long shutdown waits for HTTP connections to drain.
const shutdownGrace = 2 * time.Second

// httpFrontend serves the HTTP transports and puts the HTTP faults in front
// of them:
//
//	/mcp             Streamable HTTP (or legacy SSE with -sse-only)
//	/sse             legacy HTTP+SSE (2024-11-05)
//	/admin/drop      POST: forget every session now
//	/admin/blackhole POST: stop answering /mcp and /sse
//	/admin/heal      POST: undo /admin/blackhole
type httpFrontend struct {
	s *server

	// streamable is swapped for a fresh handler to forget every session at
	// once: the new handler knows none of the old session ids, so requests
	// carrying them get 404, which is how a client learns its session ended.
	streamable atomic.Pointer[mcp.StreamableHTTPHandler]
	sse        *mcp.SSEHandler

	blackholed atomic.Bool
	dropped    atomic.Bool   // -drop-after has fired (it fires once)
	stopping   chan struct{} // closed at shutdown to release hanging requests
}

func (s *server) runHTTP() (code int, reason string) {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		s.logf("listen: %v", err)
		return 1, "listen failed"
	}
	f := &httpFrontend{
		s:        s,
		sse:      mcp.NewSSEHandler(s.getServer, &mcp.SSEOptions{MaxRequestBodyBytes: s.opts.MaxRequestBody}),
		stopping: make(chan struct{}),
	}
	f.streamable.Store(f.newStreamable())
	srv := &http.Server{
		Handler:           f.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(prefixWriter{"testserver: http: ", s.stderr}, "", 0),
	}
	srv.SetKeepAlivesEnabled(!s.opts.NoKeepAlive)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	// The announce line is how a parent learns the port picked for :0.
	fmt.Fprintf(s.stdout, "LISTEN http://%s\n", ln.Addr())
	if fl, ok := s.stdout.(interface{ Flush() error }); ok {
		_ = fl.Flush()
	}

	select {
	case <-s.ctx.Done():
	case err := <-served:
		s.logf("serve: %v", err)
		return 1, "serve failed"
	}
	close(f.stopping)
	closeSessions(slices.Collect(f.s.mcp.Sessions())) // ends the hanging SSE GETs, so Shutdown can finish
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	return 0, "signal"
}

func (s *server) getServer(*http.Request) *mcp.Server { return s.mcp }

func (f *httpFrontend) newStreamable() *mcp.StreamableHTTPHandler {
	return mcp.NewStreamableHTTPHandler(f.s.getServer, &mcp.StreamableHTTPOptions{Logger: f.s.sdkLogger(), JSONResponse: f.s.opts.JSONResponse,
		Stateless: f.s.opts.Stateless, MaxRequestBodyBytes: f.s.opts.MaxRequestBody})
}

func (f *httpFrontend) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", f.faults(http.HandlerFunc(f.serveMCP)))
	mux.Handle("/sse", f.faults(f.sse))
	mux.HandleFunc("POST /admin/drop", func(w http.ResponseWriter, _ *http.Request) {
		f.drop("admin")
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /admin/blackhole", func(w http.ResponseWriter, _ *http.Request) {
		f.blackholed.Store(true)
		f.s.logf("blackhole on")
		f.s.events.record(Event{Event: "admin", Reason: "blackhole"})
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /admin/heal", func(w http.ResponseWriter, _ *http.Request) {
		f.blackholed.Store(false)
		f.s.logf("blackhole off")
		f.s.events.record(Event{Event: "admin", Reason: "heal"})
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// serveMCP dispatches /mcp to the current Streamable HTTP handler, or with
// -sse-only behaves like a server that only knows the 2024-11-05 transport
// mounted at /mcp: GET opens the SSE stream, whose endpoint event points at
// /mcp?sessionid=..., and a POST without sessionid (a Streamable HTTP client's
// first request) is 404, the signal for a client to fall back to SSE.
func (f *httpFrontend) serveMCP(w http.ResponseWriter, r *http.Request) {
	if !f.s.opts.SSEOnly {
		f.streamable.Load().ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost && r.URL.Query().Get("sessionid") == "" {
		http.NotFound(w, r)
		return
	}
	f.sse.ServeHTTP(w, r)
}

// faults applies the HTTP-level faults, in this order: record what arrived,
// -status, blackhole, swallowed messages (-hang-initialize,
// -ignore-unknown), -malformed, and -drop-after before the real handler.
func (f *httpFrontend) faults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get("Mcp-Session-Id")
		if session == "" {
			session = r.URL.Query().Get("sessionid") // legacy SSE
		}
		var m *wireMessage
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxPeekBytes))
			if err != nil {
				http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			m = parseWire(body)
		}
		f.s.recordWire(m, session)

		if code := f.s.opts.Status; code != 0 {
			writeStatus(w, code)
			return
		}
		if f.blackholed.Load() {
			f.s.recordDropped(m, session, "blackhole")
			f.hang(r)
			return
		}
		if reason := f.s.swallowReason(m); reason != "" {
			f.s.recordDropped(m, session, reason)
			if m.isRequest() {
				f.hang(r)
				return
			}
			w.WriteHeader(http.StatusAccepted) // a notification needs no answer
			return
		}
		if f.s.opts.Malformed && m != nil && m.Method == "tools/list" {
			f.s.logf("answering tools/list with a malformed body")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, malformedLine)
			return
		}

		f.maybeDrop()
		next.ServeHTTP(w, r)
	})
}

// writeStatus answers with the -status code and a short body, plus the
// headers a client would look at for that code.
func writeStatus(w http.ResponseWriter, code int) {
	switch code {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", "Bearer")
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	http.Error(w, "testserver: status "+strconv.Itoa(code)+" requested", code)
}

// hang never answers r: it returns when the client gives up, and aborts the
// connection without a response if the server shuts down first.
func (f *httpFrontend) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-f.stopping:
		panic(http.ErrAbortHandler)
	}
}

// maybeDrop fires -drop-after on the first request that arrives after N
// tools/call requests have completed. Dropping lazily, rather than right
// after the Nth call, matters: closing the session also closes its SSE
// streams, and a client that sees its stream break while the Nth answer is
// still in its buffers may fail that call too. This way a client that waits
// for each answer gets exactly N, and its next request finds the session gone.
func (f *httpFrontend) maybeDrop() {
	n := f.s.opts.DropAfter
	if n > 0 && f.s.completed.Load() >= int64(n) && f.dropped.CompareAndSwap(false, true) {
		f.drop("drop-after")
	}
}

// drop forgets every session: Streamable HTTP sessions by swapping in a
// fresh handler, and all sessions (including legacy SSE streams) by closing
// them. Only the sessions that exist before the swap are closed: a client
// that finds its session gone may connect again at once, on the fresh
// handler, and that session must live.
func (f *httpFrontend) drop(reason string) {
	old := slices.Collect(f.s.mcp.Sessions())
	f.streamable.Store(f.newStreamable())
	f.s.logf("dropping all sessions (%s)", reason)
	f.s.events.record(Event{Event: "drop", Reason: reason})
	closeSessions(old)
}

// closeSessions closes sessions in the background: ServerSession.Close
// waits for in-flight handlers, and a request must never wait for another
// session's slow tool.
func closeSessions(sessions []*mcp.ServerSession) {
	for _, ss := range sessions {
		go func() { _ = ss.Close() }()
	}
}
