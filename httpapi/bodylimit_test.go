package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/httpapi"
	"github.com/switchboard-mcp/switchboard/internal/otlptest"
	"github.com/switchboard-mcp/switchboard/internal/sqlitetest"
	"github.com/switchboard-mcp/switchboard/telemetry"
)

// TestOversizedBodyClosesTheConnection: a request body over the API's
// limit is answered 413 and its connection closed after the answer (what
// follows the limit on the wire is never read as the next request), as
// net/http does when http.MaxBytesReader trips, whether the route is
// recorded by the audit log and traced or not: their response wrappers
// must not hide the limit from the server.
func TestOversizedBodyClosesTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name           string
		audited, trace bool
	}{
		{"bare", false, false},
		{"audited", true, false},
		{"traced", false, true},
		{"audited and traced", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o secOptions
			if tc.audited {
				o.audit = audit.New(audit.Options{Store: sqlitetest.Store(t)})
			}
			if tc.trace {
				rcv := otlptest.Start(t)
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
				shutdown, on, err := telemetry.Setup(context.Background(), os.Getenv, "test", nil)
				if err != nil || !on {
					t.Fatalf("telemetry.Setup: on %v, err %v", on, err)
				}
				t.Cleanup(func() { shutdown(context.Background()) })
			}
			e := newSecEnv(t, o)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			big := `{"name":"big","transport":"stdio","enabled":false,"command":"` + strings.Repeat("x", httpapi.DefaultMaxConfigBytes) + `"}`
			req, err := http.NewRequest("POST", e.url+"/api/v1/servers", strings.NewReader(big))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// net/http closes the connection after an answer that says
			// Connection: close (resp.Close), which requestTooLarge sets.
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
				t.Errorf("a body over the limit: %d, Connection: close %v; want 413 and the connection closed", resp.StatusCode, resp.Close)
			}
		})
	}
}
