package testserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errShutdown is the cancellation cause of tool handlers still running when
// the server shuts down.
var errShutdown = errors.New("server shutting down")

// maxBigBytes bounds the big tool so a typo cannot exhaust the test machine.
const maxBigBytes = 256 << 20

// newMCPServer builds the SDK server with every tool, resource, template and
// prompt registered, and the observing middleware installed.
func (s *server) newMCPServer() *mcp.Server {
	opts := &mcp.ServerOptions{
		PageSize: s.opts.PageSize,
		// Accept resource subscriptions, so that updates can be tested.
		SubscribeHandler:          func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: s.opts.ProtocolVersions,
		Logger:                    s.sdkLogger(),
	}
	if s.opts.PrivateCache || s.opts.CacheTTL > 0 {
		scope, ttl := "public", s.opts.CacheTTL
		if s.opts.PrivateCache {
			scope = "private"
			if ttl == 0 {
				ttl = 60000
			}
		}
		opts.SetCacheable = func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope, c.TTLMs = scope, ttl }
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: s.opts.Name, Version: s.opts.Version}, opts)
	s.mcp = srv // addEcho registers through s.mcp
	srv.AddReceivingMiddleware(s.observe)

	s.addEcho("echo", "Returns its text argument, as text and as structured content.")
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "add",
		Description: "Adds two numbers.",
		InputSchema: objectSchema(map[string]any{
			"a": prop("number", "first addend"),
			"b": prop("number", "second addend"),
		}, "a", "b"),
	}, s.add)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "slow",
		Description: "Takes duration_ms to finish, reporting progress every interval_ms when the request has a progress token.",
		InputSchema: objectSchema(map[string]any{
			"duration_ms": withMin(prop("integer", "total duration in milliseconds"), 0),
			"interval_ms": withDefault(withMin(prop("integer", "progress interval in milliseconds"), 1), 1000),
		}, "duration_ms"),
	}, s.slow)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "sleep",
		Description: "Sleeps ms milliseconds without reporting progress.",
		InputSchema: objectSchema(map[string]any{
			"ms": withMin(prop("integer", "milliseconds to sleep"), 0),
		}, "ms"),
	}, s.sleepTool)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "elicit",
		Description: "Asks the client (elicitation/create) for an answer and returns it.",
		InputSchema: objectSchema(map[string]any{
			"message": prop("string", "question shown to the user"),
		}),
	}, s.elicit)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "ask",
		Description: "Asks for an answer the 2026-07-28 way: a result of resultType input_required with an elicitation (id \"answer\") and requestState \"asked\", until a call brings an accepted answer with that state; returns it.",
		InputSchema: objectSchema(map[string]any{
			"message": prop("string", "question shown to the user"),
		}),
	}, s.ask)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "add_tool",
		Description: "Registers a new echo tool with the given name, which makes the server send notifications/tools/list_changed.",
		InputSchema: objectSchema(map[string]any{
			"name": prop("string", "name of the tool to add"),
		}, "name"),
	}, s.addTool)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "crash",
		Description: "Exits the server process with status 3 without answering.",
		InputSchema: objectSchema(map[string]any{}),
	}, s.crash)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "big",
		Description: "Returns a text content of the given number of 'x' bytes.",
		InputSchema: objectSchema(map[string]any{
			"bytes": withMin(prop("integer", "size of the text in bytes"), 0),
		}, "bytes"),
	}, s.big)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "fail",
		Description: "Returns a tool error (isError: true) carrying the message.",
		InputSchema: objectSchema(map[string]any{
			"message": prop("string", "error message"),
		}),
	}, s.fail)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "rpc_error",
		Description: "Answers the call with a JSON-RPC error (not a result) of the given code and message.",
		InputSchema: objectSchema(map[string]any{
			"code":    prop("integer", "JSON-RPC error code; -32602 (invalid params) if zero"),
			"message": prop("string", "error message"),
		}),
	}, s.rpcError)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "sample",
		Description: "Asks the client's model (sampling/createMessage) to answer the message, and returns its text.",
		InputSchema: objectSchema(map[string]any{
			"message": prop("string", "the prompt"),
		}),
	}, s.sample)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "log",
		Description: "Sends the message to the client as a log notification (notifications/message, level info), and notifies subscribers that test://hello changed.",
		InputSchema: objectSchema(map[string]any{
			"message": prop("string", "the log message"),
		}),
	}, s.logTool)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "mixed",
		Description: "Returns one content of every kind (text, image, audio, resource link, embedded resource) with structured content and _meta.",
		InputSchema: objectSchema(map[string]any{}),
	}, s.mixed)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "pid",
		Description: "Returns the server's process id.",
		InputSchema: objectSchema(map[string]any{}),
	}, s.pidTool)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "capabilities",
		Description: "Returns the capabilities the client declared in initialize and those the request names (its _meta's, else the session's), as JSON, and the server's process id.",
		InputSchema: objectSchema(map[string]any{}),
	}, s.capabilitiesTool)
	s.addSandboxProbes()
	for i := range s.opts.Tools {
		s.addEcho(fmt.Sprintf("extra_%03d", i), "Extra echo tool (-tools).")
	}

	srv.AddResource(&mcp.Resource{
		URI:      "test://hello",
		Name:     "hello",
		MIMEType: "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return textResource(req.Params.URI, "hello"), nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "test://items/{id}",
		Name:        "item",
		MIMEType:    "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		id := strings.TrimPrefix(req.Params.URI, "test://items/")
		return textResource(req.Params.URI, "item "+id), nil
	})
	if s.opts.Resource != "" {
		srv.AddResource(&mcp.Resource{URI: s.opts.Resource, Name: "extra", MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return textResource(req.Params.URI, s.opts.Name+": "+req.Params.URI), nil
			})
	}
	if s.opts.ResourceTemplate != "" {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: s.opts.ResourceTemplate, Name: "extra", MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return textResource(req.Params.URI, s.opts.Name+": "+req.Params.URI), nil
			})
	}
	if s.opts.AskResource {
		srv.AddResource(&mcp.Resource{URI: "test://ask", Name: "ask", MIMEType: "text/plain"}, askResource)
	}
	if s.opts.Roots {
		mcp.AddTool(srv, &mcp.Tool{
			Name:        "roots",
			Description: "Asks the client for its roots (roots/list) and returns their URIs, comma-separated, or why it could not.",
			InputSchema: objectSchema(map[string]any{}),
		}, s.roots)
		srv.AddPrompt(&mcp.Prompt{Name: "ask_prompt", Description: "Asks the client (elicitation/create) what to say, and says it."}, s.askPrompt)
	}
	srv.AddPrompt(&mcp.Prompt{
		Name:        "greet",
		Description: "Greets someone.",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Description: "who to greet", Required: true}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{
			Messages: []*mcp.PromptMessage{{
				Role:    "user",
				Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"},
			}},
		}, nil
	})
	return srv
}

