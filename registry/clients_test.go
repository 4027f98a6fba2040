package registry_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/pgtest"
	"github.com/switchboard-mcp/switchboard/internal/testserver"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// inProcess returns session options whose every connection goes to one
// in-process test server, for testing/synctest bubbles.
func inProcess(t *testing.T) upstream.Options {
	t.Helper()
	srv, err := testserver.NewInProcess(testserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return upstream.Options{Logger: slog.New(slog.DiscardHandler), Dial: testserver.DialInProcess(srv)}
}

// clientRegistry returns a loaded registry, in the calling bubble, over
// cfgs with options o (whose Session is set to in-process connections).
func clientRegistry(t *testing.T, o registry.Options, cfgs ...*sb.ServerConfig) *registry.Registry {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, cfg := range cfgs {
		if _, err := st.Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	o.Logger, o.Session = slog.New(slog.DiscardHandler), inProcess(t)
	reg := registry.New(st, &o)
	t.Cleanup(func() { reg.Shutdown(ctx) })
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return reg
}

func server(name string, scope sb.SessionScope) *sb.ServerConfig {
	return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: "in-process", SessionScope: scope}
}

// stopped reports whether s has shut down; call it after synctest.Wait.
func stopped(s *upstream.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// clientSession is ClientSession that fails the test on an error.
func clientSession(t *testing.T, reg *registry.Registry, name, client string) (*upstream.Session, func()) {
	t.Helper()
	s, done, err := reg.ClientSession(name, client)
	if err != nil {
		t.Fatalf("ClientSession(%q, %q): %v", name, client, err)
	}
	return s, done
}

// A per-client server gives each client a session of its own, the same
// one on every call, apart from the shared session; it connects and serves
// calls without a word on the event stream, where the server's status is
// its shared session's. A shared server, and a call without a client, get
// the shared session.
func TestClientSessionIsEachClientsOwnAndKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := clientRegistry(t, registry.Options{}, server("pc", sb.SessionPerClient), server("sh", ""))
		synctest.Wait()
		events, stop := reg.Subscribe()
		defer stop()

		shared, _ := reg.Session("pc")
		a, doneA := clientSession(t, reg, "pc", "alice")
		b, doneB := clientSession(t, reg, "pc", "bob")
		a2, doneA2 := clientSession(t, reg, "pc", "alice")
		if a == shared || b == shared || a == b || a2 != a {
			t.Fatalf("sessions: shared %p, alice %p then %p, bob %p; want alice's own, kept, and bob's own", shared, a, a2, b)
		}
		res, err := a.CallTool(context.Background(), "echo", map[string]any{"text": "mine"}, sb.InvokeOptions{})
		if err != nil || res.MustDecode().Content[0].(*mcp.TextContent).Text != "mine" {
			t.Fatalf("a call on alice's session: %v %+v", err, res)
		}
		doneA()
		doneA2()
		doneB()
		synctest.Wait()
		select {
		case ev := <-events:
			t.Errorf("a per-client session published %+v", ev)
		default:
		}

		for _, tc := range []struct{ server, client string }{{"pc", ""}, {"sh", "alice"}, {"sh", ""}} {
			want, _ := reg.Session(tc.server)
			if got, done := clientSession(t, reg, tc.server, tc.client); got != want {
				t.Errorf("ClientSession(%q, %q) is not the shared session", tc.server, tc.client)
			} else {
				done()
			}
		}
	})
}

// A server has at most MaxClientSessions per-client sessions: one more
// client is refused as unavailable, with the cap in the message, until a
// client is released; ReleaseClient stops that client's sessions on every
// server and no other's.
func TestClientSessionsAreCappedAndReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := clientRegistry(t, registry.Options{MaxClientSessions: 2}, server("pc", sb.SessionPerClient), server("other", sb.SessionPerClient))
		a, doneA := clientSession(t, reg, "pc", "alice")
		doneA()
		_, doneB := clientSession(t, reg, "pc", "bob")
		doneB()
		aOther, doneAO := clientSession(t, reg, "other", "alice")
		doneAO()

		_, _, err := reg.ClientSession("pc", "carol")
		if !errors.Is(err, registry.ErrTooManyClients) || sb.CodeOf(err) != sb.CodeUnavailable ||
			!strings.Contains(err.Error(), `"pc" serves 2 clients with a session each, its limit`) {
			t.Fatalf("a third client: %v; want ErrTooManyClients (unavailable) naming the limit", err)
		}

		reg.ReleaseClient("alice")
		synctest.Wait()
		if !stopped(a) || !stopped(aOther) {
			t.Fatalf("alice's sessions after ReleaseClient: pc stopped %v, other stopped %v", stopped(a), stopped(aOther))
		}
		c, doneC := clientSession(t, reg, "pc", "carol")
		defer doneC()
		if b, doneB := clientSession(t, reg, "pc", "bob"); stopped(b) || b == c {
			t.Errorf("bob's session was touched by alice's release")
		} else {
			doneB()
		}
	})
}

