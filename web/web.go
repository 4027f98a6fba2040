// Package web is Switchboard's web page: one HTML page with its script
// and style sheet, embedded in the binary (no build step), that shows the
// configured servers live and drives the HTTP API (package httpapi) like
// any other client. This package also holds the page's login: one-time
// codes that "switchboard web" asks serve for with the admin credential,
// exchanged for a session cookie plus a CSRF token (see session.go).
//
// serve mounts a Page with httpapi.Options{Page: p, Authenticate:
// p.Authenticate}: the API serves it at / and under /ui/ without the
// credential, routes POST /api/v1/login-codes to it behind the
// credential, and lets in the requests p.Authenticate approves.
package web

import (
	"cmp"
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

//go:embed static
var static embed.FS

// The names the page and its session travel under.
const (
	// CookieName is the session cookie: HttpOnly, SameSite=Strict.
	CookieName = "switchboard_session"
	// CSRFHeader carries the session's CSRF token on every API request of
	// the page.
	CSRFHeader = "X-Switchboard-CSRF"
	// LoginPath is the login link's path; the code is its "code" query
	// parameter.
	LoginPath = "/ui/login"
)

// Options configure a Page. The zero value (or nil) is the default.
type Options struct {
	// CodeTTL is how long a login code is accepted; DefaultCodeTTL if zero.
	CodeTTL time.Duration
	// SessionTTL is how long a login lasts, used or not;
	// DefaultSessionTTL if zero.
	SessionTTL time.Duration
	Logger     *slog.Logger
}

// Page serves the web page and its login. It is safe for concurrent use.
type Page struct {
	sessions *sessions
	log      *slog.Logger
	mux      *http.ServeMux
}

// New returns a Page; o may be nil.
func New(o *Options) *Page {
	if o == nil {
		o = &Options{}
	}
	p := &Page{
		sessions: newSessions(cmp.Or(o.CodeTTL, DefaultCodeTTL), cmp.Or(o.SessionTTL, DefaultSessionTTL)),
		log:      cmp.Or(o.Logger, slog.Default()),
		mux:      http.NewServeMux(),
	}
	p.mux.HandleFunc("GET /{$}", p.asset("index.html"))
	p.mux.HandleFunc("GET /ui/{file}", func(w http.ResponseWriter, r *http.Request) {
		p.asset(r.PathValue("file"))(w, r)
	})
	p.mux.HandleFunc("GET "+LoginPath, p.login)
	p.mux.HandleFunc("POST /ui/logout", p.logout)
	p.mux.HandleFunc("POST /api/v1/login-codes", p.issueCode)
	p.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, sb.CodeNotFound, "no such page")
	})
	return p
}

// ServeHTTP serves the page, its assets, the login link, logout, and (to
// callers the API has authenticated) POST /api/v1/login-codes.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The page shows what servers send (tool descriptions, results,
	// logs) as text only; the policy makes sure nothing else runs even if
	// that slipped. Images and audio of results are data: URLs.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "+
		"img-src 'self' data:; media-src data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	p.mux.ServeHTTP(w, r)
}

// Authenticate reports whether r comes from a logged-in page: it carries
// a live session's cookie and that session's CSRF token in CSRFHeader.
// Only API routes (/api/v1/) are open to a session, and not the one that
// mints login codes, which takes the credential itself.
func (p *Page) Authenticate(r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/api/v1/") || r.URL.Path == "/api/v1/login-codes" {
		return false
	}
	c, err := r.Cookie(CookieName)
	return err == nil && p.sessions.check(c.Value, r.Header.Get(CSRFHeader))
}

func (p *Page) asset(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(static, "static/"+name)
		if err != nil || strings.HasPrefix(name, ".") {
			writeError(w, http.StatusNotFound, sb.CodeNotFound, "no such file")
			return
		}
		w.Header().Set("Content-Type", cmp.Or(mime.TypeByExtension(path.Ext(name)), "application/octet-stream"))
		// The assets change with the binary; a browser must not keep an
		// old script for a new API.
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(b)
	}
}

// issueCode answers POST /api/v1/login-codes, which the API routes here
// only behind its credential.
func (p *Page) issueCode(w http.ResponseWriter, r *http.Request) {
	code, exp := p.sessions.issueCode()
	writeJSON(w, http.StatusCreated, api.LoginCode{Code: code, Path: LoginPath + "?code=" + url.QueryEscape(code), ExpiresAt: exp.UTC()})
}

// login spends the code of a login link for a session: the cookie, and
// the CSRF token in the fragment of the page it redirects to.
func (p *Page) login(w http.ResponseWriter, r *http.Request) {
	id, csrf, exp, ok := p.sessions.redeem(r.URL.Query().Get("code"))
	if !ok {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusForbidden)
		w.Write(loginRefused)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: id, Path: "/", Expires: exp,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.Header().Set("Cache-Control", "no-store")
	p.log.Info("web page: logged in", "remote", r.RemoteAddr, "until", exp.Round(time.Second))
	http.Redirect(w, r, "/#csrf="+csrf, http.StatusSeeOther)
}

// loginRefused is the page of a login link that is unknown, spent or
// expired.
var loginRefused = []byte(`<!doctype html><html lang="en"><meta charset="utf-8"><title>Switchboard: login link refused</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; color: #111">
<h1>This login link cannot be used</h1>
<p>A login link works once, for two minutes. Run <code>switchboard web</code> again, as the user who runs
<code>switchboard serve</code>, for a new one.</p>
</body></html>
`)

// logout ends the session of a logged-in page.
func (p *Page) logout(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err != nil || !p.sessions.check(c.Value, r.Header.Get(CSRFHeader)) {
		writeError(w, http.StatusUnauthorized, sb.CodeUnauthorized, "not logged in")
		return
	}
	p.sessions.end(c.Value)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code sb.Code, msg string) {
	writeJSON(w, status, api.ErrorBody{Error: api.ErrorInfo{Code: code, Message: msg}})
}