// sdkLogger routes the SDK's own complaints to stderr, prefixed so they are
// recognisable, at error level only: the SDK logs every session at info
// level, which would drown the lines tests look for.
func (s *server) sdkLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(prefixWriter{"testserver: sdk: ", s.stderr}, &slog.HandlerOptions{Level: slog.LevelError}))
}

// observe is the receiving middleware: it sees every request the SDK
// dispatches. It records initialize and tools/call, applies -crash-after, and
// ties tool handlers to the server's lifetime.
func (s *server) observe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
				s.events.record(Event{Event: "initialize", ProtocolVersion: p.ProtocolVersion, Session: sessionID(req)})
			}
		case "tools/call":
			return s.dispatchCall(ctx, method, req, next)
		}
		return next(ctx, method, req)
	}
}

func (s *server) dispatchCall(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	ev := Event{Event: "call", Session: sessionID(req)}
	if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
		ev.Tool = p.Name
		ev.Traceparent, _ = p.Meta["traceparent"].(string)
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		ev.TraceparentHeader = extra.Header.Get("traceparent")
	}
	tool := ev.Tool
	n := s.calls.Add(1)
	s.logf("call %s", tool)
	s.events.record(ev)
	// Calls are numbered in the order the SDK dispatches them; with a
	// client that waits for each answer that is exactly "N calls succeed".
	if limit := s.opts.CrashAfter; limit != nil && n > int64(*limit) {
		s.die(3, "crash-after")
	}

	// The SDK detaches handler contexts from the connection, so without this
	// a long sleep would hold up shutdown until it finished.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(errShutdown) })
	defer stop()

	res, err := next(ctx, method, req)
	s.completed.Add(1)
	return res, err
}

