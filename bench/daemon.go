package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// daemon is a `switchboard serve` process started by the harness: on
// 127.0.0.1 with an ephemeral port, a SQLite database of the harness's, no
// token, logging at info level with the Go runtime's GC trace, in its own
// process group.
type daemon struct {
	pid   int
	url   string    // http://127.0.0.1:PORT
	start time.Time // just before the exec

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	logR    *os.File
	logDone chan struct{} // closed once its stderr is read to the end
	client  *http.Client
	once    sync.Once

	serving    chan string   // receives the address from "switchboard serving"
	allStarted chan struct{} // closed at "every server started"

	mu  sync.Mutex
	log daemonLog
}

// daemonLog is what the daemon's log said, with the times the harness read
// each line (since the exec).
type daemonLog struct {
	Connected     int           // "upstream connected" lines
	LastConnected time.Duration // when the last of them was read
	AllStarted    time.Duration // when "every server started" was read
	Elapsed       time.Duration // its elapsed=: serve's own clock, from the start of serve()
	ShuttingDown  time.Time     // the time= of "shutting down"
	Stopped       time.Time     // the time= of "stopped"

	// The last line of the GC trace (GODEBUG=gctrace=1).
	GCs      int
	GCAt     time.Duration // since the process started, as the trace says
	HeapLive uint64        // marked live at the end of that collection
	HeapGoal uint64
	Stacks   uint64

	Problems []string // the first lines at level WARN or ERROR
}

// maxProblems bounds the WARN and ERROR lines a daemonLog keeps.
const maxProblems = 8

// startDaemon starts bin serve on db and waits up to 30 s for the address
// it serves on.
func startDaemon(bin, db string) (*daemon, error) {
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--db", "sqlite:"+db, "--log-level", "info")
	cmd.Env = daemonEnv()
	// Its own process group, killed by group; Pdeathsig: a driver that
	// crashes must not leave a daemon behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = w
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &daemon{
		cmd:        cmd,
		done:       make(chan struct{}),
		logR:       r,
		logDone:    make(chan struct{}),
		client:     &http.Client{Transport: tr, Timeout: time.Minute},
		serving:    make(chan string, 1),
		allStarted: make(chan struct{}),
	}
	d.start = time.Now()
	err = cmd.Start()
	w.Close() // the child has its copy
	if err != nil {
		r.Close()
		return nil, err
	}
	d.pid = cmd.Process.Pid
	go d.readLog()
	go func() {
		_ = cmd.Wait()
		close(d.done)
	}()

	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case addr := <-d.serving:
		d.url = addr
		return d, nil
	case <-d.done:
		d.kill()
		return nil, fmt.Errorf("switchboard serve exited before serving (%s): %s", cmd.ProcessState, d.problems())
	case <-t.C:
		d.kill()
		return nil, errors.New("switchboard serve logged no \"switchboard serving\" line within 30s")
	}
}

// daemonEnv is this process's environment without Switchboard's own
// settings (a token would lock the harness out), with the GC trace on.
func daemonEnv() []string {
	var env []string
	godebug := "gctrace=1"
	for _, kv := range os.Environ() {
		switch k, v, _ := strings.Cut(kv, "="); {
		case strings.HasPrefix(k, "SWITCHBOARD_"):
		case k == "GODEBUG":
			if v != "" {
				godebug = v + "," + godebug
			}
		default:
			env = append(env, kv)
		}
	}
	return append(env, "GODEBUG="+godebug)
}

// gcTrace matches the parts of a gctrace line the harness keeps.
var gcTrace = regexp.MustCompile(`^gc (\d+) @([0-9.]+)s .* (\d+)->(\d+)->(\d+) MB, (\d+) MB goal, (\d+) MB stacks`)

// readLog reads the daemon's stderr to the end, noting the lines the
// harness waits for.
func (d *daemon) readLog() {
	defer close(d.logDone)
	sc := bufio.NewScanner(d.logR)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	servingSeen, startedSeen := false, false
	for sc.Scan() {
		line := sc.Text()
		at := time.Since(d.start)
		if m := gcTrace.FindStringSubmatch(line); m != nil {
			d.mu.Lock()
			d.log.GCs, _ = strconv.Atoi(m[1])
			if s, err := strconv.ParseFloat(m[2], 64); err == nil {
				d.log.GCAt = time.Duration(s * float64(time.Second))
			}
			d.log.HeapLive, d.log.HeapGoal, d.log.Stacks = megabytes(m[5]), megabytes(m[6]), megabytes(m[7])
			d.mu.Unlock()
			continue
		}
		kv := parseLogLine(line)
		d.mu.Lock()
		switch kv["msg"] {
		case "switchboard serving":
			if !servingSeen {
				servingSeen = true
				d.serving <- kv["addr"]
			}
		case "every server started":
			d.log.AllStarted = at
			d.log.Elapsed, _ = time.ParseDuration(kv["elapsed"])
			if !startedSeen {
				startedSeen = true
				close(d.allStarted)
			}
		case "upstream connected":
			d.log.Connected++
			d.log.LastConnected = at
		case "shutting down":
			d.log.ShuttingDown, _ = time.Parse(time.RFC3339Nano, kv["time"])
		case "stopped":
			d.log.Stopped, _ = time.Parse(time.RFC3339Nano, kv["time"])
		}
		if lvl := kv["level"]; (lvl == "WARN" || lvl == "ERROR") && len(d.log.Problems) < maxProblems {
			d.log.Problems = append(d.log.Problems, line)
		}
		d.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, d.logR)
}

