package web

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-mcp/switchboard/api"
)

// clock is a settable time for the sessions.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestPage(t *testing.T) (*Page, *clock) {
	t.Helper()
	p := New(&Options{Logger: slog.New(slog.DiscardHandler)})
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	p.sessions.now = c.now
	return p, c
}

// issue asks the page for a login code as the API would route it.
func issue(t *testing.T, p *Page) api.LoginCode {
	t.Helper()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("POST", "/api/v1/login-codes", nil))
	var lc api.LoginCode
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &lc) != nil || lc.Code == "" {
		t.Fatalf("login code: %d %s", rec.Code, rec.Body)
	}
	return lc
}

// open follows a login link and returns the answer.
func open(p *Page, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec
}

// apiRequest is a request of the logged-in page to path.
func apiRequest(method, path, cookie, csrf string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
	}
	if csrf != "" {
		r.Header.Set(CSRFHeader, csrf)
	}
	return r
}

// login follows a fresh login link and returns the session's cookie value
// and CSRF token.
func login(t *testing.T, p *Page) (cookie, csrf string) {
	t.Helper()
	rec := open(p, issue(t, p).Path)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
	loc, _ := url.Parse(rec.Header().Get("Location"))
	csrf = strings.TrimPrefix(loc.Fragment, "csrf=")
	for _, c := range rec.Result().Cookies() {
		if c.Name == CookieName {
			cookie = c.Value
		}
	}
	return cookie, csrf
}

// TestLoginLinkWorksOnceAndSetsAStrictHttpOnlyCookie: the link of a code
// lands on the page with the CSRF token in the fragment and a cookie that
// scripts cannot read and other sites' requests do not carry; the same
// link a second time is refused.
func TestLoginLinkWorksOnceAndSetsAStrictHttpOnlyCookie(t *testing.T) {
	p, _ := newTestPage(t)
	lc := issue(t, p)
	if !strings.HasPrefix(lc.Path, LoginPath+"?code=") || len(lc.Code) != 64 {
		t.Fatalf("code %+v", lc)
	}
	rec := open(p, lc.Path)
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/#csrf=") || len(loc) != len("/#csrf=")+64 {
		t.Fatalf("login: %d, Location %q", rec.Code, loc)
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != CookieName || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/" {
		t.Fatalf("cookie %+v", cookies)
	}
	if rec := open(p, lc.Path); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "switchboard web") {
		t.Fatalf("second use: %d %s", rec.Code, rec.Body)
	}
}

// TestLoginCodeExpires: a code is refused once its two minutes are over.
func TestLoginCodeExpires(t *testing.T) {
	p, c := newTestPage(t)
	lc := issue(t, p)
	if !lc.ExpiresAt.Equal(c.t.Add(DefaultCodeTTL)) {
		t.Errorf("expires %v", lc.ExpiresAt)
	}
	c.t = c.t.Add(DefaultCodeTTL)
	if rec := open(p, lc.Path); rec.Code != http.StatusForbidden {
		t.Fatalf("expired code: %d", rec.Code)
	}
	for _, path := range []string{LoginPath, LoginPath + "?code=", LoginPath + "?code=00"} {
		if rec := open(p, path); rec.Code != http.StatusForbidden {
			t.Errorf("%s: %d", path, rec.Code)
		}
	}
}

// TestSessionNeedsCookieAndCSRFTogether: the API lets in a request of the
// page only with the session's cookie and its CSRF token, on API routes,
// never to mint login codes, and not after the session expired or logged
// out.
func TestSessionNeedsCookieAndCSRFTogether(t *testing.T) {
	p, c := newTestPage(t)
	cookie, csrf := login(t, p)
	other, otherCSRF := login(t, p)
	for _, tc := range []struct {
		what         string
		method, path string
		cookie, csrf string
		want         bool
	}{
		{"both", "POST", "/api/v1/servers", cookie, csrf, true},
		{"both, GET", "GET", "/api/v1/events", cookie, csrf, true},
		{"cookie alone", "GET", "/api/v1/servers", cookie, "", false},
		{"header alone", "POST", "/api/v1/servers", "", csrf, false},
		{"another session's token", "POST", "/api/v1/servers", cookie, otherCSRF, false},
		{"the other session", "POST", "/api/v1/servers", other, otherCSRF, true},
		{"minting login codes", "POST", "/api/v1/login-codes", cookie, csrf, false},
		{"the MCP endpoint", "POST", "/mcp", cookie, csrf, false},
		{"metrics", "GET", "/metrics", cookie, csrf, false},
	} {
		if got := p.Authenticate(apiRequest(tc.method, tc.path, tc.cookie, tc.csrf)); got != tc.want {
			t.Errorf("%s (%s %s): %v, want %v", tc.what, tc.method, tc.path, got, tc.want)
		}
	}

	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, apiRequest("POST", "/ui/logout", cookie, ""))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("logout without the CSRF token: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	p.ServeHTTP(rec, apiRequest("POST", "/ui/logout", cookie, csrf))
	if rec.Code != http.StatusNoContent {
		t.Errorf("logout: %d", rec.Code)
	}
	if p.Authenticate(apiRequest("GET", "/api/v1/servers", cookie, csrf)) {
		t.Error("a session still works after logout")
	}
	c.t = c.t.Add(DefaultSessionTTL)
	if p.Authenticate(apiRequest("GET", "/api/v1/servers", other, otherCSRF)) {
		t.Error("a session still works after it expired")
	}
}

// TestFloodsOfCodesAndLoginsAreBounded: codes and sessions nobody uses
// are forgotten, oldest first, past their caps.
func TestFloodsOfCodesAndLoginsAreBounded(t *testing.T) {
	p, c := newTestPage(t)
	first := issue(t, p)
	for range maxCodes + 5 {
		c.t = c.t.Add(time.Millisecond)
		issue(t, p)
	}
	if n := len(p.sessions.codes); n != maxCodes {
		t.Errorf("%d codes kept, want %d", n, maxCodes)
	}
	if rec := open(p, first.Path); rec.Code != http.StatusForbidden {
		t.Errorf("the oldest code still works: %d", rec.Code)
	}
	cookie, csrf := login(t, p)
	for range maxSessions + 5 {
		c.t = c.t.Add(time.Millisecond)
		login(t, p)
	}
	if n := len(p.sessions.live); n != maxSessions {
		t.Errorf("%d sessions kept, want %d", n, maxSessions)
	}
	if p.Authenticate(apiRequest("GET", "/api/v1/servers", cookie, csrf)) {
		t.Error("the oldest session survived the flood")
	}
}

// TestPageAndAssetsAreServedWithAStrictPolicy: the page and its assets
// have their types and a content security policy that runs this origin's
// script only; other paths are 404s.
func TestPageAndAssetsAreServedWithAStrictPolicy(t *testing.T) {
	p, _ := newTestPage(t)
	for path, typ := range map[string]string{"/": "text/html", "/ui/app.js": "text/javascript", "/ui/app.css": "text/css"} {
		rec := open(p, path)
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), typ) {
			t.Errorf("%s: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
	}
	for _, path := range []string{"/ui/nope.js", "/ui/", "/index.html", "/ui/static/app.js"} {
		if rec := open(p, path); rec.Code != 404 {
			t.Errorf("%s: %d", path, rec.Code)
		}
	}
}
