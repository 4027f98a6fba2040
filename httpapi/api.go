// Package httpapi serves Switchboard's HTTP API: the servers (create, read,
// update, delete, enable, disable, restart, test, tools, logs), tool calls
// with progress over server-sent events, a stream of status events, and the
// Prometheus metrics. Routes, fields and error shapes are Switchboard's
// outward contract (see README.md).
package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/audit"
	"github.com/switchboard-mcp/switchboard/egress"
	"github.com/switchboard-mcp/switchboard/executor"
	"github.com/switchboard-mcp/switchboard/metrics"
	"github.com/switchboard-mcp/switchboard/oauthclient"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/stats"
)

// Request body limits. A config is small; call arguments may carry a
// document, but not a disk image.
const (
	DefaultMaxConfigBytes = 1 << 20
	DefaultMaxCallBytes   = 16 << 20
)

// Options configure the API. Registry and Executor are required.
type Options struct {
	Registry *registry.Registry
	Executor *executor.Executor
	Metrics  *metrics.Metrics // nil: no /metrics
	// Stats, if set, is the last hour of calls served at
	// /api/v1/servers/{name}/stats and /api/v1/stats (stats.go).
	Stats *stats.Series
	// Token, if set, is required as "Authorization: Bearer <token>" on
	// every route but /healthz (the scheme in any case, as RFC 9110
	// says). Empty: no credential is asked for, and whoever can reach the
	// listener can run any command as the daemon's user.
	Token string
	// CredentialFile, if set, is the file that holds Token, which a 401
	// names so that a client's user knows where to find the credential.
	CredentialFile string
	// AllowedHosts are the names, besides loopback ones, that a request's
	// Host may carry (a host name or IP address, any port; "*" allows
	// every Host). A request that names the IP address it arrived on is
	// always allowed. Any other Host is refused with 403 forbidden_host,
	// on every listener: a page whose name an attacker rebinds to this
	// daemon's address (DNS rebinding) carries its own name.
	AllowedHosts []string
	// MCP, if set, is mounted at /mcp and /mcp/ (the aggregated endpoint).
	MCP http.Handler
	// Instance, if set, is the Switchboard instance that MCP serves: a
	// request to /mcp whose Switchboard-Via header names it, or one it
	// reaches, comes from this Switchboard itself, directly or through
	// others, and is refused with 508 loop; every other answer names what
	// it reaches in Switchboard-Reach (see egress.Instance).
	Instance *egress.Instance
	// Page, if set, is the web page (package web): served at GET / and
	// under /ui/ without the credential (it holds no data; it logs in and
	// then calls the API), and behind it at POST /api/v1/login-codes.
	Page http.Handler
	// Authenticate, if set, is the one way in besides the token: a request
	// it approves (the page's session cookie and CSRF header) is served as
	// if it carried the token.
	Authenticate func(*http.Request) bool
	// Toolsets, if set, are served at /api/v1/toolsets (toolsets.go), and
	// ToolsetMCP at /toolsets/{name}/mcp.
	Toolsets   *registry.Toolsets
	ToolsetMCP http.Handler
	// Tokens, if set, are served at /api/v1/tokens and accepted as
	// credentials, within their scopes (tokens.go).
	Tokens *registry.Tokens
	// OAuth, if set, serves the authorization routes (oauth.go); it is the
	// registry's sessions' Options.OAuth.
	OAuth  *oauthclient.Client
	Logger *slog.Logger
	// Warnings, if set, says what the MCP endpoint does not show of a
	// server, for its view (gateway.Gateway.Warnings).
	Warnings func(server string) []string
	// Search, if set, answers GET /api/v1/tools?search=Q: at most limit
	// tools, best first (gateway.Gateway.Search), or the error that kept it
	// from searching (ctx, the request's, ended).
	Search func(ctx context.Context, query string, limit int) ([]api.ToolHit, error)
	// Audit, if set, records the API requests that change something
	// (audit.go), marks every request with its surface for the calls it
	// makes, and is read at GET /api/v1/audit.
	Audit *audit.Log
}

