package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

func (a *handler) listTokens(w http.ResponseWriter, r *http.Request) {
	list, err := a.tokens.List(r.Context())
	if err != nil {
		a.writeJSONError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.TokenList{Tokens: list})
}

func (a *handler) createToken(w http.ResponseWriter, r *http.Request) {
	var b api.TokenRequest
	if err := decode(w, r, DefaultMaxConfigBytes, &b); err != nil {
		a.writeJSONError(w, err)
		return
	}
	secret, tok, err := a.tokens.Create(r.Context(), b.Name, b.Scopes)
	if err != nil {
		a.writeJSONError(w, err)
		return
	}
	// The secret is in this answer only: no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", "/api/v1/tokens/"+tok.Name)
	writeJSON(w, http.StatusCreated, api.CreatedToken{Token: tok, Secret: secret})
}

func (a *handler) revokeToken(w http.ResponseWriter, r *http.Request) {
	if err := a.tokens.Revoke(r.Context(), r.PathValue("name")); err != nil {
		a.writeJSONError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// endpointOf is what a request reaches, for sb.Principal.Allows.
func endpointOf(r *http.Request) sb.Endpoint {
	p := r.URL.Path
	switch {
	case p == "/mcp" || strings.HasPrefix(p, "/mcp/"):
		return sb.Endpoint{MCP: true}
	case strings.HasPrefix(p, "/toolsets/"):
		rest := strings.TrimPrefix(p, "/toolsets/")
		name, _, _ := strings.Cut(rest, "/")
		if name == "" {
			name = "/" // reaches no toolset: only admin passes
		}
		return sb.Endpoint{Toolset: name}
	}
	return sb.Endpoint{}
}

// principal is who makes r: the API token it carries, the admin
// credential (the bearer token or the page's login), or anonymous on a
// daemon that asks for no credential. ok is false if r carries no valid
// credential and one is required.
func (a *handler) principal(r *http.Request) (p sb.Principal, ok bool) {
	scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	bearer := strings.EqualFold(scheme, "Bearer")
	if bearer && a.tokens != nil {
		if p, ok := a.tokens.Authenticate(got); ok {
			return p, true
		}
	}
	admin := sb.Principal{Name: sb.PrincipalAdmin, Scopes: []sb.Scope{sb.ScopeAdmin}}
	if !a.hasTok {
		return sb.Principal{Name: sb.PrincipalAnonymous, Scopes: []sb.Scope{sb.ScopeAdmin}}, true
	}
	h := sha256.Sum256([]byte(got))
	if bearer && subtle.ConstantTimeCompare(h[:], a.tokenH[:]) == 1 {
		return admin, true
	}
	if a.authn != nil && a.authn(r) {
		return admin, true
	}
	return sb.Principal{}, false
}

// auth requires a valid credential whose scopes reach the endpoint. The
// admin token is compared as fixed-length digests in constant time, so
// neither its content nor its length leaks through timing; an API token
// is looked up by the hash of the secret (random, so there is nothing to
// guess from timing). The answer says nothing about what was wrong. The
// scheme is case-insensitive (RFC 9110 §11.1).
//
// A request that an API token authenticates is bound to the token: when
// it is revoked, the request's context ends (an open SSE stream closes, a
// call is cancelled). The principal rides in the context (sb.WithPrincipal)
// for the logs and metrics, and as the go-sdk's TokenInfo on the MCP
// endpoints, which binds a session to the principal that began it.
// unauthorizedMessage is what a 401 says: what to send, and where the
// daemon's credential is (file, if serve keeps it in one), never what.
func unauthorizedMessage(file string) string {
	msg := `a valid bearer token is required ("Authorization: Bearer <credential>"): the daemon's credential, `
	if file != "" {
		msg += "in " + file
	} else {
		msg += "the one serve was given (--token-file, --token or SWITCHBOARD_TOKEN)"
	}
	return msg + `, or an API token ("switchboard token create")`
}

func (a *handler) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := a.principal(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
			writeJSON(w, http.StatusUnauthorized, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeUnauthorized,
				Message: a.unauthorized}})
			return
		}
		if !p.Allows(endpointOf(r)) {
			// The token's name, never its secret.
			a.log.Warn("a token was refused: its scopes do not reach the endpoint", "token", p.Name, "path", r.URL.Path)
			writeJSON(w, http.StatusForbidden, api.ErrorBody{Error: api.ErrorInfo{Code: sb.CodeForbidden,
				Message: "the token's scopes do not reach " + r.URL.Path}})
			return
		}
		ctx := a.withSurface(sb.WithPrincipal(r.Context(), p), r)
		if p.Revoked != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(p.Revoked, cancel)()
		}
		r = r.WithContext(ctx)
		scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if e := endpointOf(r); (e.MCP || e.Toolset != "") && strings.EqualFold(scheme, "Bearer") {
			withTokenInfo(p, next).ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withTokenInfo hands p to the go-sdk as the request's TokenInfo: a
// session remembers the UserID of its first request and refuses (403) a
// request of another principal, and each request's RequestExtra carries
// it to the tool handlers (for the metrics by token).
func withTokenInfo(p sb.Principal, next http.Handler) http.Handler {
	verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		// Checked already; the token lives until it is revoked, which the
		// check of every request catches.
		return &auth.TokenInfo{UserID: p.Name, Expiration: time.Now().Add(24 * time.Hour)}, nil
	}
	return auth.RequireBearerToken(verified, nil)(next)
}
