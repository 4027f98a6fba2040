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
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
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