type handler struct {
	reg     *registry.Registry
	ex      *executor.Executor
	log     *slog.Logger
	tokenH  [32]byte
	hasTok  bool
	authn   func(*http.Request) bool
	pending sync.Map // elicitation id -> chan sb.ElicitationResponse

	// toolsets and tokens are nil if the daemon keeps none.
	toolsets *registry.Toolsets
	tokens   *registry.Tokens
	oauth    *oauthclient.Client
	stats    *stats.Series // nil: no stats routes
	warnings func(server string) []string
	search   func(ctx context.Context, query string, limit int) ([]api.ToolHit, error)
	audit    *audit.Log
	// unauthorized is the message of a 401 (see Options.CredentialFile).
	unauthorized string
}

// warn adds to v what the MCP endpoint does not show of its server.
func (a *handler) warn(v *sb.ServerView) {
	if a.warnings != nil {
		v.Warnings = a.warnings(v.Name)
	}
}

// New returns the API's handler.
func New(o Options) http.Handler {
	a := &handler{reg: o.Registry, ex: o.Executor, log: o.Logger, authn: o.Authenticate, toolsets: o.Toolsets, tokens: o.Tokens, oauth: o.OAuth,
		stats: o.Stats, warnings: o.Warnings, search: o.Search, audit: o.Audit}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.unauthorized = unauthorizedMessage(o.CredentialFile)
	if o.Token != "" {
		a.tokenH, a.hasTok = sha256.Sum256([]byte(o.Token)), true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok")
	})
	protected := http.NewServeMux()
	if o.Metrics != nil {
		protected.Handle("GET /metrics", o.Metrics.Handler())
	}
	protected.HandleFunc("GET /api/v1/servers", a.listServers)
	protected.HandleFunc("POST /api/v1/servers", a.createServer)
	protected.HandleFunc("GET /api/v1/servers/{name}", a.getServer)
	protected.HandleFunc("PUT /api/v1/servers/{name}", a.updateServer)
	protected.HandleFunc("DELETE /api/v1/servers/{name}", a.deleteServer)
	protected.HandleFunc("POST /api/v1/servers/{name}/enable", a.enable(true))
	protected.HandleFunc("POST /api/v1/servers/{name}/disable", a.enable(false))
	protected.HandleFunc("POST /api/v1/servers/{name}/restart", a.restartServer)
	protected.HandleFunc("POST /api/v1/servers/{name}/test", a.testServer)
	protected.HandleFunc("GET /api/v1/servers/{name}/tools", a.serverTools)
	protected.HandleFunc("GET /api/v1/servers/{name}/logs", a.serverLogs)
	if o.Stats != nil {
		protected.HandleFunc("GET /api/v1/servers/{name}/stats", a.serverStats)
		protected.HandleFunc("GET /api/v1/stats", a.daemonStats)
	}
	protected.HandleFunc("POST /api/v1/test", a.testDraft)
	protected.HandleFunc("GET /api/v1/tools", a.allTools)
	protected.HandleFunc("GET /api/v1/status", a.status)
	protected.HandleFunc("POST /api/v1/call", a.call)
	protected.HandleFunc("POST /api/v1/elicitations/{id}", a.answerElicitation)
	protected.HandleFunc("GET /api/v1/events", a.events)
	protected.HandleFunc("POST /api/v1/import", a.importConfig)
	a.oauthRoutes(mux, protected)
	if o.Page != nil {
		mux.Handle("GET /{$}", o.Page)
		mux.Handle("/ui/", o.Page)
		protected.Handle("POST /api/v1/login-codes", o.Page)
	}
	if o.MCP != nil {
		// Routed by the outer mux straight to the credential check, as
		// everything protected is: one routing, not two, on the path of
		// every MCP message.
		mcp := a.auth(refuseLoops(o.Instance, withoutLocalAddr(o.MCP)))
		mux.Handle("/mcp", mcp)
		mux.Handle("/mcp/", mcp)
	}
	if o.Toolsets != nil {
		protected.HandleFunc("GET /api/v1/toolsets", a.listToolsets)
		protected.HandleFunc("POST /api/v1/toolsets", a.createToolset)
		protected.HandleFunc("GET /api/v1/toolsets/{name}", a.getToolset)
		protected.HandleFunc("PUT /api/v1/toolsets/{name}", a.updateToolset)
		protected.HandleFunc("DELETE /api/v1/toolsets/{name}", a.deleteToolset)
	}
	if o.ToolsetMCP != nil {
		// Routed once, as /mcp is.
		mux.Handle("/toolsets/{name}/mcp", a.auth(refuseLoops(o.Instance, withoutLocalAddr(o.ToolsetMCP))))
	}
	if o.Tokens != nil {
		protected.HandleFunc("GET /api/v1/tokens", a.listTokens)
		protected.HandleFunc("POST /api/v1/tokens", a.createToken)
		protected.HandleFunc("DELETE /api/v1/tokens/{name}", a.revokeToken)
	}
	if o.Audit != nil {
		protected.HandleFunc("GET /api/v1/audit", a.listAudit)
	}
	protected.HandleFunc("/", noRoute(protected))
	mux.Handle("/", a.auth(traced(a.audited(protected))))
	// Browsers must not be able to drive the API from another site: a page
	// could otherwise POST a server config (as text/plain, which needs no
	// preflight) and make Switchboard run its command. Cross-origin requests
	// that change state are refused, and so are requests under a Host name
	// this daemon was not told it has (DNS rebinding).
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusForbidden, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeForbiddenOrigin,
			Message: "cross-origin requests that change state are refused"}})
	}))
	return newHostCheck(o.AllowedHosts).handler(cop.Handler(mux))
}