func sessionID(req mcp.Request) string {
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		return ss.ID()
	}
	return ""
}

// cancelled records that tool observed the cancellation of ctx and returns
// the error the handler should return.
func (s *server) cancelled(ctx context.Context, tool string) error {
	cause := context.Cause(ctx)
	s.logf("cancelled %s: %v", tool, cause)
	s.events.record(Event{Event: "cancelled", Tool: tool, Reason: cause.Error()})
	return ctx.Err()
}

// sleepUntil waits until t, or returns ctx.Err() if ctx is cancelled first.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Tool arguments. Each tool's input schema is written out explicitly in
// newMCPServer (a client under test reads it), and these structs only decode.

type echoArgs struct {
	Text string `json:"text"`
}

type echoResult struct {
	Text string `json:"text"`
}

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type slowArgs struct {
	DurationMS int `json:"duration_ms"`
	IntervalMS int `json:"interval_ms"`
}

type sleepArgs struct {
	MS int `json:"ms"`
}

type messageArgs struct {
	Message string `json:"message"`
}

type nameArgs struct {
	Name string `json:"name"`
}

type bigArgs struct {
	Bytes int `json:"bytes"`
}

type noArgs struct{}

// addEcho registers an echo tool under name; echo, extra_NNN, dyn_N and
// tools created by add_tool all share it.
func (s *server) addEcho(name, description string) {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        name,
		Description: description,
		InputSchema: objectSchema(map[string]any{
			"text": prop("string", "text to echo"),
		}, "text"),
	}, s.echo)
}

func (s *server) echo(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, echoResult, error) {
	// Setting Content keeps the text content exactly equal to the input; the
	// SDK fills structuredContent from the second result.
	return textResult(in.Text), echoResult(in), nil
}

func (s *server) add(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
	return textResult(strconv.FormatFloat(in.A+in.B, 'f', -1, 64)), nil, nil
}

// slow reports one progress step per interval (the last step may be
// shorter), so a client sees progress = 1..n with total = n.
func (s *server) slow(ctx context.Context, req *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
	total := time.Duration(in.DurationMS) * time.Millisecond
	interval := time.Duration(in.IntervalMS) * time.Millisecond
	if interval <= 0 {
		interval = time.Second
	}
	steps := int((total + interval - 1) / interval)
	token := req.Params.GetProgressToken()
	start := time.Now()
	for i := 1; i <= steps; i++ {
		// Deadlines are absolute so that time spent sending progress does
		// not accumulate into drift.
		if err := sleepUntil(ctx, start.Add(min(time.Duration(i)*interval, total))); err != nil {
			return nil, nil, s.cancelled(ctx, "slow")
		}
		if token == nil {
			continue
		}
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      float64(i),
			Total:         float64(steps),
			Message:       fmt.Sprintf("step %d/%d", i, steps),
		})
		if err != nil && ctx.Err() != nil {
			return nil, nil, s.cancelled(ctx, "slow")
		}
	}
	return textResult(fmt.Sprintf("done after %dms", in.DurationMS)), nil, nil
}

func (s *server) sleepTool(ctx context.Context, _ *mcp.CallToolRequest, in sleepArgs) (*mcp.CallToolResult, any, error) {
	if err := sleepUntil(ctx, time.Now().Add(time.Duration(in.MS)*time.Millisecond)); err != nil {
		return nil, nil, s.cancelled(ctx, "sleep")
	}
	return textResult(fmt.Sprintf("slept %dms", in.MS)), nil, nil
}

func (s *server) elicit(ctx context.Context, req *mcp.CallToolRequest, in messageArgs) (*mcp.CallToolResult, any, error) {
	msg := in.Message
	if msg == "" {
		msg = "What is the answer?"
	}
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
		Message: msg,
		RequestedSchema: objectSchema(map[string]any{
			"answer": prop("string", "your answer"),
		}, "answer"),
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, s.cancelled(ctx, "elicit")
		}
		return nil, nil, fmt.Errorf("elicitation failed: %w", err)
	}
	switch res.Action {
	case "accept":
		return textResult(fmt.Sprintf("answer: %v", res.Content["answer"])), nil, nil
	case "decline":
		return textResult("declined"), nil, nil
	default:
		return textResult("cancelled"), nil, nil
	}
}

