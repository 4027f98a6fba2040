package switchboard

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestValidateNamesEveryBadField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    ServerConfig
		fields []string // every field the error must name; empty = valid
	}{
		{"minimal stdio", ServerConfig{Name: "fs", Transport: TransportStdio, Command: "npx"}, nil},
		{"minimal remote", ServerConfig{Name: "gh-1", Transport: TransportRemote, URL: "https://x.example/mcp"}, nil},
		{"empty", ServerConfig{}, []string{"name", "transport"}},
		{"uppercase name", ServerConfig{Name: "GitHub", Transport: TransportStdio, Command: "x"}, []string{"name"}},
		{"double underscore", ServerConfig{Name: "a__b", Transport: TransportStdio, Command: "x"}, []string{"name"}},
		{"name too long", ServerConfig{Name: strings.Repeat("a", 49), Transport: TransportStdio, Command: "x"}, []string{"name"}},
		{"stdio without command", ServerConfig{Name: "a", Transport: TransportStdio}, []string{"command"}},
		{"stdio with url", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", URL: "http://h/"}, []string{"url"}},
		{"remote without url", ServerConfig{Name: "a", Transport: TransportSSE}, []string{"url"}},
		{"relative url", ServerConfig{Name: "a", Transport: TransportRemote, URL: "/mcp"}, []string{"url"}},
		{"ftp url", ServerConfig{Name: "a", Transport: TransportRemote, URL: "ftp://h/mcp"}, []string{"url"}},
		{"remote with command", ServerConfig{Name: "a", Transport: TransportRemote, URL: "http://h/", Command: "x"}, []string{"command"}},
		{"unknown transport", ServerConfig{Name: "a", Transport: "websocket"}, []string{"transport"}},
		{"bad env key", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Env: map[string]string{"A-B": "1"}}, []string{"env"}},
		{"header injection", ServerConfig{Name: "a", Transport: TransportRemote, URL: "http://h/", Headers: map[string]string{"X": "a\r\nB: c"}}, []string{"headers"}},
		{"negative timeout", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", CallTimeoutMS: -1}, []string{"call_timeout_ms"}},
		{"absurd timeout", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", StartupTimeoutMS: 1 << 40}, []string{"startup_timeout_ms"}},
		{"bad protocol", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", ProtocolVersion: "latest"}, []string{"protocol_version"}},
		{"per-client scope", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", SessionScope: SessionPerClient}, nil},
		{"shared scope", ServerConfig{Name: "a", Transport: TransportRemote, URL: "http://h/", SessionScope: SessionShared}, nil},
		{"unknown scope", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", SessionScope: "per-user"}, []string{"session_scope"}},
		{"default sandbox", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: &SandboxConfig{}}, nil},
		{"full sandbox", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: &SandboxConfig{
			Network: &SandboxNetwork{Off: true}, MemoryMB: 256, Pids: 64, CPUSeconds: 30, Workspace: WorkspaceIsolated,
			Mounts: []Mount{{Host: "/srv/data", Mode: MountReadWrite}, {Host: "/etc/app.conf", Path: "/opt/app.conf"}}}}, nil},
		{"sandbox without limits", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: &SandboxConfig{
			MemoryMB: -1, Pids: -1, CPUSeconds: -1}}, nil},
		{"sandbox on a remote server", ServerConfig{Name: "a", Transport: TransportRemote, URL: "http://h/", Sandbox: &SandboxConfig{}},
			[]string{"sandbox"}},
		{"absurd sandbox limits", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: &SandboxConfig{
			MemoryMB: 8, Pids: -2, CPUSeconds: 1 << 40, Workspace: "private"}},
			[]string{"sandbox.memory_mb", "sandbox.pids", "sandbox.cpu_seconds", "sandbox.workspace"}},
		{"bad mounts", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: &SandboxConfig{Mounts: []Mount{
			{Host: "data"}, {Host: "/srv/../etc"}, {Host: "/srv", Path: "/"}, {Host: "/srv", Path: "/proc/1"},
			{Host: "/srv", Path: SandboxWorkspacePath + "/x"}, {Host: "/a", Path: "/m"}, {Host: "/b", Path: "/m"},
			{Host: "/srv", Path: "/srv2", Mode: "rwx"}, {Path: "/x"}}}},
			[]string{"sandbox.mounts[0]", "sandbox.mounts[1]", "sandbox.mounts[2]", "sandbox.mounts[3]", "sandbox.mounts[4]",
				"sandbox.mounts[6]", "sandbox.mounts[7]", "sandbox.mounts[8]"}},
		{"network allowlist", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: &SandboxConfig{
			Network: &SandboxNetwork{Allow: []string{"api.github.com:443", "example.org", "10.1.2.0/24", "10.1.3.0/24:5432", "192.0.2.7", "192.0.2.8:80"}}}}, nil},
		{"bad network allowlist", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: &SandboxConfig{
			Network: &SandboxNetwork{Allow: []string{"api.github.com:0", "api.github.com:https", "[::1]:443", "2001:db8::/32",
				"10.1.2.3/24", "10.1.2", "-bad.example", "a b", "example.org:443", "10.0.0.0/8:70000"}}}},
			[]string{"sandbox.network.allow[0]", "sandbox.network.allow[1]", "sandbox.network.allow[2]", "sandbox.network.allow[3]",
				"sandbox.network.allow[4]", "sandbox.network.allow[5]", "sandbox.network.allow[6]", "sandbox.network.allow[7]",
				"sandbox.network.allow[9]"}},
		{"network off with an allowlist", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: &SandboxConfig{
			Network: &SandboxNetwork{Off: true, Allow: []string{"example.org"}}}}, []string{"sandbox.network"}},
		{"bad retry", ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Retry: &RetryConfig{MaxAttempts: -1, DelaysMS: []int64{-5}}},
			[]string{"retry.max_attempts", "retry.delays_ms[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			var got []string
			for _, f := range ve.Fields {
				got = append(got, f.Field)
			}
			for _, want := range tc.fields {
				found := false
				for _, g := range got {
					found = found || g == want
				}
				if !found {
					t.Errorf("error names fields %v, missing %q: %v", got, want, err)
				}
			}
		})
	}
}

