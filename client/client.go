// Package client is the Go client of Switchboard's HTTP API: every route
// of a running "switchboard serve" (servers, tests, tools, logs, calls
// with progress and elicitation, the status events, metrics) as a method,
// with the API's errors as *Error values that sb.CodeOf and sb.PhaseOf
// understand. The wire types are package api's, shared with the server.
//
// A Client is safe for concurrent use. Requests have no timeout of their
// own (a test session may take a server's whole startup timeout, and a
// call streams for as long as it runs): bound them with the context.
package client

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
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultAddr is where "switchboard serve" listens unless told otherwise.
const DefaultAddr = "http://127.0.0.1:7420"

// The environment variables of a client: the daemon's address and its
// bearer token (the one "switchboard serve" reads too), which Env reads,
// and the daemon's uid.
const (
	EnvAddr  = "SWITCHBOARD_ADDR"
	EnvToken = "SWITCHBOARD_TOKEN"
	// EnvDaemonUID is the uid the daemon runs as when it is not the
	// client's (Options.DaemonUID), for the CLI.
	EnvDaemonUID = "SWITCHBOARD_DAEMON_UID"
)

// Env returns the daemon's address and token as this user's environment
// gives them: $SWITCHBOARD_ADDR (DefaultAddr if unset or empty), and
// $SWITCHBOARD_TOKEN, else, for a loopback address, the credential
// "switchboard serve" generated for this user (see CredentialFor; a file
// that cannot be used gives no token: call CredentialFor to learn why).
func Env() (addr, token string) {
	addr = os.Getenv(EnvAddr)
	if addr == "" {
		addr = DefaultAddr
	}
	token = os.Getenv(EnvToken)
	if token == "" {
		token, _ = CredentialFor(addr)
	}
	return addr, token
}

// Target returns the daemon's address and token as a command gives them,
// each "" when not given: addr, and token or the token in tokenFile
// (ReadTokenFile; not both); else as the environment does (Env), except
// that a credential file that cannot be trusted is an error, not a silent
// 401. Its errors name the flags.
func Target(addr, token, tokenFile string) (string, string, error) {
	if addr == "" {
		addr = os.Getenv(EnvAddr)
	}
	if addr == "" {
		addr = DefaultAddr
	}
	var err error
	if tokenFile != "" {
		if token != "" {
			return "", "", errors.New("--token and --token-file: pass one or the other")
		}
		if token, err = ReadTokenFile(tokenFile); err != nil {
			return "", "", fmt.Errorf("--token-file: %w", err)
		}
	}
	if token == "" {
		token = os.Getenv(EnvToken)
	}
	if token == "" {
		if token, err = CredentialFor(addr); err != nil {
			return "", "", err
		}
	}
	return addr, token, nil
}

// DialTimeout bounds connecting to the daemon with the default HTTP
// client.
const DialTimeout = 10 * time.Second

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Options tune a Client. The zero value is ready to use.
type Options struct {
	// HTTPClient sends every request. If nil, the client uses its own
	// transport, which never goes through a proxy (the daemon is local or
	// named exactly), gives up connecting after DialTimeout, and checks
	// who holds a loopback address before sending anything to it (see
	// DaemonUID).
	HTTPClient *http.Client
	// DaemonUID is the uid the daemon runs as. On a connection to a
	// loopback address, the client's own transport sends nothing unless
	// the socket at the other end belongs to that uid or to root (who can
	// read this user's credential file anyway): a request fails with a
	// *ListenerError instead (Linux; elsewhere the owner is not known and
	// nothing is checked). If nil, this process's effective uid.
	DaemonUID *int
}

// Client talks to one running "switchboard serve".
type Client struct {
	base  string // e.g. "http://127.0.0.1:7420", no trailing slash
	token string
	http  *http.Client
}

