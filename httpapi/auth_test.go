package httpapi_test

// The credential's scheme, the shape of every refusal, and the Host rules
// on listeners that are not loopback.

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-mcp/switchboard/api"
)

// TestBearerSchemeIsCaseInsensitive: RFC 9110 §11.1 makes the scheme
// case-insensitive, so "bearer", "BEARER" and "Bearer" all carry the token,
// on the API and on /mcp.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	token := "tok-" + randomHex(16)
	e := newSecEnv(t, secOptions{token: token})
	e.token = "" // sent by hand below
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		auth := scheme + " " + token
		if st, _, body := e.do("GET", "/api/v1/servers", nil, "Authorization", auth); st != http.StatusOK {
			t.Errorf("GET /api/v1/servers with %q: %d %s", scheme+" …", st, body)
		}
		st, h, body := e.do("POST", "/mcp", mcpInitialize, "Authorization", auth, "Accept", "application/json, text/event-stream")
		if st != http.StatusOK {
			t.Errorf("POST /mcp with %q: %d %.200s", scheme+" …", st, body)
		}
		if id := h.Get("Mcp-Session-Id"); id != "" {
			e.do("DELETE", "/mcp", nil, "Authorization", auth, "Mcp-Session-Id", id)
		}
	}
}

// TestRefusalsAreJSON: every 401 and 403, from the API or the MCP endpoint,
// is the API's error shape with Content-Type application/json, never a
// text/plain body (the go-sdk's handler writes those for its own Host
// check). A loopback Host spelled otherwise (upper case, a final dot, an
// IPv4-mapped IPv6 address) is a loopback Host and is served, on /mcp too.
func TestRefusalsAreJSON(t *testing.T) {
	token := "tok-" + randomHex(16)
	e := newSecEnv(t, secOptions{token: token})
	port := e.url[strings.LastIndexByte(e.url, ':')+1:]
	accept := []string{"Accept", "application/json, text/event-stream"}
	for _, tc := range []struct {
		what   string
		method string
		path   string
		body   any
		hdr    []string
		status int
		code   string
	}{
		{"no credential, API", "GET", "/api/v1/servers", nil, []string{"Authorization", ""}, 401, "unauthorized"},
		{"no credential, /mcp", "POST", "/mcp", mcpInitialize, []string{"Authorization", ""}, 401, "unauthorized"},
		{"wrong credential, /mcp/NAME", "POST", "/mcp/x", mcpInitialize, []string{"Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"foreign Host, API", "GET", "/api/v1/servers", nil, []string{"Host", "evil.example:" + port}, 403, "forbidden_host"},
		{"foreign Host, /mcp", "POST", "/mcp", mcpInitialize, []string{"Host", "evil.example:" + port}, 403, "forbidden_host"},
		{"cross-origin, API", "POST", "/api/v1/servers", `{"name":"x","transport":"stdio","command":"x"}`,
			[]string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, 403, "forbidden_origin"},
		{"cross-origin, /mcp", "POST", "/mcp", mcpInitialize, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, 403, "forbidden_origin"},
		{"LOCALHOST, /mcp", "POST", "/mcp", mcpInitialize, []string{"Host", "LOCALHOST:" + port}, 200, ""},
		{"localhost., /mcp", "POST", "/mcp", mcpInitialize, []string{"Host", "localhost.:" + port}, 200, ""},
		{"IPv4-mapped loopback, /mcp", "POST", "/mcp", mcpInitialize, []string{"Host", "[::ffff:127.0.0.1]:" + port}, 200, ""},
		{"LOCALHOST, API", "GET", "/api/v1/servers", nil, []string{"Host", "LOCALHOST:" + port}, 200, ""},
	} {
		st, h, body := e.do(tc.method, tc.path, tc.body, append(accept, tc.hdr...)...)
		if id := h.Get("Mcp-Session-Id"); id != "" {
			e.do("DELETE", tc.path, nil, "Mcp-Session-Id", id)
		}
		if st != tc.status {
			t.Errorf("%s: %d %s %.200s, want %d", tc.what, st, h.Get("Content-Type"), body, tc.status)
			continue
		}
		if st < 400 {
			continue
		}
		var eb api.ErrorBody
		if ct := h.Get("Content-Type"); ct != "application/json" || json.Unmarshal([]byte(body), &eb) != nil || string(eb.Error.Code) != tc.code {
			t.Errorf("%s: %d with Content-Type %q and body %.200s; want application/json {\"error\": {\"code\": %q}}", tc.what, st, ct, body, tc.code)
		}
	}
}

// TestHostRulesApplyOnEveryListener: on a listener that is not loopback
// (the request's local address is a LAN one; nothing binds it), a foreign
// Host is refused as on loopback: DNS rebinding works through a LAN address
// just as well. Allowed are loopback names, the address the request was
// sent to, and the names given as AllowedHosts (any case, port or final
// dot); "*" allows every Host.
func TestHostRulesApplyOnEveryListener(t *testing.T) {
	lan := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 7420}
	e := newSecEnv(t, secOptions{allowedHosts: []string{"switchboard.example.com", "198.51.100.7"}})
	anyHost := newSecEnv(t, secOptions{allowedHosts: []string{"*"}})
	serve := func(h http.Handler, method, path, host string) *httptest.ResponseRecorder {
		var body *strings.Reader
		if method == "POST" {
			body = strings.NewReader(mcpInitialize)
		} else {
			body = strings.NewReader("")
		}
		r := httptest.NewRequestWithContext(context.WithValue(context.Background(), http.LocalAddrContextKey, lan), method, "http://"+host+path, body)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"evil.example", false},
		{"evil.example:7420", false},
		{"203.0.113.9:7420", false},
		{"192.0.2.11:7420", false},
		{"switchboard.example.com.evil.example", false},
		{"", false},
		{"192.0.2.10:7420", true},
		{"localhost:7420", true},
		{"127.0.0.1:7420", true},
		{"[::1]:7420", true},
		{"switchboard.example.com", true},
		{"SwitchBoard.Example.COM.:443", true},
		{"198.51.100.7:8080", true},
	} {
		w := serve(e.h, "GET", "/api/v1/servers", tc.host)
		if tc.ok != (w.Code == http.StatusOK) {
			t.Errorf("GET /api/v1/servers with Host %q on a LAN listener: %d %s, want allowed=%v", tc.host, w.Code, w.Body, tc.ok)
		}
		if !tc.ok {
			var eb api.ErrorBody
			if ct := w.Header().Get("Content-Type"); ct != "application/json" || json.Unmarshal(w.Body.Bytes(), &eb) != nil || eb.Error.Code != "forbidden_host" {
				t.Errorf("Host %q: the refusal is %q %s, want JSON forbidden_host", tc.host, ct, w.Body)
			}
			if w := serve(e.h, "POST", "/mcp", tc.host); w.Code != http.StatusForbidden || w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("POST /mcp with Host %q on a LAN listener: %d %q, want 403 JSON", tc.host, w.Code, w.Header().Get("Content-Type"))
			}
		}
		if w := serve(anyHost.h, "GET", "/api/v1/servers", tc.host); w.Code != http.StatusOK {
			t.Errorf("with AllowedHosts *, Host %q: %d %s", tc.host, w.Code, w.Body)
		}
	}

	// On a loopback listener, a name the operator allowed (a reverse proxy
	// that forwards its own Host) reaches /mcp too: the go-sdk's own Host
	// check, which knows only loopback names, does not get to refuse it.
	st, h, body := e.do("POST", "/mcp", mcpInitialize, "Host", "switchboard.example.com", "Accept", "application/json, text/event-stream")
	if id := h.Get("Mcp-Session-Id"); id != "" {
		e.do("DELETE", "/mcp", nil, "Mcp-Session-Id", id)
	}
	if st != http.StatusOK {
		t.Errorf("POST /mcp with an allowed Host on loopback: %d %s %.200s", st, h.Get("Content-Type"), body)
	}
}
