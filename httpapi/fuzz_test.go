package httpapi_test

// Bad input: the API handler fuzzed with arbitrary request bodies, the body
// size limits, and an oversized tool result through POST /api/v1/call.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/registrytest"
	"github.com/switchboard-mcp/switchboard/internal/sse"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// fuzzMissingCommand is a stdio command that exists nowhere: sessions of it
// fail at once in phase spawn.
const fuzzMissingCommand = "switchboard-fuzz-no-such-command"

// fuzzSecret is the env value of the stored server "x"; no response may
// ever contain it.
const fuzzSecret = "fuzz-secret-value-of-x"

// fuzzAPI is the real API handler over a real registry and a temporary
// SQLite store, holding one disabled server "x".
type fuzzAPI struct {
	h    http.Handler
	reg  *registry.Registry
	orig *sb.ServerConfig // x as created, restored after every accepted update
}

func newFuzzAPI(tb testing.TB) *fuzzAPI {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := registrytest.New(tb, &registry.Options{Logger: log})
	off := false
	orig := &sb.ServerConfig{Name: "x", Enabled: &off, Transport: sb.TransportStdio, Command: fuzzMissingCommand,
		Env: map[string]string{"K": fuzzSecret}}
	if _, err := reg.Create(context.Background(), orig.Clone()); err != nil {
		tb.Fatal(err)
	}
	m := metrics.New(reg)
	ex := executor.New(m.Instrument(executor.NewMCP(reg)))
	h := httpapi.New(httpapi.Options{Registry: reg, Executor: ex, Metrics: m, Logger: log})
	return &fuzzAPI{h: h, reg: reg, orig: orig}
}

// serve runs one request through the handler.
func (fa *fuzzAPI) serve(method, path string, body []byte, hdr ...string) *httptest.ResponseRecorder {
	// A loopback Host: httptest's default, example.com, is refused by the
	// Host check before the body is read.
	req := httptest.NewRequest(method, "http://localhost"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header[hdr[i]] = []string{hdr[i+1]} // as is: the fuzzer may send anything
	}
	rec := httptest.NewRecorder()
	fa.h.ServeHTTP(rec, req)
	return rec
}

// startsSomething reports whether sending body to route ("create",
// "update" of x, or "test") could make the API start a process or open a
// connection beyond 127.0.0.1:1. It decodes more leniently than the API
// (first JSON value, unknown fields allowed), so anything the API accepts
// is judged here, and it errs on the side of "yes": only stdio commands
// that resolve nowhere and remote URLs to the closed port 127.0.0.1:1 are
// considered harmless. The fuzz target sends such bodies only to routes
// where they cannot start anything.
func (fa *fuzzAPI) startsSomething(route string, body []byte) bool {
	var view struct {
		sb.ServerConfig
		Version   int64           `json:"version"`
		CreatedAt json.RawMessage `json:"created_at"`
		UpdatedAt json.RawMessage `json:"updated_at"`
		Runtime   json.RawMessage `json:"runtime"`
	}
	if json.NewDecoder(bytes.NewReader(body)).Decode(&view) != nil {
		return false
	}
	cfg := &view.ServerConfig
	var prev *sb.ServerConfig
	switch route {
	case "create":
	case "update":
		if cfg.Name == "" {
			cfg.Name = "x"
		}
		if cfg.Name != "x" {
			return false
		}
		prev = fa.orig
	case "test":
		if cfg.Name == "" {
			cfg.Name = "draft"
		}
		if cfg.Name == "x" {
			prev = fa.orig
		}
		cfg.Enabled = nil // a test always runs
	}
	cfg, err := cfg.Unmask(prev)
	if err != nil || cfg.Validate() != nil || !cfg.IsEnabled() {
		return false
	}
	if !cfg.IsStdio() {
		u, err := url.Parse(cfg.URL)
		return err != nil || u.Host != "127.0.0.1:1"
	}
	if strings.Contains(cfg.Command, "/") {
		return true // a path, perhaps relative to cwd
	}
	for k := range cfg.Env {
		if strings.EqualFold(k, "PATH") {
			return true
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, cfg.Command)); err == nil {
			return true
		}
	}
	return false
}

