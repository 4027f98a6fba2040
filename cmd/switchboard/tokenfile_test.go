package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/internal/daemontest"
)

// TestServeTokenFile: serve takes its credential from --token-file, a
// file of this user's of mode 0600, and requires exactly it; a file its
// group or others may read is refused before serve listens, and so is
// --token with --token-file; --token itself works but is warned about,
// being on a command line every uid can read. The client verbs' own
// --token-file reads the token the same way.
func TestServeTokenFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("file-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, daemontest.Options{TokenFile: file})
	if d.serve.Token != "file-token-0123456789" {
		t.Fatalf("the harness read %q", d.serve.Token)
	}
	for tok, want := range map[string]int{"file-token-0123456789": http.StatusOK, "wrong": http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, d.addr+"/api/v1/servers", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: %d, want %d", tok, resp.StatusCode, want)
		}
	}
	if strings.Contains(d.serve.Logs(), "--token is on serve's command line") {
		t.Errorf("serve warned about --token without one:\n%s", d.serve.Logs())
	}

	// The CLI's --token-file: the same file works, an open one is refused.
	stranger := &target{addr: d.addr} // no credential file of its own
	stranger.ok(t, "server", "list", "--token-file", file)
	stranger.fail(t, []string{"401"}, "server", "list")

	refused := func(want string, args ...string) {
		t.Helper()
		cmd := daemontest.Command(t, append([]string{"serve", "--listen", "127.0.0.1:0", "--db", "sqlite:" + filepath.Join(dir, "sb.db")}, args...)...)
		cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A serve that did not refuse would run on: stop it.
		stop := time.AfterFunc(verbTimeout, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		err := cmd.Wait()
		stop.Stop()
		if err == nil || !strings.Contains(out.String(), want) {
			t.Errorf("serve %s: %v, want a refusal saying %q:\n%s", strings.Join(args, " "), err, want, out.String())
		}
	}
	open := filepath.Join(dir, "open-token")
	if err := os.WriteFile(open, []byte("open-token-0123456789\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused("has mode 0644", "--token-file", open)
	refused("--token and --token-file", "--token-file", file, "--token", "x")
	refused("no such file", "--token-file", filepath.Join(dir, "missing"))

	stranger.fail(t, []string{"has mode 0644", "chmod 600"}, "server", "list", "--token-file", open)
	stranger.fail(t, []string{"--token and --token-file"}, "server", "list", "--token-file", file, "--token", "x")

	withFlag := startServe(t, daemontest.Options{Token: "flag-token-0123456789"})
	if !strings.Contains(withFlag.serve.Logs(), "--token is on serve's command line, where every local user can read it") {
		t.Errorf("serve --token did not warn:\n%s", withFlag.serve.Logs())
	}
}