func megabytes(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n << 20
}

// parseLogLine splits a line of slog's text format (key=value pairs, values
// quoted when they contain spaces) into its pairs.
func parseLogLine(line string) map[string]string {
	out := map[string]string{}
	for line != "" {
		line = strings.TrimLeft(line, " ")
		k, rest, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.Contains(k, " ") {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out[k] = v
		line = rest
	}
	return out
}

// snapshotLog returns what the log said so far.
func (d *daemon) snapshotLog() daemonLog {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.log
	l.Problems = append([]string(nil), d.log.Problems...)
	return l
}

func (d *daemon) problems() string {
	if p := d.snapshotLog().Problems; len(p) > 0 {
		return strings.Join(p, "; ")
	}
	return "no warning or error logged"
}

// terminate sends SIGTERM to the daemon and waits up to grace for it to
// exit; then it kills its process group. It returns how long the daemon
// took to be reaped after the signal, and whether it exited by itself.
func (d *daemon) terminate(grace time.Duration) (time.Duration, bool) {
	start := time.Now()
	_ = syscall.Kill(d.pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-d.done:
		return time.Since(start), true
	case <-t.C:
		d.kill()
		return time.Since(start), false
	}
}

// kill sends SIGKILL to the daemon's process group, waits until it is
// reaped and its log read (the log for 2 s at most), and closes the
// harness's side. It is safe to call more than once.
func (d *daemon) kill() {
	d.once.Do(func() {
		select {
		case <-d.done: // reaped: its pid may be another process's by now
		default:
			killGroup(d.pid)
			<-d.done
		}
		t := time.NewTimer(2 * time.Second)
		select {
		case <-d.logDone:
		case <-t.C:
		}
		t.Stop()
		d.logR.Close()
		<-d.logDone
		d.client.CloseIdleConnections()
	})
}

// exitCode is the daemon's exit status once reaped (-1: killed by a signal).
func (d *daemon) exitCode() int {
	<-d.done
	return d.cmd.ProcessState.ExitCode()
}

// waitAPI polls GET /healthz every 10 ms until it answers 200, up to
// timeout, and returns when it did (since the exec).
func (d *daemon) waitAPI(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url+"/healthz", nil)
		if err != nil {
			return 0, err
		}
		if resp, err := d.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(d.start), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("the daemon's API did not answer within %s", timeout)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// serverState is the part of a server view the harness reads.
type serverState struct {
	Name    string `json:"name"`
	Runtime struct {
		Status          sb.Status     `json:"status"`
		ProtocolVersion string        `json:"protocol_version"`
		PID             int           `json:"pid"`
		Error           *sb.ErrorInfo `json:"error"`
	} `json:"runtime"`
}

// servers lists the daemon's servers (GET /api/v1/servers).
func (d *daemon) servers(ctx context.Context) ([]serverState, error) {
	var body struct {
		Servers []serverState `json:"servers"`
	}
	err := d.do(ctx, http.MethodGet, "/api/v1/servers", nil, http.StatusOK, &body)
	return body.Servers, err
}

// server returns one server (GET /api/v1/servers/{name}).
func (d *daemon) server(ctx context.Context, name string) (serverState, error) {
	var s serverState
	err := d.do(ctx, http.MethodGet, "/api/v1/servers/"+name, nil, http.StatusOK, &s)
	return s, err
}

// addServer creates a server through the API (POST /api/v1/servers).
func (d *daemon) addServer(ctx context.Context, cfg *sb.ServerConfig) error {
	return d.do(ctx, http.MethodPost, "/api/v1/servers", cfg, http.StatusCreated, nil)
}

// do sends a request with body (JSON, if not nil) and decodes the answer
// into out (if not nil); any status but want is an error.
func (d *daemon) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.url+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// waitServerConnected polls one server every 20 ms until it is connected,
// up to timeout.
func (d *daemon) waitServerConnected(ctx context.Context, name string, timeout time.Duration) (serverState, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		s, err := d.server(ctx, name)
		if err == nil && s.Runtime.Status == sb.StatusConnected {
			return s, nil
		}
		select {
		case <-ctx.Done():
			if err == nil && s.Runtime.Error != nil {
				err = errors.New(s.Runtime.Error.Message)
			}
			return s, fmt.Errorf("server %s not connected within %s (status %q): %v", name, timeout, s.Runtime.Status, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