// A bad session_scope is refused with a message that names the allowed
// values, and a good one survives the JSON the stores keep.
func TestSessionScopeIsValidatedAndKept(t *testing.T) {
	bad := ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", SessionScope: "Per-Client"}
	var ve *ValidationError
	if err := bad.Validate(); !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "session_scope" ||
		!strings.Contains(ve.Fields[0].Message, `"shared"`) || !strings.Contains(ve.Fields[0].Message, `"per-client"`) ||
		!strings.Contains(ve.Fields[0].Message, `"Per-Client"`) {
		t.Fatalf("Validate = %v; want one session_scope error naming the allowed values and the bad one", err)
	}
	for _, scope := range []SessionScope{"", SessionShared, SessionPerClient} {
		in := ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", SessionScope: scope}
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if scope == "" && strings.Contains(string(data), "session_scope") {
			t.Errorf("an unset scope is written: %s", data)
		}
		var out ServerConfig
		if err := json.Unmarshal(data, &out); err != nil || out.SessionScope != scope {
			t.Errorf("%q: decoded %q (%v) from %s", scope, out.SessionScope, err, data)
		}
	}
}

func TestDefaults(t *testing.T) {
	stdio := ServerConfig{Transport: TransportStdio}
	remote := ServerConfig{Transport: TransportRemote}
	if stdio.StartupTimeout() != 120*time.Second || remote.StartupTimeout() != 30*time.Second {
		t.Errorf("startup timeouts %v %v", stdio.StartupTimeout(), remote.StartupTimeout())
	}
	if stdio.CallTimeout() != 60*time.Second || stdio.MaxTotalTimeout() != 0 {
		t.Errorf("call timeouts %v %v", stdio.CallTimeout(), stdio.MaxTotalTimeout())
	}
	if stdio.MaxAttempts() != 4 || stdio.SlowRetry() != time.Minute || len(stdio.RetryDelays()) != 3 || stdio.RetryDelays()[2] != 8*time.Second {
		t.Errorf("retry defaults %d %v %v", stdio.MaxAttempts(), stdio.SlowRetry(), stdio.RetryDelays())
	}
	if !stdio.IsEnabled() {
		t.Error("a config without enabled is disabled")
	}
}

