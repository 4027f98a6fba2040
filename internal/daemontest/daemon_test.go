package daemontest

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		RemoveBinary()
		os.Exit(code)
	}))
}

// get returns the status of GET url with token as bearer, if any.
func get(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestStartServesOnLoopbackAndStopsCleanly(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	d := Start(t, Options{OnLine: func(line string) {
		mu.Lock()
		seen = append(seen, line)
		mu.Unlock()
	}})
	if !strings.HasPrefix(d.URL, "http://127.0.0.1:") || d.MCPURL != d.URL+"/mcp" {
		t.Errorf("URL %q, MCPURL %q", d.URL, d.MCPURL)
	}
	if d.Ready.Before(d.Started) || d.PID <= 0 {
		t.Errorf("started %v, ready %v, pid %d", d.Started, d.Ready, d.PID)
	}
	// serve's default: a credential it generated in the harness's config
	// directory, which the harness read.
	if st := get(t, d.URL+"/api/v1/servers", ""); st != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/servers without the credential: %d", st)
	}
	if st := get(t, d.URL+"/api/v1/servers", d.Token); d.Token == "" || st != http.StatusOK {
		t.Errorf("GET /api/v1/servers with the credential %q: %d", d.Token, st)
	}
	hc := &http.Client{Transport: d.Transport(&http.Transport{DisableKeepAlives: true})}
	if resp, err := hc.Get(d.URL + "/api/v1/servers"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/v1/servers through d.Transport: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	fi, err := os.Stat(filepath.Join(d.ConfigDir, "switchboard", "token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the credential file in the daemon's config directory: %v", err)
	}
	line, err := d.WaitLog(context.Background(), "switchboard serving")
	if err != nil || !strings.Contains(line, strings.TrimPrefix(d.URL, "http://")) {
		t.Errorf("WaitLog: %q, %v", line, err)
	}
	if code := d.ExitCode(); code != -1 {
		t.Errorf("ExitCode while running: %d", code)
	}

	if err := d.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if code := d.ExitCode(); code != 0 {
		t.Errorf("ExitCode after Stop: %d", code)
	}
	if err := d.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if !strings.Contains(d.Logs(), `msg=stopped`) {
		t.Errorf("the log lacks the last line:\n%s", d.Logs())
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen, "\n") + "\n"; got != d.Logs() {
		t.Errorf("OnLine saw\n%s\nthe log is\n%s", got, d.Logs())
	}
}

// TestQuitReturnsTheStacksOfServe: Quit has serve write where each of its
// goroutines waits (its HTTP server's accept loop among them) and end;
// Stop then says so.
func TestQuitReturnsTheStacksOfServe(t *testing.T) {
	d := Start(t, Options{})
	dump := d.Quit()
	for _, want := range []string{"SIGQUIT: quit", "goroutine ", "net/http.(*Server).Serve("} {
		if !strings.Contains(dump, want) {
			t.Errorf("the dump lacks %q:\n%s", want, dump)
		}
	}
	if strings.Contains(dump, "switchboard serving") {
		t.Error("the dump holds the log from before the signal")
	}
	if code := d.ExitCode(); code != 2 {
		t.Errorf("ExitCode after Quit: %d, want the runtime's 2", code)
	}
	if err := d.Stop(); !errors.Is(err, ErrQuit) {
		t.Errorf("Stop after Quit: %v, want ErrQuit", err)
	}
	if again := d.Quit(); again != "" {
		t.Errorf("a second Quit returned %d bytes", len(again))
	}
}

func TestTokenAndUnspecifiedListen(t *testing.T) {
	d := Start(t, Options{Token: "tok-123", Listen: "0.0.0.0:0"})
	if !strings.HasPrefix(d.URL, "http://127.0.0.1:") || d.Token != "tok-123" {
		t.Errorf("URL %q, token %q", d.URL, d.Token)
	}
	if st := get(t, d.URL+"/api/v1/servers", ""); st != http.StatusUnauthorized {
		t.Errorf("without the token: %d", st)
	}
	c := d.Client(nil)
	defer c.Close()
	if _, err := c.Servers(context.Background()); err != nil {
		t.Errorf("the daemon's client, with the token: %v", err)
	}
}

func TestNoAuth(t *testing.T) {
	d := Start(t, Options{NoAuth: true})
	if d.Token != "" {
		t.Errorf("token %q with NoAuth", d.Token)
	}
	if st := get(t, d.URL+"/api/v1/servers", ""); st != http.StatusOK {
		t.Errorf("GET /api/v1/servers of a daemon started with --insecure-no-auth: %d", st)
	}
	if _, err := d.WaitLog(context.Background(), "any local user can run any command"); err != nil {
		t.Error(err)
	}
}

func TestKillIsACrash(t *testing.T) {
	d := Start(t, Options{})
	d.Kill()
	select {
	case <-d.Done():
	default:
		t.Fatal("Done is open after Kill")
	}
	if code := d.ExitCode(); code != -1 {
		t.Errorf("ExitCode after Kill: %d", code)
	}
	if err := d.Stop(); err == nil || errors.Is(err, ErrStopTimeout) || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop after Kill: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := d.WaitLog(ctx, "never logged"); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("WaitLog on a dead daemon: %v", err)
	}
	d.Kill() // again: nothing
}

func TestStartFailureEndsWithTheLog(t *testing.T) {
	_, err := StartProcess(context.Background(), Options{Binary: Binary(t), DB: "nosuch:db", Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "exited before serving") || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("a daemon that cannot open its database: %v", err)
	}
	if _, err := StartProcess(context.Background(), Options{DB: "sqlite:x"}); err == nil {
		t.Error("StartProcess without a binary succeeded")
	}
}

func TestParseLogLine(t *testing.T) {
	for line, want := range map[string]map[string]string{
		`time=2026-01-02T03:04:05.000Z level=INFO msg="switchboard serving" addr=http://127.0.0.1:41234 servers=0`: {
			"time": "2026-01-02T03:04:05.000Z", "level": "INFO", "msg": "switchboard serving",
			"addr": "http://127.0.0.1:41234", "servers": "0"},
		`level=WARN msg=x error="a \"quoted\" word"`: {"level": "WARN", "msg": "x", "error": `a "quoted" word`},
		`gc 1 @0.012s 2%: 0.1+0.2 ms clock`:          {},
		`gc 9 @0.067s 18%: 0.13+1.3+time=2026-01-02T03:04:05.000Z level=INFO msg="every server started" servers=10`: {
			"time": "2026-01-02T03:04:05.000Z", "level": "INFO", "msg": "every server started", "servers": "10"},
		`msg="unterminated`: {},
		``:                  {},
	} {
		if got := ParseLogLine(line); !maps.Equal(got, want) {
			t.Errorf("ParseLogLine(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestLoopbackURL(t *testing.T) {
	for addr, want := range map[string]string{
		"http://127.0.0.1:41234": "http://127.0.0.1:41234",
		"http://0.0.0.0:41234":   "http://127.0.0.1:41234",
		"http://[::]:41234":      "http://127.0.0.1:41234",
		"http://[::1]:41234":     "http://[::1]:41234",
		"http://192.0.2.7:41234": "",
		"http://example.com:80":  "",
		"127.0.0.1":              "",
	} {
		got, err := loopbackURL(addr)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("loopbackURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
}
