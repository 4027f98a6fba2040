package executor_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// perClientSessions serves server "pc" from shared, and every client from
// own (or fails with err), counting the calls that ended.
type perClientSessions struct {
	shared, own *upstream.Session
	err         error
	asked       []string // the clients ClientSession was asked for
	ended       int
}

func (p *perClientSessions) Session(name string) (*upstream.Session, bool) {
	return p.shared, name == "pc"
}

func (p *perClientSessions) ClientSession(name, client string) (*upstream.Session, func(), error) {
	p.asked = append(p.asked, client)
	if p.err != nil {
		return nil, nil, p.err
	}
	return p.own, func() { p.ended++ }, nil
}

func (p *perClientSessions) Names() []string { return []string{"pc"} }

// pidResult returns a function that reads the pid tool's result, failing
// the test on an error.
func pidResult(t *testing.T) func(*upstream.Result, error) int {
	return func(r *upstream.Result, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(res.Content[0].(*mcp.TextContent).Text)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
}

// A call whose context names a client runs on the session the Sessions
// give that client, which is told when the call has ended; a call without
// one runs on the shared session and asks for no client session.
func TestCallWithAClientRunsOnItsSession(t *testing.T) {
	p := &perClientSessions{shared: startSession(t, "pc"), own: startSession(t, "pc")}
	ex := executor.New(executor.NewMCP(p))

	pid := pidResult(t)(ex.Execute(context.Background(), "pc/pid", nil, sb.InvokeOptions{}))
	if pid != p.shared.Info().PID || len(p.asked) != 0 {
		t.Fatalf("without a client: ran in %d (shared %d), asked for clients %q", pid, p.shared.Info().PID, p.asked)
	}
	ctx := executor.WithClient(context.Background(), "alice")
	if got := executor.ClientFrom(ctx); got != "alice" {
		t.Fatalf("ClientFrom = %q", got)
	}
	pid = pidResult(t)(ex.Execute(ctx, "pc/pid", nil, sb.InvokeOptions{}))
	if pid != p.own.Info().PID || fmt.Sprint(p.asked) != "[alice]" || p.ended != 1 {
		t.Fatalf("with client alice: ran in %d (own %d), asked %q, %d calls ended", pid, p.own.Info().PID, p.asked, p.ended)
	}
	if got := executor.ClientFrom(executor.WithClient(ctx, "")); got != "" {
		t.Fatalf("an empty client reads back as %q", got)
	}
}

// A client session that cannot be had fails the call with the code of
// why; the call does not fall back to the shared session.
func TestClientSessionFailuresKeepTheirCode(t *testing.T) {
	ctx := executor.WithClient(context.Background(), "alice")
	shared := startSession(t, "pc")
	for _, tc := range []struct {
		name string
		err  error
		want sb.Code
	}{
		{"at the cap", fmt.Errorf("wrapped: %w", sb.NewError(sb.CodeUnavailable, "too many per-client sessions")), sb.CodeUnavailable},
		{"deleted meanwhile", fmt.Errorf("%w: %q", sb.ErrNotFound, "pc"), sb.CodeUnknownServer},
		{"disabled meanwhile", sb.NewError(sb.CodeDisabled, "server is disabled"), sb.CodeUnavailable},
		{"shutting down", sb.NewError(sb.CodeShuttingDown, "registry is shut down"), sb.CodeShuttingDown},
		{"unclassified", errors.New("something else"), sb.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := executor.New(executor.NewMCP(&perClientSessions{shared: shared, err: tc.err}))
			res, err := ex.Execute(ctx, "pc/echo", map[string]any{"text": "x"}, sb.InvokeOptions{})
			if res != nil || sb.CodeOf(err) != tc.want {
				t.Fatalf("Execute = %v, %v (code %s); want code %s", res, err, sb.CodeOf(err), tc.want)
			}
		})
	}
}

// Static has one session per server, which every client shares.
func TestStaticSharesItsSessionWithEveryClient(t *testing.T) {
	s := startSession(t, "alpha")
	st := executor.NewStatic(s)
	got, done, err := st.ClientSession("alpha", "alice")
	if err != nil || got != s {
		t.Fatalf("ClientSession = %p, %v; want the one session", got, err)
	}
	done()
	if _, _, err := st.ClientSession("beta", "alice"); !errors.Is(err, executor.ErrUnknownServer) {
		t.Fatalf("unknown server: %v", err)
	}
	pid := pidResult(t)(executor.New(executor.NewMCP(st)).Execute(executor.WithClient(context.Background(), "bob"), "alpha/pid", nil, sb.InvokeOptions{}))
	if pid != s.Info().PID {
		t.Fatalf("ran in %d, the session's process is %d", pid, s.Info().PID)
	}
}