func TestCloneIsDeep(t *testing.T) {
	on := true
	c := &ServerConfig{Name: "a", Enabled: &on, Args: []string{"x"}, Env: map[string]string{"K": "v"},
		Headers: map[string]string{"H": "v"}, Retry: &RetryConfig{DelaysMS: []int64{1}},
		Sandbox: &SandboxConfig{Enabled: new(true), Network: &SandboxNetwork{Allow: []string{"a.example"}}, Mounts: []Mount{{Host: "/a"}}}}
	d := c.Clone()
	*d.Enabled = false
	d.Args[0], d.Env["K"], d.Headers["H"], d.Retry.DelaysMS[0] = "y", "w", "w", 2
	*d.Sandbox.Enabled, d.Sandbox.Network.Allow[0], d.Sandbox.Mounts[0].Host = false, "b.example", "/b"
	if !*c.Enabled || c.Args[0] != "x" || c.Env["K"] != "v" || c.Headers["H"] != "v" || c.Retry.DelaysMS[0] != 1 ||
		!*c.Sandbox.Enabled || c.Sandbox.Network.Allow[0] != "a.example" || c.Sandbox.Mounts[0].Host != "/a" {
		t.Fatalf("Clone shares memory with the original: %+v", c)
	}
}

// The sandbox field is written only when set, an empty object (the default
// profile, asked for explicitly) survives the stores' JSON as non-nil, and
// an explicit "enabled": false is kept rather than read back as "default".
func TestSandboxConfigSurvivesJSON(t *testing.T) {
	for _, tc := range []struct {
		in   *SandboxConfig
		json string // the sandbox field as written; "" = absent
	}{
		{nil, ""},
		{&SandboxConfig{}, `"sandbox":{}`},
		{&SandboxConfig{Enabled: new(false)}, `"sandbox":{"enabled":false}`},
		{&SandboxConfig{Network: &SandboxNetwork{}}, `"sandbox":{"network":true}`},
		{&SandboxConfig{Network: &SandboxNetwork{Allow: []string{"api.github.com:443", "10.1.2.0/24"}}},
			`"sandbox":{"network":{"allow":["api.github.com:443","10.1.2.0/24"]}}`},
		{&SandboxConfig{Network: &SandboxNetwork{Off: true}, Mounts: []Mount{{Host: "/srv", Mode: MountReadWrite}}, Workspace: WorkspaceIsolated},
			`"sandbox":{"network":false,"mounts":[{"host":"/srv","mode":"rw"}],"workspace":"isolated"}`},
	} {
		in := ServerConfig{Name: "a", Transport: TransportStdio, Command: "x", Sandbox: tc.in}
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(data); (tc.json == "" && strings.Contains(got, "sandbox")) || !strings.Contains(got, tc.json) {
			t.Errorf("%+v written as %s, want %s in it", tc.in, got, tc.json)
		}
		var out ServerConfig
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out.Sandbox, tc.in) {
			t.Errorf("%s read back as %+v", data, out.Sandbox)
		}
	}
}