// A per-client session that no call has used for ClientIdleTimeout is shut
// down, not a moment before; one that serves a call is never reaped, and
// its idle time counts from the end of its last call. The client's next
// call gets a new session.
func TestIdleClientSessionIsReaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 10 * time.Minute
		reg := clientRegistry(t, registry.Options{ClientIdleTimeout: idle}, server("pc", sb.SessionPerClient))
		quiet, done := clientSession(t, reg, "pc", "quiet")
		done()
		busy, endCall := clientSession(t, reg, "pc", "busy") // a call that lasts (a person thinking)

		time.Sleep(idle - time.Second)
		synctest.Wait()
		if stopped(quiet) {
			t.Fatal("reaped before its idle timeout")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if !stopped(quiet) {
			t.Fatalf("not reaped after %s unused", idle)
		}

		time.Sleep(2 * idle)
		synctest.Wait()
		if stopped(busy) {
			t.Fatal("a session serving a call was reaped")
		}
		endCall()
		time.Sleep(idle - time.Second)
		synctest.Wait()
		if stopped(busy) {
			t.Fatal("reaped less than the idle timeout after its call ended")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if !stopped(busy) {
			t.Fatal("not reaped the idle timeout after its call ended")
		}

		again, done := clientSession(t, reg, "pc", "quiet")
		defer done()
		if again == quiet || stopped(again) {
			t.Fatal("the client's next call did not get a new session")
		}
	})
}

// Every change to a server reaches its per-client sessions: a change that
// reconnects stops them (the client's next call starts one with the new
// config), as do a change to the shared scope, disabling, deleting and
// Shutdown; a change of call timeouts leaves them running.
func TestServerChangesReachClientSessions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(reg *registry.Registry) error
		keeps  bool // the per-client session keeps running
		then   func(t *testing.T, reg *registry.Registry)
	}{
		{"call timeout only", func(reg *registry.Registry) error {
			cfg := server("pc", sb.SessionPerClient)
			cfg.CallTimeoutMS = 5000
			_, err := reg.Update(ctx, "pc", cfg, 0)
			return err
		}, true, nil},
		{"reconnecting change", func(reg *registry.Registry) error {
			cfg := server("pc", sb.SessionPerClient)
			cfg.Args = []string{"-v"}
			_, err := reg.Update(ctx, "pc", cfg, 0)
			return err
		}, false, func(t *testing.T, reg *registry.Registry) {
			s, done := clientSession(t, reg, "pc", "alice")
			defer done()
			if shared, _ := reg.Session("pc"); s == shared || !slices.Equal(s.Config().Args, []string{"-v"}) {
				t.Errorf("the next call's session has args %q, want its own with the new config", s.Config().Args)
			}
		}},
		{"back to shared", func(reg *registry.Registry) error {
			_, err := reg.Update(ctx, "pc", server("pc", sb.SessionShared), 0)
			return err
		}, false, func(t *testing.T, reg *registry.Registry) {
			s, done := clientSession(t, reg, "pc", "alice")
			defer done()
			if shared, _ := reg.Session("pc"); s != shared {
				t.Error("a shared server still gives a client its own session")
			}
		}},
		{"disabled", func(reg *registry.Registry) error {
			_, err := reg.SetEnabled(ctx, "pc", false)
			return err
		}, false, func(t *testing.T, reg *registry.Registry) {
			if _, _, err := reg.ClientSession("pc", "alice"); !errors.Is(err, registry.ErrDisabled) {
				t.Errorf("ClientSession of a disabled server: %v", err)
			}
		}},
		{"deleted", func(reg *registry.Registry) error {
			return reg.Delete(ctx, "pc", 0)
		}, false, func(t *testing.T, reg *registry.Registry) {
			if _, _, err := reg.ClientSession("pc", "alice"); !errors.Is(err, sb.ErrNotFound) {
				t.Errorf("ClientSession of a deleted server: %v", err)
			}
		}},
		{"shutdown", func(reg *registry.Registry) error {
			return reg.Shutdown(ctx)
		}, false, func(t *testing.T, reg *registry.Registry) {
			if _, _, err := reg.ClientSession("pc", "alice"); sb.CodeOf(err) != sb.CodeShuttingDown {
				t.Errorf("ClientSession after Shutdown: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := clientRegistry(t, registry.Options{}, server("pc", sb.SessionPerClient))
				s, done := clientSession(t, reg, "pc", "alice")
				done()
				if err := s.Start(ctx); err != nil {
					t.Fatal(err)
				}
				if err := tc.change(reg); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if stopped(s) == tc.keeps {
					t.Fatalf("per-client session stopped: %v, want %v", stopped(s), !tc.keeps)
				}
				if tc.then != nil {
					tc.then(t, reg)
				}
			})
		})
	}
}

// session_scope survives both stores: it is part of the config JSON they
// keep, so no migration is needed.
func TestSessionScopeRoundTripsThroughTheStores(t *testing.T) {
	for _, tc := range []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "sb.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := tc.dsn(t)
			st, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler)})
			off := false
			cfg := server("pc", sb.SessionPerClient)
			cfg.Enabled = &off
			if _, err := reg.Create(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			reg.Shutdown(ctx)
			st.Close()

			st, err = store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got, err := st.Get(ctx, "pc")
			if err != nil || got.Config.SessionScope != sb.SessionPerClient {
				t.Fatalf("stored scope %q (%v), want per-client", got.Config.SessionScope, err)
			}
		})
	}
}