func (s *server) roots(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	res, err := req.Session.ListRoots(ctx, nil)
	if err != nil {
		return textResult("roots failed: " + err.Error()), nil, nil
	}
	uris := make([]string, 0, len(res.Roots))
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	return textResult("roots: " + strings.Join(uris, ",")), nil, nil
}

func (s *server) askPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	question := &mcp.ElicitParams{
		Message:         "What should the prompt say?",
		RequestedSchema: objectSchema(map[string]any{"answer": prop("string", "what to say")}, "answer"),
	}
	say := func(res *mcp.ElicitResult) *mcp.GetPromptResult {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
			Content: &mcp.TextContent{Text: fmt.Sprintf("say: %v (%s)", res.Content["answer"], res.Action)}}}}
	}
	if ip := req.Session.InitializeParams(); ip == nil || ip.ProtocolVersion < "2026-07-28" {
		res, err := req.Session.Elicit(ctx, question)
		if err != nil {
			return nil, fmt.Errorf("elicitation failed: %w", err)
		}
		return say(res), nil
	}
	// The 2026-07-28 protocol's form: a request for input as the result.
	if res, ok := req.Params.InputResponses["answer"].(*mcp.ElicitResult); ok && res != nil && req.Params.RequestState == "asked" {
		return say(res), nil
	}
	return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"answer": question}, RequestState: "asked"}, nil
}

// ask is elicit in the 2026-07-28 protocol's multi-round-trip form
// (SEP-2322): no request to the client, a request for input as the result.
func (s *server) ask(_ context.Context, req *mcp.CallToolRequest, in messageArgs) (*mcp.CallToolResult, any, error) {
	if res, ok := req.Params.InputResponses["answer"].(*mcp.ElicitResult); ok && res != nil && req.Params.RequestState == "asked" {
		if res.Action != "accept" {
			return textResult(res.Action), nil, nil
		}
		return textResult(fmt.Sprintf("answer: %v", res.Content["answer"])), nil, nil
	}
	msg := in.Message
	if msg == "" {
		msg = "What is the answer?"
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"answer": &mcp.ElicitParams{
			Message:         msg,
			RequestedSchema: objectSchema(map[string]any{"answer": prop("string", "your answer")}, "answer"),
		}},
		RequestState: "asked",
	}, nil, nil
}

// askResource is ask for a resource read: a request for input as the
// result, then the answer as the resource's text. A client of 2025-11-25
// is asked with elicitation/create during the read instead (the go-sdk
// v1.8.0 refuses a read result without contents on such a session).
func askResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	question := &mcp.ElicitParams{
		Message:         "What should the resource say?",
		RequestedSchema: objectSchema(map[string]any{"answer": prop("string", "what to say")}, "answer"),
	}
	if ip := req.Session.InitializeParams(); ip == nil || ip.ProtocolVersion < "2026-07-28" {
		res, err := req.Session.Elicit(ctx, question)
		if err != nil {
			return nil, fmt.Errorf("elicitation failed: %w", err)
		}
		return textResource(req.Params.URI, fmt.Sprintf("answer: %v (%s)", res.Content["answer"], res.Action)), nil
	}
	if res, ok := req.Params.InputResponses["answer"].(*mcp.ElicitResult); ok && res != nil && req.Params.RequestState == "asked" {
		return textResource(req.Params.URI, fmt.Sprintf("answer: %v (%s)", res.Content["answer"], res.Action)), nil
	}
	return &mcp.ReadResourceResult{InputRequests: mcp.InputRequestMap{"answer": question}, RequestState: "asked"}, nil
}

func (s *server) addTool(_ context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, any, error) {
	if in.Name == "" {
		return nil, nil, errors.New("name must not be empty")
	}
	s.addEcho(in.Name, "Echo tool added at runtime by add_tool.")
	return textResult("added " + in.Name), nil, nil
}