// FuzzAPIRequestBodies sends arbitrary bytes as the body of every route
// that decodes one (create, update, draft test, call, elicitation answer)
// to the real handler. For any body the handler must not panic, must
// answer JSON (or, for a streamed call it accepted, server-sent events
// whose data are JSON), must never answer 5xx for bad input, and must never
// show the stored secret. The only 5xx allowed is 503 for a call that names
// the disabled server x.
//
// Nothing long runs: configs that could start a process or a connection
// (see startsSomething) are not sent to the routes that would start them.
func FuzzAPIRequestBodies(f *testing.F) {
	for _, s := range []struct{ body, ifMatch string }{
		{`{"name":"fz","transport":"stdio","command":"` + fuzzMissingCommand + `","enabled":false}`, ""},
		{`{"name":"fz","transport":"stdio","command":"` + fuzzMissingCommand + `","env":{"A":"b"},"startup_timeout_ms":50}`, ""},
		{`{"name":"x","transport":"stdio","command":"` + fuzzMissingCommand + `","env":{"K":"***"},"enabled":false,"version":1}`, `"1"`},
		{`{"transport":"stdio","command":"` + fuzzMissingCommand + `","env":{"K":"***"}}`, "7"},
		{`{"name":"fz","transport":"remote","url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"***"}}`, ""},
		{`{"name":"x","transport":"stdio","command":"x","enabled":false,"version":1,"created_at":"2024-01-01T00:00:00Z","updated_at":null,"runtime":{"status":"connected"}}`, ""},
		{`{"tool":"x/echo","arguments":{"text":"hi"},"options":{"timeout_ms":5,"reset_timeout_on_progress":true}}`, ""},
		{`{"tool":"x/echo","options":{"timeout_ms":-1}}`, ""},
		{`{"tool":"nope/echo","arguments":[1,2]}`, ""},
		{`{"tool":" x/echo"}`, ""},
		{`{"action":"accept","content":{"a":1}}`, ""},
		{`{"name":`, "-1"},
		{`{"name":"a"} {"name":"b"}`, "abc"},
		{`{"comand":"x"}`, ""},
		{`{"name":1,"retry":{"delays_ms":["x"]}}`, ""},
		{`[]`, ""},
		{`null`, ""},
		{``, "99999999999999999999"},
	} {
		f.Add([]byte(s.body), s.ifMatch)
	}
	fa := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, body []byte, ifMatch string) {
		check := func(route string, rec *httptest.ResponseRecorder, allow503 bool) {
			t.Helper()
			res := rec.Result()
			raw := rec.Body.Bytes()
			if bytes.Contains(raw, []byte(fuzzSecret)) {
				t.Fatalf("%s: the response shows the stored secret: %s", route, raw)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("%s: %d with content type %q: %q", route, res.StatusCode, ct, raw)
			}
			if !json.Valid(raw) {
				t.Fatalf("%s: %d with invalid JSON: %q", route, res.StatusCode, raw)
			}
			if res.StatusCode >= 500 {
				var eb api.ErrorBody
				json.Unmarshal(raw, &eb)
				if !(allow503 && res.StatusCode == 503 && (eb.Error.Code == "unavailable" || eb.Error.Code == "disabled")) {
					t.Fatalf("%s: %d for body %q: %s", route, res.StatusCode, body, raw)
				}
			}
			if res.StatusCode >= 400 {
				var eb api.ErrorBody
				if err := json.Unmarshal(raw, &eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
					t.Fatalf("%s: %d is not an error body: %s", route, res.StatusCode, raw)
				}
			}
		}

		if !fa.startsSomething("create", body) {
			rec := fa.serve("POST", "/api/v1/servers", body)
			check("create", rec, false)
			if rec.Code == http.StatusCreated {
				var v sb.ServerView
				if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.Name == "" || v.Version != 1 {
					t.Fatalf("create answered 201 with %s", rec.Body)
				}
				for k, val := range v.Env {
					if val != sb.SecretMask {
						t.Fatalf("create shows env %s = %q", k, val)
					}
				}
				// Keep the registry as it was, so that every input sees the same state.
				if d := fa.serve("DELETE", "/api/v1/servers/"+url.PathEscape(v.Name), nil); d.Code != http.StatusNoContent {
					t.Fatalf("deleting %q: %d %s", v.Name, d.Code, d.Body)
				}
			} else if rec.Code != 400 && rec.Code != 409 {
				t.Fatalf("create answered %d: %s", rec.Code, rec.Body)
			}
		}

		if !fa.startsSomething("update", body) {
			rec := fa.serve("PUT", "/api/v1/servers/x", body, "If-Match", ifMatch)
			check("update", rec, false)
			if rec.Code == http.StatusOK {
				if _, err := fa.reg.Update(context.Background(), "x", fa.orig.Clone(), 0); err != nil {
					t.Fatalf("restoring x: %v", err)
				}
			} else if rec.Code != 400 && rec.Code != 409 {
				t.Fatalf("update answered %d: %s", rec.Code, rec.Body)
			}
		}

		if !fa.startsSomething("test", body) {
			rec := fa.serve("POST", "/api/v1/test", body)
			check("test", rec, false)
			if rec.Code == http.StatusOK {
				var tr api.TestResult
				if err := json.Unmarshal(rec.Body.Bytes(), &tr); err != nil || tr.Runtime.Status == sb.StatusConnected {
					t.Fatalf("a draft that can start nothing tested as %s", rec.Body)
				}
			}
		}

		check("call", fa.serve("POST", "/api/v1/call", body), true)

		// The same call, streamed: either a JSON error before the stream,
		// or a stream of JSON events ending in exactly one result or error.
		rec := fa.serve("POST", "/api/v1/call", body, "Accept", "text/event-stream")
		if rec.Header().Get("Content-Type") == "text/event-stream" {
			checkEventStream(t, rec)
		} else {
			check("streamed call", rec, true)
		}

		check("elicitation", fa.serve("POST", "/api/v1/elicitations/nope", body), false)
	})
}

