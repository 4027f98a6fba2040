package client

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// What an edit does not name stays as read, secrets included; what it
// names changes, and a command turns a remote server into a stdio one.
func TestServerEditChangesOnlyWhatItNames(t *testing.T) {
	read := func() *sb.ServerConfig {
		return &sb.ServerConfig{Name: "x", Transport: sb.TransportStdio, Command: "/bin/srv", Args: []string{"-v"},
			Env: map[string]string{"TOKEN": sb.SecretMask, "MODE": "a"}, CallTimeoutMS: 5000,
			Sandbox: &sb.SandboxConfig{Mounts: []sb.Mount{{Host: "/srv"}}}}
	}
	cfg := read()
	if err := (&ServerEdit{}).Apply(cfg); err != nil || !reflect.DeepEqual(cfg, read()) {
		t.Fatalf("an empty edit: %+v, %v; want the config as read", cfg, err)
	}
	d, none := 2*time.Minute, []string(nil)
	e := &ServerEdit{Args: &none, Env: map[string]string{"MODE": "b"}, UnsetEnv: []string{"TOKEN"}, CallTimeout: &d}
	if err := e.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	want := read()
	want.Args, want.Env, want.CallTimeoutMS = nil, map[string]string{"MODE": "b"}, 120000
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("edit: %+v\nwant %+v", cfg, want)
	}
	if err := (&ServerEdit{UnsetEnv: []string{"NOPE"}}).Apply(read()); err == nil || err.Error() != "--unset-env NOPE: the server has no env variable NOPE" {
		t.Errorf("unsetting a variable the server lacks: %v", err)
	}

	url := "https://x.example/mcp"
	remote := read()
	if err := (&ServerEdit{URL: &url, Headers: map[string]string{"A": "1"}, OAuth: &OAuthEdit{}}).Apply(remote); err != nil {
		t.Fatal(err)
	}
	if remote.Transport != sb.TransportRemote || remote.Command != "" || remote.Args != nil || remote.Env != nil || remote.URL != url ||
		remote.Headers["A"] != "1" || remote.OAuth == nil {
		t.Errorf("--url on a stdio server: %+v; want a remote server of the URL, with an oauth block", remote)
	}
	command := "/bin/other"
	if err := (&ServerEdit{Command: &command}).Apply(remote); err != nil || remote.Transport != sb.TransportStdio || remote.URL != "" || remote.Headers != nil {
		t.Errorf("--command on a remote server: %+v, %v; want a stdio server", remote, err)
	}
	if err := (&ServerEdit{OAuth: &OAuthEdit{}}).Apply(read()); err == nil {
		t.Error("--oauth on a stdio server was accepted")
	}
}

func TestEditErrorSaysWhatToDo(t *testing.T) {
	conflict := &Error{Code: sb.CodeConflict, Message: "changed"}
	if err := EditError(conflict); !errors.Is(err, conflict) || !strings.Contains(err.Error(), "run the edit again") {
		t.Errorf("a conflict: %v", err)
	}
	masked := &Error{Code: sb.CodeInvalidConfig, Message: `env TOKEN is "***"`}
	if err := EditError(masked); !strings.Contains(err.Error(), "give each again: --env K=V") {
		t.Errorf("a masked secret sent back: %v", err)
	}
	other := &Error{Code: sb.CodeInvalidConfig, Message: "bad name"}
	if err := EditError(other); err != other {
		t.Errorf("another refusal: %v, want it as is", err)
	}
}

func TestEditAllowReplacesOrRemovesTheAllowlist(t *testing.T) {
	cfg := &sb.ServerConfig{Name: "x", Transport: sb.TransportStdio, Command: "npx",
		Sandbox: &sb.SandboxConfig{Mounts: []sb.Mount{{Host: "/srv"}}, Network: &sb.SandboxNetwork{Allow: []string{"a.example"}}}}
	if err := editAllow(cfg, []string{"b.example:443"}); err != nil || !reflect.DeepEqual(cfg.Sandbox.Network.Allow, []string{"b.example:443"}) ||
		len(cfg.Sandbox.Mounts) != 1 {
		t.Fatalf("--allow: %+v, %v; want the allowlist replaced, the mounts kept", cfg.Sandbox, err)
	}
	if err := editAllow(cfg, nil); err != nil || cfg.Sandbox.Network != nil {
		t.Fatalf("--clear-allow: %+v, %v; want no network field (the default, on)", cfg.Sandbox, err)
	}
	off := &sb.ServerConfig{Name: "x", Transport: sb.TransportStdio, Command: "npx", Sandbox: &sb.SandboxConfig{Network: &sb.SandboxNetwork{Off: true}}}
	if editAllow(off, nil); !off.Sandbox.Network.Off {
		t.Error("--clear-allow turned a server's network on")
	}
	bare := &sb.ServerConfig{Name: "x", Transport: sb.TransportStdio, Command: "npx"}
	if err := editAllow(bare, []string{"10.0.0.0/8"}); err != nil || bare.Sandbox == nil || bare.Sandbox.Network.Allow[0] != "10.0.0.0/8" {
		t.Errorf("--allow on a server without a sandbox field: %+v, %v", bare.Sandbox, err)
	}
	remote := &sb.ServerConfig{Name: "x", Transport: sb.TransportRemote, URL: "https://x.example/mcp"}
	if err := editAllow(remote, []string{"a.example"}); err == nil {
		t.Error("--allow on a remote server was accepted")
	}
}