// New returns a client of the daemon at baseURL ("http://host:port",
// "https://host/prefix", or a bare "host:port", taken as http) that sends
// token as a bearer token if it is not empty. o may be nil.
func New(baseURL, token string, o *Options) (*Client, error) {
	base, err := normalizeAddr(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, token: token}
	if o != nil && o.HTTPClient != nil {
		c.http = o.HTTPClient
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		want := os.Geteuid()
		if o != nil && o.DaemonUID != nil {
			want = *o.DaemonUID
		}
		tr.DialContext = checkedDial((&net.Dialer{Timeout: DialTimeout}).DialContext, want)
		c.http = &http.Client{Transport: tr}
	}
	return c, nil
}

// normalizeAddr returns addr as a URL without a trailing slash.
func normalizeAddr(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", errors.New("no address: want http://HOST:PORT (or HOST:PORT)")
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("bad address %q: want http://HOST:PORT (or HOST:PORT)", addr)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// BaseURL is the daemon's address as the client uses it, e.g.
// "http://127.0.0.1:7420".
func (c *Client) BaseURL() string { return c.base }

// Close releases the client's idle connections. Requests may still be
// made afterwards.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// MCPTransport returns a transport to the daemon's aggregated MCP endpoint
// (/mcp: every server's tools, prompts and resources as one MCP server)
// that sends the client's token, for mcp.Client.Connect.
func (c *Client) MCPTransport() *mcp.StreamableClientTransport {
	hc := *c.http
	if c.token != "" {
		hc.Transport = Bearer(c.token, hc.Transport)
	}
	return &mcp.StreamableClientTransport{Endpoint: c.base + "/mcp", HTTPClient: &hc}
}

// Bearer returns a RoundTripper that sends token as the bearer credential
// on every request, through next (http.DefaultTransport if nil): for MCP
// clients of /mcp and other HTTP clients of serve.
func Bearer(token string, next http.RoundTripper) http.RoundTripper {
	return bearer{token: token, next: next}
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	next := b.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// Health checks that the daemon answers (GET /healthz, which needs no
// token).
func (c *Client) Health(ctx context.Context) error {
	body, err := c.get(ctx, "/healthz", "text/plain")
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(string(body)); s != "ok" {
		return fmt.Errorf("GET %s/healthz: unexpected answer %q", c.base, truncate(s, 80))
	}
	return nil
}

// Metrics returns the daemon's Prometheus metrics, in the text exposition
// format (GET /metrics).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	body, err := c.get(ctx, "/metrics", "text/plain")
	return string(body), err
}

// MetricValue returns the value of the unlabelled sample name in text, an
// exposition as Metrics returns it, and whether it has one.
func MetricValue(text, name string) (float64, bool) {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// get returns the body of a 2xx answer to GET path.
func (c *Client) get(ctx context.Context, path, accept string) ([]byte, error) {
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, c.reachError(req, err)
	}
	return b, nil
}

// newRequest builds a request to path (which starts with "/"), with body
// encoded as JSON unless it is nil.
func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encoding the body: %w", method, path, err)
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
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.reachError(req, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readError(resp)
}

// do sends a JSON request and decodes a 2xx answer into out, unless out
// is nil.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	return c.doRequest(req, out)
}

func (c *Client) doRequest(req *http.Request, out any) error {
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return c.reachError(req, err)
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("unexpected answer from %s %s: %v", req.Method, req.URL.Redacted(), err)
		}
	}
	return nil
}

// reachError explains a failure to exchange a request with the daemon: the
// context's cause if it ended, else the address that could not be reached
// and why (the transport's error is wrapped, so errors.Is finds
// syscall.ECONNREFUSED and the like).
func (c *Client) reachError(req *http.Request, err error) error {
	if ctx := req.Context(); ctx.Err() != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, context.Cause(ctx))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach switchboard at %s: %w", c.base, err)
}

// pathName escapes a server name (or an elicitation id) for a URL path.
func pathName(name string) string { return url.PathEscape(name) }

// truncate returns the first line of s, cut to at most n runes.
func truncate(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