// hostCheck decides which Host names a request may carry: loopback names,
// the IP address the request arrived on, and the names the operator
// listed. It applies on every listener, loopback or not: a name rebound
// to a LAN address reaches a LAN listener just as one rebound to
// 127.0.0.1 reaches loopback.
type hostCheck struct {
	any   bool
	names map[string]bool // normalized by hostName
}

func newHostCheck(allowed []string) hostCheck {
	hc := hostCheck{names: map[string]bool{}}
	for _, h := range allowed {
		if h == "*" {
			hc.any = true
		}
		if n := hostName(h); n != "" {
			hc.names[n] = true
		}
	}
	return hc
}

func (hc hostCheck) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hc.allows(r) {
			writeJSON(w, http.StatusForbidden, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeForbiddenHost,
				Message: "the Host header must name this server: localhost, a loopback address, the address the request was sent to, or a name the daemon allows (switchboard serve --allowed-host)"}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (hc hostCheck) allows(r *http.Request) bool {
	if hc.any {
		return true
	}
	host := hostName(r.Host)
	if host == "" {
		return false
	}
	if host == "localhost" || hc.names[host] {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	// An address literal is not a rebound name: the client addressed this
	// listener by the address it listens on.
	local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && local.IP.Equal(ip)
}

// hostName returns the host of a Host header or an --allowed-host entry
// as compared: without the port and the brackets of an IPv6 address,
// lower case, without a final dot, and an IP address in its canonical
// form.
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// withoutLocalAddr hides the listener's address from the MCP handler. The
// go-sdk's handler has a DNS-rebinding check of its own for loopback
// listeners that knows loopback names only, case-sensitively: it would
// refuse what hostCheck allowed (a name given with --allowed-host behind a
// reverse proxy, "LOCALHOST"), with a text/plain 403 unlike every other
// refusal. hostCheck has judged the Host already, on every listener.
func withoutLocalAddr(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, nil)))
	})
}

// refuseLoops refuses a request that in's own sessions sent (a server
// pointed at this /mcp, or at a Switchboard that this one reaches): serving
// it would feed the aggregate its own tools without end. The session that
// sent it reads the 508 as a loop, and stops. Every other answer names the
// instances this endpoint reaches, for the Switchboard that sent it to
// learn from (egress.Instance).
func refuseLoops(in *egress.Instance, next http.Handler) http.Handler {
	if in == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if in.Arrived(r.Header.Values(egress.ViaHeader)) {
			writeJSON(w, http.StatusLoopDetected, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeLoop,
				Message: "this request comes from this Switchboard itself or one it uses (its " + egress.ViaHeader + " header names it): " +
					"a server configured with this /mcp as its URL, directly or through other Switchboards, would feed on its own tools"}})
			return
		}
		server := ""
		if rest, ok := strings.CutPrefix(r.URL.Path, "/mcp/"); ok {
			server, _, _ = strings.Cut(rest, "/")
		}
		w.Header().Set(egress.ReachHeader, in.ReachOf(server))
		next.ServeHTTP(w, r)
	})
}

