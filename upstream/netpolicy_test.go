package upstream_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// TestMetadataAddressIsRefusedBeforeConnecting: whoever may add a server
// must not be able to make Switchboard fetch a cloud's instance
// credentials (http://169.254.169.254/...) for them. The session fails in
// phase connect with code blocked_address, naming the address and the
// setting that allows it. The dial hook refuses it before connect(2), so
// nothing is sent (internal_netpolicy_test.go shows where it is refused;
// this workplace allows no traffic to the address, and none is sent).
func TestMetadataAddressIsRefusedBeforeConnecting(t *testing.T) {
	for _, url := range []string{"http://169.254.169.254/mcp", "http://[fd00:ec2::254]/mcp", "http://100.100.100.200/mcp"} {
		t.Run(url, func(t *testing.T) {
			s, _ := badInputSession(t, &sb.ServerConfig{Name: "imds", Transport: sb.TransportRemote, URL: url,
				StartupTimeoutMS: 5000, Retry: &sb.RetryConfig{MaxAttempts: 1}}, upstream.Options{})
			err := s.Start(context.Background())
			info := s.Info()
			if err == nil || info.Error == nil || info.Error.Code != sb.CodeBlockedAddress || info.Error.Phase != sb.PhaseConnect {
				t.Fatalf("Start: %v; error %+v; want code %s in phase connect", err, info.Error, sb.CodeBlockedAddress)
			}
			host := strings.Trim(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"), "[]")
			for _, want := range []string{host, "--allow-upstream-network", "metadata"} {
				if !strings.Contains(info.Error.Message, want) {
					t.Errorf("the message %q does not name %q", info.Error.Message, want)
				}
			}
			if info.NextRetryAt == nil {
				t.Errorf("no slow retry scheduled: %+v", info)
			}
		})
	}
}

// TestAllowedNetworksReallowABlockedAddress: the unspecified address
// 0.0.0.0 is refused by default (on Linux it reaches this host's own
// services by another name than loopback), and Options.Egress (egress.NewPolicy)
// lets it through. Both run against a loopback server.
func TestAllowedNetworksReallowABlockedAddress(t *testing.T) {
	srv := inProcessServer(t)
	// The go-sdk's handler refuses a Host that is not a loopback name on a
	// loopback listener; "0.0.0.0" is the point here.
	ts := serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}).ServeHTTP)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	cfg := &sb.ServerConfig{Name: "any", Transport: sb.TransportStreamableHTTP, URL: "http://0.0.0.0:" + port + "/mcp",
		StartupTimeoutMS: 5000, Retry: &sb.RetryConfig{MaxAttempts: 1}}

	s, _ := badInputSession(t, cfg, upstream.Options{})
	err := s.Start(context.Background())
	if info := s.Info(); err == nil || info.Error == nil || info.Error.Code != sb.CodeBlockedAddress ||
		!strings.Contains(info.Error.Message, "0.0.0.0") {
		t.Fatalf("by default: Start %v; error %+v; want %s naming 0.0.0.0", err, info.Error, sb.CodeBlockedAddress)
	}

	allowed, _ := badInputSession(t, cfg, upstream.Options{Egress: egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")})})
	if err := allowed.Start(context.Background()); err != nil {
		t.Fatalf("with 0.0.0.0/32 allowed: %v", err)
	}
}
