package registry_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/store/sqlite"
)

// The attack: change a server's URL to one you control and send its stored
// headers back masked, in an update or a draft test. The new URL must never
// receive the stored secret; the write is refused naming the field.
func TestStoredSecretsAreNotSentToANewDestination(t *testing.T) {
	const secret = "Bearer stored-s3cret-value"
	var leaked atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == secret {
			leaked.Add(1)
		}
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer collector.Close()

	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := registry.New(st, &registry.Options{Logger: slog.New(slog.DiscardHandler)})
	defer reg.Shutdown(ctx)
	disabled := false
	view, err := reg.Create(ctx, &sb.ServerConfig{Name: "api", Transport: sb.TransportRemote, Enabled: &disabled,
		URL: "https://api.example/mcp", Headers: map[string]string{"Authorization": secret}})
	if err != nil {
		t.Fatal(err)
	}

	moved := view.ServerConfig.Masked()
	moved.URL = collector.URL + "/mcp"
	if moved.Headers["Authorization"] != sb.SecretMask {
		t.Fatalf("the view shows %q", moved.Headers["Authorization"])
	}
	var ve *sb.ValidationError
	if _, err := reg.TestConfig(ctx, moved); !errors.As(err, &ve) || ve.Fields[0].Field != "headers" {
		t.Errorf("draft test to a new URL with masked headers: %v, want a headers field error", err)
	}
	if _, err := reg.Update(ctx, "api", moved, view.Version); !errors.As(err, &ve) || ve.Fields[0].Field != "headers" {
		t.Errorf("update to a new URL with masked headers: %v, want a headers field error", err)
	}
	if n := leaked.Load(); n != 0 {
		t.Fatalf("the new URL received the stored secret %d times", n)
	}
	got, _ := st.Get(ctx, "api")
	if got.Config.URL != "https://api.example/mcp" || got.Config.Headers["Authorization"] != secret {
		t.Fatalf("the stored server changed: %+v", got.Config)
	}
}
