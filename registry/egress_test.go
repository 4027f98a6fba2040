package registry_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestSessionsOfARegistrySpeakForOneInstance: every remote session of a
// registry whose options name no instance names the same one in its
// Switchboard-Via, as every session of a process did when the instance
// was a variable of the package: a Switchboard that two of its servers
// lead back to refuses both, not one.
func TestSessionsOfARegistrySpeakForOneInstance(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "remote"}, nil)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var mu sync.Mutex
	vias := map[string]map[string]bool{} // by path
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if vias[r.URL.Path] == nil {
			vias[r.URL.Path] = map[string]bool{}
		}
		vias[r.URL.Path][r.Header.Get(egress.ViaHeader)] = true
		mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))
	// Cleanups run last first: the registry's shutdown (registered by
	// loaded) ends the sessions' streams, then the server's sessions end,
	// then the server.
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		for ss := range server.Sessions() {
			ss.Close()
		}
	})

	a := &sb.ServerConfig{Name: "a", Transport: sb.TransportStreamableHTTP, URL: srv.URL + "/a"}
	b := &sb.ServerConfig{Name: "b", Transport: sb.TransportStreamableHTTP, URL: srv.URL + "/b"}
	reg := loaded(t, upstream.Options{Logger: slog.New(slog.DiscardHandler), HealthInterval: -1}, a, b)
	if err := reg.WaitSettled(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if s, ok := reg.Session(name); !ok || s.Info().Status != sb.StatusConnected {
			t.Fatalf("%s did not connect", name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(vias["/a"]) != 1 || len(vias["/b"]) != 1 {
		t.Fatalf("Via headers by path: %v; want one id per session", vias)
	}
	for via := range vias["/a"] {
		if via == "" || !vias["/b"][via] {
			t.Errorf("a's requests name %q, b's %v; want the same instance", via, vias["/b"])
		}
	}
}
