package httpapi

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/oauthclient"
)

// The OAuth routes (api/oauth.go), under /api/v1/servers/{name}/oauth. A
// person authorizes a server through the daemon itself, from the CLI or
// the web page alike: the start route returns the authorization server's
// URL, the person approves in a browser, and the authorization server
// sends the browser back to the server's callback route, which completes
// the flow and restarts the server. The callback needs no credential: its
// state parameter, unguessable and good once for ten minutes, is one. The
// callback URL is the daemon's address as the request that started the
// flow named it, so a remote daemon works wherever the browser can reach
// the address the CLI or the page uses. Start, status and forget need the
// admin scope, as every /api/v1 route does (sb.Principal.Allows).

// callbackPath returns the route the authorization server redirects to
// for the server named name.
func callbackPath(name string) string {
	return "/api/v1/servers/" + url.PathEscape(name) + "/oauth/callback"
}

// errNoOAuth: the daemon was started without OAuth.
var errNoOAuth = sb.NewError(sb.CodeUnavailable, "this Switchboard keeps no OAuth tokens")

// oauthRoutes registers the routes on protected (credential required) and
// mux (the callback).
func (a *handler) oauthRoutes(mux, protected *http.ServeMux) {
	protected.HandleFunc("POST /api/v1/servers/{name}/oauth/start", a.startAuth)
	protected.HandleFunc("GET /api/v1/servers/{name}/oauth", a.authStatus)
	protected.HandleFunc("DELETE /api/v1/servers/{name}/oauth", a.forgetAuth)
	// On mux, not protected: the auth middleware never sees it.
	mux.HandleFunc("GET /api/v1/servers/{name}/oauth/callback", a.authCallback)
}

// oauthServer returns the live config of the server named in r, unmasked
// (the flow needs the client secret).
func (a *handler) oauthServer(r *http.Request) (*sb.ServerConfig, error) {
	name := r.PathValue("name")
	if a.oauth == nil {
		return nil, errNoOAuth
	}
	s, ok := a.reg.Session(name)
	if !ok {
		return nil, sb.ErrNotFound
	}
	if s == nil {
		return nil, sb.NewError(sb.CodeDisabled, "the server is disabled; enable it first")
	}
	cfg := s.Config()
	if cfg.OAuth == nil {
		return nil, fmt.Errorf(`%w: the server's config has no "oauth" block; add one (e.g. "oauth": {}) to use OAuth`, sb.ErrInvalidConfig)
	}
	return cfg, nil
}

func (a *handler) startAuth(w http.ResponseWriter, r *http.Request) {
	cfg, err := a.oauthServer(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	redirect := scheme + "://" + r.Host + callbackPath(cfg.Name)
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	u, err := a.oauth.Begin(ctx, cfg, redirect)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.AuthStart{AuthorizationURL: u, RedirectURL: redirect,
		ExpiresAt: time.Now().Add(oauthclient.FlowTimeout).UTC()})
}

func (a *handler) authStatus(w http.ResponseWriter, r *http.Request) {
	cfg, err := a.oauthServer(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	st, err := a.oauth.Status(r.Context(), cfg.Name)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := api.AuthStatus{Server: cfg.Name, Grant: cfg.OAuth.EffectiveGrant(), Authorized: st.Authorized, Pending: st.Pending,
		Scopes: st.Scopes, StepUp: st.StepUp}
	if !st.Expiry.IsZero() {
		e := st.Expiry.UTC()
		out.ExpiresAt = &e
	}
	if st.Last != nil {
		at := st.Last.At.UTC()
		out.LastError, out.LastAt = st.Last.Error, &at
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *handler) forgetAuth(w http.ResponseWriter, r *http.Request) {
	cfg, err := a.oauthServer(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.oauth.Forget(r.Context(), cfg.Name); err != nil {
		a.writeError(w, r, err)
		return
	}
	a.reg.Restart(cfg.Name)
	w.WriteHeader(http.StatusNoContent)
}

// forgetDeleted deletes the OAuth grant of a deleted server: a server
// created later under its name starts unauthorized.
func (a *handler) forgetDeleted(ctx context.Context, name string) {
	if a.oauth == nil {
		return
	}
	if err := a.oauth.Forget(ctx, name); err != nil {
		a.log.Warn("the OAuth tokens of a deleted server could not be deleted", "server", name, "error", err)
	}
}

// authCallback completes a flow: the browser arrives here from the
// authorization server. The flow was stored by whichever replica began it;
// this one restarts its session, the others reconnect theirs when they
// hear of the new grant (registry/oauth.go).
func (a *handler) authCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if a.oauth == nil {
		a.writeError(w, r, errNoOAuth)
		return
	}
	server := r.PathValue("name")
	err := a.oauth.Complete(r.Context(), server, q.Get("state"), q.Get("code"), q.Get("iss"), q.Get("error"))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	page := callbackPage{Server: server}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		page.Error = err.Error()
	} else {
		a.reg.Restart(server)
	}
	callbackTemplate.Execute(w, page)
}

type callbackPage struct{ Server, Error string }

var callbackTemplate = template.Must(template.New("callback").Parse(`<!doctype html>
<meta charset="utf-8"><title>Switchboard</title>
{{if .Error}}<h1>Authorization failed</h1><p>{{.Error}}</p><p>Start it again with <code>switchboard server auth {{if .Server}}{{.Server}}{{else}}NAME{{end}}</code>.</p>
{{else}}<h1>{{.Server}} is authorized</h1><p>Switchboard is connecting to it. You can close this window.</p>{{end}}
`))