// checkEventStream checks a streamed call's answer: status 200, every
// event's data JSON, and exactly one final event, last.
func checkEventStream(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("event stream with status %d", rec.Code)
	}
	if bytes.Contains(rec.Body.Bytes(), []byte(fuzzSecret)) {
		t.Fatalf("the stream shows the stored secret: %q", rec.Body)
	}
	var names []string
	events := sse.NewReader(bytes.NewReader(rec.Body.Bytes()))
	for {
		ev, err := events.Next()
		if err != nil {
			break
		}
		if !json.Valid(ev.Data) {
			t.Fatalf("event data is not JSON: %q", ev.Data)
		}
		names = append(names, ev.Name)
	}
	if len(names) == 0 || (names[len(names)-1] != api.EventResult && names[len(names)-1] != api.EventError) {
		t.Fatalf("events %v: no final result or error", names)
	}
	for _, n := range names[:len(names)-1] {
		if n == api.EventResult || n == api.EventError {
			t.Fatalf("events %v: more than one final event", names)
		}
	}
}

// TestRequestBodyLimits checks that a body over the limit is refused with
// 413 and the JSON error, on every route that reads one: 1 MiB for the
// config routes and elicitation answers, 16 MiB for calls. A body of
// exactly the limit is read whole.
func TestRequestBodyLimits(t *testing.T) {
	e := newSecEnv(t, secOptions{})
	if st, _, body := e.do("POST", "/api/v1/servers", map[string]any{"name": "x", "transport": "stdio", "command": fuzzMissingCommand, "enabled": false}); st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	// padded returns a JSON object of exactly n bytes: prefix, a string of
	// 'x' and suffix.
	padded := func(prefix, suffix string, n int) string {
		return prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix
	}
	const cfgPrefix = `{"name":"x","transport":"stdio","enabled":false,"command":"`
	for _, tc := range []struct {
		method, path string
		limit        int
		prefix       string
		suffix       string
		within       int // status of a body of exactly limit bytes
	}{
		{"POST", "/api/v1/servers", httpapi.DefaultMaxConfigBytes, strings.Replace(cfgPrefix, `"x"`, `"big"`, 1), `"}`, 201},
		{"PUT", "/api/v1/servers/x", httpapi.DefaultMaxConfigBytes, cfgPrefix, `"}`, 200},
		{"POST", "/api/v1/test", httpapi.DefaultMaxConfigBytes, cfgPrefix, `"}`, 200},
		{"POST", "/api/v1/elicitations/none", httpapi.DefaultMaxConfigBytes, `{"action":"accept","content":{"a":"`, `"}}`, 404},
		{"POST", "/api/v1/call", httpapi.DefaultMaxCallBytes, `{"tool":"nope/echo","arguments":{"a":"`, `"}}`, 404},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			if tc.limit != 1<<20 && tc.limit != 16<<20 {
				t.Fatalf("limit %d, want 1 MiB or 16 MiB", tc.limit)
			}
			if st, _, body := e.do(tc.method, tc.path, padded(tc.prefix, tc.suffix, tc.limit)); st != tc.within {
				t.Errorf("a body of exactly %d bytes: %d %.300s, want %d", tc.limit, st, body, tc.within)
			}
			for _, over := range []string{
				padded(tc.prefix, tc.suffix, tc.limit+1),  // one byte over: the JSON value itself is too large
				`{"` + strings.Repeat("x", tc.limit) + ``, // too large and unfinished
			} {
				st, hdr, body := e.do(tc.method, tc.path, over)
				var eb api.ErrorBody
				json.Unmarshal([]byte(body), &eb)
				if st != http.StatusRequestEntityTooLarge || eb.Error.Code != "too_large" || !strings.Contains(eb.Error.Message, fmt.Sprint(tc.limit)) ||
					hdr.Get("Content-Type") != "application/json" {
					t.Errorf("a body of %d bytes: %d %q %.300s, want 413 too_large naming the %d-byte limit", len(over), st, hdr.Get("Content-Type"), body, tc.limit)
				}
			}
		})
	}
	// The API still works, and x is as the in-limit update left it.
	if st, _, body := e.do("GET", "/api/v1/servers/x", nil); st != 200 || !strings.Contains(body, `"version":2`) {
		t.Fatalf("after the limits: %d %.300s", st, body)
	}
}

