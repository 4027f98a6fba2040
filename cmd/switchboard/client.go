package main

// This file is the HTTP client of the client verbs (server, tools, call,
// import): it finds the daemon from --addr, sends the bearer token, and
// turns the API's error bodies and connection failures into errors a
// person can act on.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// defaultAddr is where the client verbs look for "switchboard serve" when
// neither --addr nor SWITCHBOARD_ADDR says otherwise.
const defaultAddr = "http://127.0.0.1:7420"

// dialTimeout bounds connecting to the daemon. Requests themselves have no
// timeout: a test session may take a server's whole startup timeout and a
// tool call streams for as long as it runs; Ctrl-C ends either.
const dialTimeout = 10 * time.Second

// maxErrorBody bounds how much of a non-JSON error body is read.
const maxErrorBody = 4 << 10

// apiError is an error answered by the API:
// {"error": {"code", "message", "phase"}} with its HTTP status.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Phase   string `json:"phase,omitempty"`
}

// Error reads "CODE: MESSAGE (phase PHASE)"; a 401 also says how to send
// a token.
func (e *apiError) Error() string {
	var b strings.Builder
	b.WriteString(e.Code)
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Phase != "" {
		fmt.Fprintf(&b, " (phase %s)", e.Phase)
	}
	if e.Status == http.StatusUnauthorized {
		b.WriteString(" (HTTP 401: set SWITCHBOARD_TOKEN or pass --token with the token \"switchboard serve\" was started with)")
	}
	return b.String()
}

// isAPIError reports whether err is an API error with the given code.
func isAPIError(err error, code string) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == code
}

// client talks to a running "switchboard serve".
type client struct {
	base  string // e.g. "http://127.0.0.1:7420", no trailing slash
	token string
	http  *http.Client
}

// newClient returns a client for base (see normalizeAddr) that sends token
// as a bearer token when it is not empty.
func newClient(base, token string) (*client, error) {
	u, err := normalizeAddr(base)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the daemon is local or named exactly; never via a proxy
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout}).DialContext
	return &client{base: u, token: token, http: &http.Client{Transport: tr}}, nil
}

// clientFrom builds the client of a command from the persistent --addr
// flag and the --token flag (whose defaults come from SWITCHBOARD_ADDR and
// SWITCHBOARD_TOKEN).
func clientFrom(cmd *cobra.Command) (*client, error) {
	addr, _ := cmd.Flags().GetString("addr")
	if addr == "" {
		addr = addrFlagDefault()
	}
	token, _ := cmd.Flags().GetString("token")
	if token == "" {
		token = os.Getenv("SWITCHBOARD_TOKEN")
	}
	return newClient(addr, token)
}

// addTokenFlag adds --token to a client verb, or to every verb under it if
// persistent. Its default is read from SWITCHBOARD_TOKEN when the client
// is built, not here, so that --help never prints the token.
func addTokenFlag(cmd *cobra.Command, persistent bool) {
	f := cmd.Flags()
	if persistent {
		f = cmd.PersistentFlags()
	}
	f.String("token", "", "bearer token of the API (default $SWITCHBOARD_TOKEN)")
}

// addrFlagDefault is the default of the persistent --addr flag.
func addrFlagDefault() string { return envOrDefault("SWITCHBOARD_ADDR", defaultAddr) }

// jsonOutput reports whether the persistent --json flag is set.
func jsonOutput(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool("json")
	return v
}

// normalizeAddr accepts "http://host:port", "https://host:port/prefix" or
// a bare "host:port" (taken as http) and returns the URL without a trailing
// slash.
func normalizeAddr(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", errors.New("--addr is empty: give the address of \"switchboard serve\", e.g. http://127.0.0.1:7420")
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--addr %q: want http://HOST:PORT (or HOST:PORT)", addr)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// close releases idle connections.
func (c *client) close() { c.http.CloseIdleConnections() }

// newRequest builds a request to path (which starts with "/"), with body
// encoded as JSON unless it is nil.
func (c *client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// send performs req and returns the response if its status is 2xx, or the
// API's error otherwise (the body is then closed).
func (c *client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.reachError(req.Context(), err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readAPIError(resp)
}

// do sends a JSON request and returns the response body of a 2xx answer.
func (c *client) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, c.reachError(ctx, err)
	}
	return b, nil
}

// getJSON sends a request and decodes a 2xx answer into out (unless out is
// nil). It returns the raw body too, for --json.
func (c *client) getJSON(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	raw, err := c.do(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("unexpected answer from %s %s: %v", method, c.base+path, err)
		}
	}
	return raw, nil
}

// readAPIError turns a non-2xx response into an *apiError: the API's JSON
// error body when there is one, else the status and the start of the body.
func readAPIError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error != nil && body.Error.Code != "" {
		body.Error.Status = resp.StatusCode
		return body.Error
	}
	msg := strings.TrimSpace(string(b))
	msg, _, _ = strings.Cut(msg, "\n")
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	code := "http_" + fmt.Sprint(resp.StatusCode)
	if resp.StatusCode == http.StatusUnauthorized {
		code = "unauthorized"
	}
	return &apiError{Status: resp.StatusCode, Code: code,
		Message: fmt.Sprintf("HTTP %d from %s: %s", resp.StatusCode, resp.Request.URL.Redacted(), truncate(msg, 200))}
}

// reachError explains a transport failure: a refused connection most
// likely means the daemon is not running.
func (c *client) reachError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("cannot reach switchboard at %s: is \"switchboard serve\" running? (set --addr or SWITCHBOARD_ADDR if it listens elsewhere)", c.base)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach switchboard at %s: %v", c.base, err)
}

// pathName escapes a server name for a URL path.
func pathName(name string) string { return url.PathEscape(name) }

// envOrDefault returns the environment variable key, or def if it is unset
// or empty.
func envOrDefault(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