func (s *server) crash(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
	s.die(3, "crash")
	panic("unreachable")
}

func (s *server) big(_ context.Context, _ *mcp.CallToolRequest, in bigArgs) (*mcp.CallToolResult, any, error) {
	if in.Bytes > maxBigBytes {
		return nil, nil, fmt.Errorf("bytes must be at most %d", maxBigBytes)
	}
	return textResult(strings.Repeat("x", in.Bytes)), nil, nil
}

type rpcErrorArgs struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// rpcError answers with a protocol error: the go-sdk sends a *jsonrpc.Error
// returned by a tool handler as the JSON-RPC error of the response.
func (s *server) rpcError(_ context.Context, _ *mcp.CallToolRequest, in rpcErrorArgs) (*mcp.CallToolResult, any, error) {
	if in.Code == 0 {
		in.Code = jsonrpc.CodeInvalidParams
	}
	return nil, nil, &jsonrpc.Error{Code: in.Code, Message: in.Message}
}

func (s *server) fail(_ context.Context, _ *mcp.CallToolRequest, in messageArgs) (*mcp.CallToolResult, any, error) {
	msg := in.Message
	if msg == "" {
		msg = "failure requested"
	}
	res := textResult(msg)
	res.IsError = true
	return res, nil, nil
}

func (s *server) sample(ctx context.Context, req *mcp.CallToolRequest, in messageArgs) (*mcp.CallToolResult, any, error) {
	res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
		MaxTokens: 100,
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Message}}},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sampling failed: %w", err)
	}
	text := ""
	if t, ok := res.Content.(*mcp.TextContent); ok {
		text = t.Text
	}
	return textResult(fmt.Sprintf("model %s says: %s", res.Model, text)), nil, nil
}

func (s *server) logTool(ctx context.Context, req *mcp.CallToolRequest, in messageArgs) (*mcp.CallToolResult, any, error) {
	if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "testserver", Data: in.Message}); err != nil {
		return nil, nil, err
	}
	if err := s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://hello"}); err != nil {
		return nil, nil, err
	}
	return textResult("logged"), nil, nil
}

// Payloads of the mixed tool, exported so tests can compare what arrived.
var (
	MixedImage = []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a}
	MixedAudio = []byte("RIFF....WAVEfmt ")
)

func (s *server) mixed(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"testserver/trace": "abc123"},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "text part"},
			&mcp.ImageContent{Data: MixedImage, MIMEType: "image/png"},
			&mcp.AudioContent{Data: MixedAudio, MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "test://hello", Name: "hello", MIMEType: "text/plain"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://items/7", MIMEType: "text/plain", Text: "item 7"}},
		},
		StructuredContent: map[string]any{"answer": 42.0, "items": []any{"a", "b"}},
	}, nil, nil
}

func (s *server) pidTool(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
	return textResult(strconv.Itoa(s.pid)), nil, nil
}

// capabilitiesTool answers {"capabilities": ..., "request": ..., "pid":
// N}: what the session's client declared in initialize (null without
// one), what the go-sdk takes for the request's (_meta's first), and the
// process serving it.
func (s *server) capabilitiesTool(_ context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
	var caps *mcp.ClientCapabilities
	if p := req.Session.InitializeParams(); p != nil {
		caps = p.Capabilities
	}
	b, err := json.Marshal(map[string]any{"capabilities": caps, "request": req.ClientCapabilities(), "pid": s.pid})
	if err != nil {
		return nil, nil, err
	}
	return textResult(string(b)), nil, nil
}

// addToolsPeriodically implements -list-changed-every.
func (s *server) addToolsPeriodically(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.addEcho(fmt.Sprintf("dyn_%d", s.dynTools.Add(1)), "Echo tool added by -list-changed-every.")
		}
	}
}

// Small builders, to keep the registrations above readable.

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func textResource(uri, text string) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}
}

func objectSchema(props map[string]any, required ...string) map[string]any {
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return schema
}

func prop(typ, description string) map[string]any {
	return map[string]any{"type": typ, "description": description}
}

func withMin(p map[string]any, minimum int) map[string]any {
	p["minimum"] = minimum
	return p
}

func withDefault(p map[string]any, def any) map[string]any {
	p["default"] = def
	return p
}