// TestBodyLimitCountsTrailingWhitespace: a small JSON value followed by
// more than the limit in whitespace (or by whitespace and then junk) is a
// body over the limit too, and must be refused like any other.
func TestBodyLimitCountsTrailingWhitespace(t *testing.T) {
	e := newSecEnv(t, secOptions{})
	small := `{"name":"ws","transport":"stdio","command":"` + fuzzMissingCommand + `","enabled":false}`
	for _, body := range []string{
		small + strings.Repeat(" ", httpapi.DefaultMaxConfigBytes),
		small + strings.Repeat(" ", httpapi.DefaultMaxConfigBytes) + `{"trailing":"junk"}`,
	} {
		st, _, resp := e.do("POST", "/api/v1/servers", body)
		if st != http.StatusRequestEntityTooLarge {
			t.Errorf("a %d-byte body (a %d-byte config and whitespace): %d %.200s, want 413", len(body), len(small), st, resp)
		}
		e.do("DELETE", "/api/v1/servers/ws", nil)
	}
}

// TestOversizedResultThroughTheAPI: a tool result over
// upstream.Options.MaxResultBytes comes back from POST /api/v1/call as 502
// result_too_large naming the limit, streamed or not, and the server stays
// connected and usable.
func TestOversizedResultThroughTheAPI(t *testing.T) {
	e := newSecEnv(t, secOptions{session: upstream.Options{MaxResultBytes: 1000}})
	e.mustCreate(secStdio(t, "big"))
	before := e.waitStatus("big", sb.StatusConnected)

	st, _, body := e.do("POST", "/api/v1/call", map[string]any{"tool": "big/big", "arguments": map[string]any{"bytes": 900}})
	if st != 200 || !strings.Contains(body, strings.Repeat("x", 900)) {
		t.Fatalf("900 bytes under a 1000-byte cap: %d %.200s", st, body)
	}
	var eb api.ErrorBody
	st, _, body = e.do("POST", "/api/v1/call", map[string]any{"tool": "big/big", "arguments": map[string]any{"bytes": 50000}})
	json.Unmarshal([]byte(body), &eb)
	if st != http.StatusBadGateway || eb.Error.Code != "result_too_large" || !strings.Contains(eb.Error.Message, "1000-byte limit") || eb.Error.Phase != sb.PhaseToolCall {
		t.Fatalf("oversized result: %d %.300s", st, body)
	}
	if strings.Contains(body, "xxxxxxxxxx") {
		t.Errorf("the error carries the oversized payload: %.300s", body)
	}
	events := e.streamCall(`{"tool":"big/big","arguments":{"bytes":50000}}`)
	if len(events) != 1 || events[0].name != "error" || !strings.Contains(events[0].data, `"code":"result_too_large"`) {
		t.Fatalf("streamed oversized result: %+v", events)
	}
	if st, _, body := e.do("POST", "/api/v1/call", map[string]any{"tool": "big/echo", "arguments": map[string]any{"text": "still here"}}); st != 200 || !strings.Contains(body, "still here") {
		t.Fatalf("the server is not usable after an oversized result: %d %s", st, body)
	}
	after := e.waitStatus("big", sb.StatusConnected)
	if after.Runtime.PID != before.Runtime.PID || after.Runtime.Reconnects != 0 {
		t.Fatalf("an oversized result cost a reconnect: %+v -> %+v", before.Runtime, after.Runtime)
	}
}