// decode reads a JSON body of at most limit bytes into v, rejecting
// unknown fields so that a typo ("comand") is an error, not a silent no-op.
// The whole body is read first, so that the limit also counts what follows
// the JSON value.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(unwrapped(w), r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("%w: request body over %d bytes", errTooLarge, limit)
		}
		return fmt.Errorf("%w: reading the body: %v", errBadRequest, err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("%w: the request body is empty; send a JSON object", errBadRequest)
	}
	if string(bytes.TrimSpace(body)) == "null" {
		return fmt.Errorf("%w: the body must be a JSON object, not null", errBadRequest)
	}
	// encoding/json would turn bytes that are not UTF-8 into U+FFFD
	// without a word: a command would be stored as something else.
	if !utf8.Valid(body) {
		return fmt.Errorf("%w: the body is not valid UTF-8", errBadRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err, v)
	}
	if dec.More() || len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return fmt.Errorf("%w: trailing data after the JSON body", errBadRequest)
	}
	return nil
}

// decodeStrict decodes data into v, refusing fields v does not have: the
// views accepted back (a GET's body, edited) are read with it.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// configBody is a config as sent to create, update or test, with the
// optional version it was read at.
type configBody struct {
	sb.ServerConfig
	Version int64 `json:"version,omitempty"`
}

// UnmarshalJSON accepts a full server view too (as GET returns it), so that
// "GET, edit, PUT" works: the read-only fields are ignored.
func (b *configBody) UnmarshalJSON(data []byte) error {
	var view struct {
		sb.ServerConfig
		Version   int64           `json:"version"`
		CreatedAt json.RawMessage `json:"created_at"`
		UpdatedAt json.RawMessage `json:"updated_at"`
		Runtime   json.RawMessage `json:"runtime"`
	}
	if err := decodeStrict(data, &view); err != nil {
		return err
	}
	b.ServerConfig, b.Version = view.ServerConfig, view.Version
	return nil
}

// versionFrom takes the version an edit is based on from the body or an
// If-Match header ("3" or "\"3\"").
func versionFrom(r *http.Request, body int64) (int64, error) {
	if body != 0 {
		return body, nil
	}
	v := strings.Trim(r.Header.Get("If-Match"), `"`)
	if v == "" {
		v = r.URL.Query().Get("version")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: version %q is not a number", errBadRequest, v)
	}
	return n, nil
}

func (a *handler) listServers(w http.ResponseWriter, r *http.Request) {
	views := a.reg.List()
	for i := range views {
		a.warn(&views[i])
	}
	writeJSON(w, http.StatusOK, api.ServerList{Servers: views})
}

