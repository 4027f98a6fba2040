package daemon

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
)

// A timeout or cap of 0 is "off", which the gateway spells negative (its
// zero value is its default); a value it cannot keep is refused naming
// the flag.
func TestEndpointAndSessionsBecomeTheGatewayOptions(t *testing.T) {
	e := Endpoint{ReadyTimeout: 0, MaxTotalTimeout: time.Minute, Mode: sb.ModeSearch}
	o, err := e.Options()
	if err != nil || o.ReadyTimeout != -1 || o.MaxTotalTimeout != time.Minute || o.MCPMode != sb.ModeSearch {
		t.Fatalf("Options: %+v, %v; want ready -1, max total 1m, search", o, err)
	}
	s := Sessions{Max: 0, PerAddress: 3, PerPrincipal: 0, Timeout: time.Hour}
	if err := s.Apply(&o); err != nil || o.MaxSessions != -1 || o.MaxSessionsPerAddress != 3 || o.MaxSessionsPerPrincipal != -1 || o.SessionTimeout != time.Hour {
		t.Fatalf("Apply: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		err  error
		flag string
	}{
		{first((&Endpoint{ReadyTimeout: -1, Mode: sb.ModeCatalog}).Options()), "--ready-timeout"},
		{first((&Endpoint{MaxTotalTimeout: sb.MaxInvokeTimeout + 1, Mode: sb.ModeCatalog}).Options()), "--max-total-timeout"},
		{first((&Endpoint{Mode: "all"}).Options()), "--mcp-mode"},
		{(&Sessions{Max: -1, Timeout: time.Hour}).Apply(&gateway.Options{}), "--max-mcp-sessions "},
		{(&Sessions{PerAddress: -1, Timeout: time.Hour}).Apply(&gateway.Options{}), "--max-mcp-sessions-per-address"},
		{(&Sessions{PerPrincipal: -1, Timeout: time.Hour}).Apply(&gateway.Options{}), "--max-mcp-sessions-per-principal"},
		{(&Sessions{}).Apply(&gateway.Options{}), "--mcp-session-timeout"},
		{(&Config{ResyncInterval: -1, IdleTimeout: time.Minute}).Check(), "--resync-interval"},
		{(&Config{}).Check(), "--idle-timeout"},
		{(&Config{IdleTimeout: time.Minute, MaxConnsPerAddress: -1}).Check(), "--max-connections-per-address"},
		{first(AuditFrom(true, -1, 0)), "--audit-retention-days"},
		{first(AuditFrom(true, 0, -1)), "--audit-max-rows"},
		{first(UpstreamNetworks([]string{"10.0.0.0/8", "metadata"})), `--allow-upstream-network "metadata"`},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.flag) {
			t.Errorf("%v; want an error naming %s", tc.err, tc.flag)
		}
	}
	if err := (&Config{IdleTimeout: time.Minute}).Check(); err != nil {
		t.Errorf("Check of a config within bounds: %v", err)
	}
}

func first[T any](_ T, err error) error { return err }

func TestUpstreamNetworksTakesCIDRsAndAddresses(t *testing.T) {
	got, err := UpstreamNetworks([]string{"169.254.0.0/16", "169.254.169.254", "fd00::1"})
	want := []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("169.254.169.254/32"), netip.MustParsePrefix("fd00::1/128")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("UpstreamNetworks: %v, %v; want %v", got, err, want)
	}
}

func TestAuditFromKeepsTheRetention(t *testing.T) {
	c, err := AuditFrom(false, 7, 100)
	if err != nil || !c.Off || c.Retention.MaxAge != 7*24*time.Hour || c.Retention.MaxRows != 100 {
		t.Errorf("AuditFrom(false, 7, 100): %+v, %v", c, err)
	}
}
