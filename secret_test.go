package switchboard

import (
	"errors"
	"strings"
	"testing"
)

func TestRedactorRemovesSecretsUserinfoAndCredentialParams(t *testing.T) {
	r := NewRedactor(&ServerConfig{
		Env:     map[string]string{"A": "longer-secret", "B": "secret", "SHORT": "on"},
		Headers: map[string]string{"Authorization": "Bearer tok-123"},
	})
	for in, want := range map[string]string{
		"token longer-secret and secret":               "token *** and ***",
		"sent Bearer tok-123":                          "sent ***",
		"short values stay: on":                        "short values stay: on",
		"GET https://bob:hunter2@h.example/mcp failed": "GET https://***@h.example/mcp failed",
		"https://h/mcp?access_token=abc&page=2":        "https://h/mcp?access_token=***&page=2",
		"https://h/mcp?page=2&apiKey=abc":              "https://h/mcp?page=2&apiKey=***",
		"nothing to hide":                              "nothing to hide",
		"GET /mcp?token=abc failed":                    "GET /mcp?token=*** failed",
		"a=1 & b=2":                                    "a=1 & b=2",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// A line with nothing to redact, as most of a server's stderr, costs no
// allocation: the regexps allocated 4 or more per line of every stdio
// server's stderr.
func TestRedactorAllocatesNothingForAPlainLine(t *testing.T) {
	r := NewRedactor(&ServerConfig{Env: map[string]string{"A": "longer-secret"}})
	line := "testserver: call echo"
	if n := testing.AllocsPerRun(100, func() { _ = r.String(line) }); n != 0 {
		t.Errorf("String(%q): %v allocations, want 0", line, n)
	}
}

// MaskURL (views) and Redactor (messages) must hide the same query
// parameters: one list of credential words serves both.
func TestMaskURLAndRedactorAgreeOnCredentialParams(t *testing.T) {
	r := NewRedactor(&ServerConfig{})
	for _, name := range []string{"access_token", "apiKey", "client_secret", "password", "sig", "X-Auth", "credential"} {
		u := "https://h.example/mcp?" + name + "=v4lue"
		if got := MaskURL(u); got == u {
			t.Errorf("MaskURL kept %s", name)
		}
		if got := r.String(u); got == u {
			t.Errorf("Redactor kept %s", name)
		}
	}
	u := "https://h.example/mcp?page=2"
	if MaskURL(u) != u || r.String(u) != u {
		t.Errorf("a plain parameter was hidden: %q, %q", MaskURL(u), r.String(u))
	}
}

// A masked secret sent back is restored only for the destination it was
// stored for: the same URL origin, or the same command and arguments.
func TestUnmaskKeepsSecretsOnlyForTheSameDestination(t *testing.T) {
	remote := &ServerConfig{Name: "r", Transport: TransportRemote, URL: "https://api.example/mcp",
		Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	stdio := &ServerConfig{Name: "s", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "server"},
		Env: map[string]string{"API_KEY": "s3cret"}}
	for _, tc := range []struct {
		name      string
		prev      *ServerConfig
		edit      func(*ServerConfig)
		wantField string // "" = restored
	}{
		{"same URL", remote, func(c *ServerConfig) {}, ""},
		{"another path, same origin", remote, func(c *ServerConfig) { c.URL = "https://api.example/v2/mcp" }, ""},
		{"default port spelled out", remote, func(c *ServerConfig) { c.URL = "https://API.example:443/mcp" }, ""},
		{"another host", remote, func(c *ServerConfig) { c.URL = "https://collector.example/mcp" }, "headers"},
		{"another scheme", remote, func(c *ServerConfig) { c.URL = "http://api.example/mcp" }, "headers"},
		{"another port", remote, func(c *ServerConfig) { c.URL = "https://api.example:8443/mcp" }, "headers"},
		{"same command", stdio, func(c *ServerConfig) {}, ""},
		{"another command", stdio, func(c *ServerConfig) { c.Command = "sh" }, "env"},
		{"other arguments", stdio, func(c *ServerConfig) { c.Args = []string{"-c", "echo $API_KEY >&2"} }, "env"},
		{"stdio to remote", stdio, func(c *ServerConfig) {
			c.Transport, c.Command, c.Args, c.URL = TransportRemote, "", nil, "https://x.example"
			c.Headers, c.Env = map[string]string{"API_KEY": SecretMask}, nil
		}, "headers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.prev.Masked()
			tc.edit(c)
			got, err := c.Unmask(tc.prev)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Unmask: %v", err)
				}
				if got.Headers["Authorization"] != tc.prev.Headers["Authorization"] || got.Env["API_KEY"] != tc.prev.Env["API_KEY"] {
					t.Fatalf("secrets not restored: %+v", got)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Fields[0].Field != tc.wantField || !strings.Contains(err.Error(), `is "***" but`) {
				t.Fatalf("Unmask = %v, want a %s field error", err, tc.wantField)
			}
		})
	}
}

// Secrets in URLs that views used to show in clear: a token as the user
// name alone, pass/pwd parameters, a key in the path; in free text too.
func TestURLCredentialsAreMaskedEverywhere(t *testing.T) {
	r := NewRedactor(&ServerConfig{})
	for raw, want := range map[string]string{
		"https://ghp_abc123@h.example/mcp":                     "https://***@h.example/mcp",
		"https://h.example/mcp?pass=x&pwd=y&q=1":               "https://h.example/mcp?pass=***&pwd=***&q=1",
		"https://h.example/mcp/sk-ak-9f8e7d6c5b4a3f2e1d0c/sse": "https://h.example/mcp/***/sse",
	} {
		if got := MaskURL(raw); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", raw, got, want)
		}
		if got := r.String("GET " + raw + " failed"); got != "GET "+want+" failed" {
			t.Errorf("Redactor: %q", got)
		}
	}
}