func TestMaskURLAndUnmask(t *testing.T) {
	for in, want := range map[string]string{
		"https://h.example/mcp":                                "https://h.example/mcp",
		"https://bob:hunter2@h.example/mcp":                    "https://bob:***@h.example/mcp",
		"https://h.example/mcp?api_key=k&page=2":               "https://h.example/mcp?api_key=***&page=2",
		"https://h.example/mcp?AccessToken=k&x=y":              "https://h.example/mcp?AccessToken=***&x=y",
		"https://tok3n@h.example/mcp":                          "https://***@h.example/mcp",
		"https://h.example/mcp?user=me&pass=p&pwd=q":           "https://h.example/mcp?user=me&pass=***&pwd=***",
		"https://h.example/mcp/sk-ak-9f8e7d6c5b4a3f2e1d0c/sse": "https://h.example/mcp/***/sse",
		"https://h.example/v1/mcp-server/sse":                  "https://h.example/v1/mcp-server/sse",
	} {
		if got := MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
	prev := &ServerConfig{Name: "r", Transport: TransportRemote, URL: "https://bob:hunter2@h.example/mcp?token=abc"}
	shown := prev.Masked()
	if shown.URL == prev.URL {
		t.Fatalf("the URL was not masked: %s", shown.URL)
	}
	back, err := shown.Unmask(prev)
	if err != nil || back.URL != prev.URL {
		t.Fatalf("Unmask(Masked) = %q, %v; want the stored URL", back.URL, err)
	}
	edited := shown.Clone()
	edited.URL = "https://h.example/other"
	if back, _ := edited.Unmask(prev); back.URL != "https://h.example/other" {
		t.Fatalf("an edited URL was replaced: %q", back.URL)
	}
}

func TestConfigRefusesInvalidUTF8(t *testing.T) {
	cfg := &ServerConfig{Name: "x", Transport: TransportStdio, Command: "/bin/\xff", Args: []string{"ok", "\xc3"}}
	var ve *ValidationError
	if err := cfg.Validate(); !errors.As(err, &ve) || !strings.Contains(err.Error(), "command: must be valid UTF-8") || !strings.Contains(err.Error(), "args: must be valid UTF-8") {
		t.Fatalf("Validate = %v", err)
	}
}

// The network field reads as true, false or an allowlist object, and
// refuses what would be read two ways.
func TestSandboxNetworkJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *SandboxNetwork
	}{
		{`true`, &SandboxNetwork{}},
		{`false`, &SandboxNetwork{Off: true}},
		{`{"allow":["example.org:443"]}`, &SandboxNetwork{Allow: []string{"example.org:443"}}},
		{`{}`, &SandboxNetwork{}},
		{`{"allow":[]}`, nil},
		{`{"allow":["x"],"deny":["y"]}`, nil},
		{`"on"`, nil},
	} {
		var c SandboxConfig
		err := json.Unmarshal([]byte(`{"network":`+tc.in+`}`), &c)
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%s read as %+v; want an error", tc.in, c.Network)
		case tc.want != nil && (err != nil || !reflect.DeepEqual(c.Network, tc.want)):
			t.Errorf("%s read as %+v, %v; want %+v", tc.in, c.Network, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		"API.GitHub.com:443": "api.github.com:443", "10.1.2.0/24": "10.1.2.0/24", "192.0.2.7/32:80": "192.0.2.7:80", "192.0.2.7": "192.0.2.7",
	} {
		a, err := ParseNetworkAllow(in)
		if err != nil || a.String() != want {
			t.Errorf("ParseNetworkAllow(%q) = %v, %v; want %s", in, a, err, want)
		}
	}
}

// An invalid name is refused with the nearest valid one, not a regular
// expression: "GitHub" gets "github".
func TestInvalidNameSuggestsTheNearestValidOne(t *testing.T) {
	for name, want := range map[string]string{
		"GitHub":         `name: must be lowercase letters, digits and '-' (at most 48, the first a letter or digit): try "github"`,
		"My Server_2":    `try "my-server-2"`,
		"-lead":          `try "lead"`,
		"-":              "(at most 48, the first a letter or digit)",
		"x" + "." + "io": `try "x-io"`,
	} {
		err := (&ServerConfig{Name: name, Transport: TransportStdio, Command: "x"}).Validate()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "^[a-z") {
			t.Errorf("name %q: %v; want %q and no regular expression", name, err, want)
		}
	}
}

// An unsandboxed server's runtime view has no "network": false, which
// would say it reaches no network when it reaches all of it; a sandboxed
// one says which.
func TestUnsandboxedViewSaysNothingOfTheNetwork(t *testing.T) {
	for _, tc := range []struct {
		info SandboxInfo
		want string
	}{
		{SandboxInfo{Enabled: false, Reason: "sandbox.enabled is false"}, `{"enabled":false,"reason":"sandbox.enabled is false"}`},
		{SandboxInfo{Enabled: true, Network: false}, `{"enabled":true,"network":false}`},
		{SandboxInfo{Enabled: true, Network: true}, `{"enabled":true,"network":true}`},
	} {
		b, err := json.Marshal(RuntimeInfo{Sandbox: &tc.info})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"sandbox":`+tc.want) {
			t.Errorf("%+v: %s, want sandbox %s", tc.info, b, tc.want)
		}
	}
}
