package upstream_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestStreamRedirectToAnotherOriginIsRefused: the standalone stream's GET,
// which goes over a connection of its own (egress/streamconn.go) rather than
// net/http's pool, is refused a redirect to another origin like every
// other request: the other origin receives nothing, the configured
// headers least of all; the session fails as redirect, naming the target.
func TestStreamRedirectToAnotherOriginIsRefused(t *testing.T) {
	onStream := func(r *http.Request, _ []byte) bool { return r.Method == http.MethodGet }
	for _, code := range []int{302, 307} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			other := newHeaderLog(t)
			srv := inProcessServer(t)
			ts := serve(t, redirectIf(code, other.URL+"/mcp", onStream, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
			s, _ := badInputSession(t, &sb.ServerConfig{Name: "redir", Transport: sb.TransportStreamableHTTP, URL: ts.URL,
				Headers: configuredHeaders, StartupTimeoutMS: 2000, Retry: &sb.RetryConfig{MaxAttempts: 1}}, upstream.Options{})
			if err := s.Start(context.Background()); err == nil {
				t.Error("Start succeeded; want the stream's redirect refused")
			}
			waitFor(t, s, "the attempt's failure", func(i sb.RuntimeInfo) bool { return i.Error != nil })
			if e := s.Info().Error; e.Code != sb.CodeRedirect || !strings.Contains(e.Message, other.URL) {
				t.Errorf("error %+v; want code %s naming %s", e, sb.CodeRedirect, other.URL)
			}
			if leaked := other.leaked(); len(leaked) > 0 {
				t.Fatalf("the other origin received the configured headers %q", leaked)
			}
			if n := other.count(); n != 0 {
				t.Fatalf("the other origin received %d requests; want none", n)
			}
		})
	}
}