func (a *handler) getServer(w http.ResponseWriter, r *http.Request) {
	v, err := a.reg.Get(r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.warn(&v)
	writeJSON(w, http.StatusOK, v)
}

func (a *handler) createServer(w http.ResponseWriter, r *http.Request) {
	var b configBody
	if err := decode(w, r, DefaultMaxConfigBytes, &b); err != nil {
		a.writeError(w, r, err)
		return
	}
	v, err := a.reg.Create(r.Context(), &b.ServerConfig)
	if err != nil {
		a.writeError(w, r, a.inServerWords(b.Name, 0, err))
		return
	}
	w.Header().Set("Location", "/api/v1/servers/"+v.Name)
	writeJSON(w, http.StatusCreated, v)
}

func (a *handler) updateServer(w http.ResponseWriter, r *http.Request) {
	var b configBody
	if err := decode(w, r, DefaultMaxConfigBytes, &b); err != nil {
		a.writeError(w, r, err)
		return
	}
	version, err := versionFrom(r, b.Version)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	v, err := a.reg.Update(r.Context(), r.PathValue("name"), &b.ServerConfig, version)
	if err != nil {
		a.writeError(w, r, a.inServerWords(r.PathValue("name"), version, err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *handler) deleteServer(w http.ResponseWriter, r *http.Request) {
	version, err := versionFrom(r, 0)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.reg.Delete(r.Context(), r.PathValue("name"), version); err != nil {
		a.writeError(w, r, a.inServerWords(r.PathValue("name"), version, err))
		return
	}
	a.forgetDeleted(r.Context(), r.PathValue("name"))
	if a.stats != nil {
		a.stats.Forget(r.PathValue("name"))
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *handler) enable(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := a.reg.SetEnabled(r.Context(), r.PathValue("name"), on)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

func (a *handler) restartServer(w http.ResponseWriter, r *http.Request) {
	if err := a.reg.Restart(r.PathValue("name")); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.RestartResponse{Status: api.StatusRestarting})
}

func (a *handler) testServer(w http.ResponseWriter, r *http.Request) {
	res, err := a.reg.Test(r.Context(), r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, testResult(res))
}

// testResult is the API's view of what a test session found.
func testResult(res registry.TestResult) api.TestResult {
	return api.TestResult{Runtime: res.Runtime, Logs: res.Logs}
}

func (a *handler) testDraft(w http.ResponseWriter, r *http.Request) {
	var b configBody
	if err := decode(w, r, DefaultMaxConfigBytes, &b); err != nil {
		a.writeError(w, r, err)
		return
	}
	if b.Name == "" {
		b.Name = "draft"
	}
	res, err := a.reg.TestConfig(r.Context(), &b.ServerConfig)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, testResult(res))
}

func (a *handler) serverTools(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, err := a.reg.Get(name)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	tools := make([]api.ToolView, 0, len(v.Runtime.Tools))
	for _, t := range v.Runtime.Tools {
		tools = append(tools, toolView(name, t))
	}
	writeJSON(w, http.StatusOK, api.ToolList{Tools: tools})
}

func (a *handler) allTools(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("search") {
		a.searchTools(w, r)
		return
	}
	tools := []api.ToolView{}
	for _, v := range a.reg.List() {
		if v.Runtime.Status != sb.StatusConnected {
			continue
		}
		for _, t := range v.Runtime.Tools {
			tools = append(tools, toolView(v.Name, t))
		}
	}
	writeJSON(w, http.StatusOK, api.ToolList{Tools: tools})
}

// Bounds of GET /api/v1/tools?search='s limit.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 100
)

// searchTools answers GET /api/v1/tools?search=Q[&limit=N].
func (a *handler) searchTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := strings.TrimSpace(q.Get("search"))
	if query == "" {
		a.writeError(w, r, fmt.Errorf("%w: search must say what the tool should do", errBadRequest))
		return
	}
	limit := defaultSearchLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSearchLimit {
			a.writeError(w, r, fmt.Errorf("%w: limit must be a whole number from 1 to %d, not %q", errBadRequest, maxSearchLimit, v))
			return
		}
		limit = n
	}
	hits := []api.ToolHit{}
	if a.search != nil {
		var err error
		if hits, err = a.search(r.Context(), query, limit); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, api.ToolHits{Tools: hits})
}

func (a *handler) status(w http.ResponseWriter, r *http.Request) {
	info := a.reg.ReplicaInfo()
	st := api.Status{Replica: api.Replica{ID: info.ID, ChangeFeed: info.ChangeFeed}}
	if !info.LastSync.IsZero() {
		st.Replica.LastSync = &info.LastSync
	}
	writeJSON(w, http.StatusOK, st)
}

func toolView(server string, t sb.ToolInfo) api.ToolView {
	return api.ToolView{Server: server, Name: t.Name, Address: server + "/" + t.Name, Description: t.Description, InputSchema: t.InputSchema}
}

func (a *handler) serverLogs(w http.ResponseWriter, r *http.Request) {
	tail, follow, err := logQuery(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if follow {
		a.followLogs(w, r, r.PathValue("name"), tail)
		return
	}
	lines, err := a.reg.Logs(r.PathValue("name"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.LogLines{Lines: lastN(lines, tail)})
}