// A write that keeps the command but makes it load other code (LD_PRELOAD,
// NODE_OPTIONS, PYTHONPATH...) or loosens its sandbox is a new destination
// for the stored secrets: "***" is refused, and the error says why.
// Tightening, or sending the loader variable back as shown, keeps them.
func TestUnmaskRefusesLoaderVariablesAndALoosenedSandbox(t *testing.T) {
	off := false
	stdio := &ServerConfig{Name: "s", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "server"},
		Env:     map[string]string{"API_KEY": "s3cret", "LD_LIBRARY_PATH": "/opt/lib"},
		Sandbox: &SandboxConfig{Network: &SandboxNetwork{Off: true}, Mounts: []Mount{{Host: "/data", Mode: MountReadOnly}}}}
	for _, tc := range []struct {
		name string
		edit func(*ServerConfig)
		want string // "" = restored; else a word of the error
	}{
		{"unchanged", func(c *ServerConfig) {}, ""},
		{"a plain variable added", func(c *ServerConfig) { c.Env["DEBUG"] = "1" }, ""},
		{"network still off, a mount dropped", func(c *ServerConfig) { c.Sandbox.Mounts = nil }, ""},
		{"LD_PRELOAD added", func(c *ServerConfig) { c.Env["LD_PRELOAD"] = "/tmp/x.so" }, "LD_PRELOAD"},
		{"LD_LIBRARY_PATH changed", func(c *ServerConfig) { c.Env["LD_LIBRARY_PATH"] = "/tmp" }, "LD_LIBRARY_PATH"},
		{"NODE_OPTIONS added", func(c *ServerConfig) { c.Env["NODE_OPTIONS"] = "--require /tmp/x.js" }, "NODE_OPTIONS"},
		{"PYTHONPATH added", func(c *ServerConfig) { c.Env["PYTHONPATH"] = "/tmp" }, "PYTHONPATH"},
		{"BASH_ENV added", func(c *ServerConfig) { c.Env["BASH_ENV"] = "/tmp/rc" }, "BASH_ENV"},
		{"DYLD_INSERT_LIBRARIES added", func(c *ServerConfig) { c.Env["DYLD_INSERT_LIBRARIES"] = "/tmp/x" }, "DYLD_INSERT_LIBRARIES"},
		{"sandbox off", func(c *ServerConfig) { c.Sandbox.Enabled = &off }, "sandbox"},
		{"network on", func(c *ServerConfig) { c.Sandbox.Network = &SandboxNetwork{} }, "sandbox"},
		{"network to an allowlist", func(c *ServerConfig) { c.Sandbox.Network = &SandboxNetwork{Allow: []string{"example.org:443"}} }, "sandbox"},
		{"network back to the default", func(c *ServerConfig) { c.Sandbox.Network = nil }, "sandbox"},
		{"a mount added", func(c *ServerConfig) { c.Sandbox.Mounts = append(c.Sandbox.Mounts, Mount{Host: "/home"}) }, "sandbox"},
		{"a mount made writable", func(c *ServerConfig) { c.Sandbox.Mounts[0].Mode = MountReadWrite }, "sandbox"},
		{"no sandbox config: the default profile", func(c *ServerConfig) { c.Sandbox = nil }, "sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := stdio.Masked()
			if c.Sandbox != nil {
				sb := *c.Sandbox
				sb.Mounts = append([]Mount(nil), sb.Mounts...)
				c.Sandbox = &sb
			}
			tc.edit(c)
			got, err := c.Unmask(stdio)
			if tc.want == "" {
				if err != nil || got.Env["API_KEY"] != "s3cret" || got.Env["LD_LIBRARY_PATH"] != "/opt/lib" {
					t.Fatalf("Unmask: %v, env %v; want the secrets restored", err, got.Env)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Fields[0].Field != "env" || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "send the value again") {
				t.Fatalf("Unmask = %v, want an env field error naming %s", err, tc.want)
			}
		})
	}
}

// Credential-like arguments are masked in views (and redacted from logs)
// as env values are; a write that sends them back as shown keeps the
// stored ones, and one that moves a masked argument is refused.
func TestCredentialArgumentsAreMasked(t *testing.T) {
	args := []string{"-y", "@acme/server", "--token=t0ps3cr3t", "--api-key", "k3yk3yk3y", "--port", "8080",
		"sk-abcdefghijklmnop1234", "ghp_0123456789abcdefABCDEF", "https://bob:hunter2@db.example/x", "--verbose", "--auth", "--debug"}
	want := []string{"-y", "@acme/server", "--token=***", "--api-key", "***", "--port", "8080",
		"***", "***", "https://bob:***@db.example/x", "--verbose", "--auth", "--debug"}
	cfg := &ServerConfig{Name: "s", Transport: TransportStdio, Command: "npx", Args: args, Env: map[string]string{"A": "secret-a"}}
	view := cfg.Masked()
	if strings.Join(view.Args, " ") != strings.Join(want, " ") {
		t.Fatalf("masked args\n %q\nwant\n %q", view.Args, want)
	}
	if strings.Join(cfg.Args, " ") != strings.Join(args, " ") {
		t.Fatal("Masked changed the config's own args")
	}
	got, err := view.Unmask(cfg)
	if err != nil || strings.Join(got.Args, " ") != strings.Join(args, " ") || got.Env["A"] != "secret-a" {
		t.Fatalf("Unmask of the view: %v, args %q; want the stored ones", err, got.Args)
	}
	moved := view.Clone()
	moved.Args = append([]string{"--new"}, moved.Args...)
	var ve *ValidationError
	if _, err := moved.Unmask(cfg); !errors.As(err, &ve) || ve.Fields[0].Field != "args" {
		t.Fatalf("Unmask with the masked arguments moved: %v, want an args field error", err)
	}
	r := NewRedactor(cfg)
	if line := r.String("started with --token=t0ps3cr3t and k3yk3yk3y, key ghp_0123456789abcdefABCDEF"); strings.Contains(line, "t0ps3cr3t") ||
		strings.Contains(line, "k3yk3yk3y") || strings.Contains(line, "ghp_") {
		t.Errorf("redacted line %q still shows an argument's secret", line)
	}
}
