package httpapi_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// Input the API used to take the wrong way: a timeout so large it
// overflowed into a negative one, and bytes that are not UTF-8, which
// encoding/json turns into U+FFFD without a word (a command stored as
// something else than was sent).
func TestOverflowingTimeoutsAndInvalidUTF8AreRefused(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	for _, tc := range []struct {
		path, body string
		status     int
		code, msg  string
	}{
		{"/api/v1/call", `{"tool":"x/y","options":{"timeout_ms":9223372036854775807}}`, 400, "invalid_options", "at most 86400000 ms"},
		{"/api/v1/call", `{"tool":"x/y","options":{"max_total_timeout_ms":9223372036854775807}}`, 400, "invalid_options", "at most 86400000 ms"},
		{"/api/v1/servers", "{\"name\":\"bad\",\"transport\":\"stdio\",\"command\":\"/usr/bin/\xff\xfe\"}", 400, "bad_request", "not valid UTF-8"},
		{"/api/v1/test", "{\"name\":\"bad\",\"transport\":\"stdio\",\"command\":\"x\",\"args\":[\"\xc3\"]}", 400, "bad_request", "not valid UTF-8"},
	} {
		status, body := e.do("POST", tc.path, tc.body, nil)
		if status != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) || !strings.Contains(body, tc.msg) {
			t.Errorf("POST %s %q: %d %s, want %d %s (%s)", tc.path, tc.body, status, body, tc.status, tc.code, tc.msg)
		}
	}
	if status, _ := e.do("GET", "/api/v1/servers/bad", nil, nil); status != 404 {
		t.Errorf("a server was stored from a body that is not UTF-8: %d", status)
	}
}

// TestBodyErrorsNameTheFieldNotGoTypes: a body of the wrong shape is
// refused naming the JSON field and what it must be, never a Go type, a
// struct name or "json:".
func TestBodyErrorsNameTheFieldNotGoTypes(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	for _, tc := range []struct {
		method, path, body, want string
	}{
		{"POST", "/api/v1/servers", `[]`, "the body must be a JSON object, not an array"},
		{"POST", "/api/v1/servers", `"x"`, "the body must be a JSON object, not a string"},
		{"POST", "/api/v1/servers", `null`, "the body must be a JSON object, not null"},
		{"POST", "/api/v1/servers", `{"command":123}`, "command: must be a string, not a number"},
		{"POST", "/api/v1/servers", `{"enabled":"yes"}`, "enabled: must be true or false, not a string"},
		{"POST", "/api/v1/servers", `{"args":[1]}`, "args: every element must be a string, not a number"},
		{"POST", "/api/v1/servers", `{"env":{"K":1}}`, "env: every value must be a string, not a number"},
		{"POST", "/api/v1/servers", `{"retry":{"max_attempts":"4"}}`, "retry.max_attempts: must be a whole number, not a string"},
		{"POST", "/api/v1/servers", `{"name":"x","comand":"y"}`, `unknown field "comand"`},
		{"POST", "/api/v1/servers", `{"name":`, "not valid JSON: it ends before the value does"},
		{"POST", "/api/v1/servers", `{name}`, "not valid JSON: invalid character 'n'"},
		{"PUT", "/api/v1/servers/x", `{"version":"3"}`, "version: must be a whole number, not a string"},
		{"POST", "/api/v1/call", `{"tool":5}`, "tool: must be a string, not a number"},
		{"POST", "/api/v1/call", `{"tool":"a/b","options":{"timeout_ms":true}}`, "options.timeout_ms: must be a whole number, not true or false"},
	} {
		var eb api.ErrorBody
		status, body := e.do(tc.method, tc.path, tc.body, &eb)
		if status != 400 || eb.Error.Code != sb.CodeBadRequest || !strings.Contains(eb.Error.Message, tc.want) {
			t.Errorf("%s %s %s: %d %s, want 400 bad_request saying %q", tc.method, tc.path, tc.body, status, body, tc.want)
		}
		for _, leak := range []string{"Go ", "struct", "ServerConfig", "json:", "switchboard."} {
			if strings.Contains(eb.Error.Message, leak) {
				t.Errorf("%s %s: the message names %q: %s", tc.method, tc.body, leak, eb.Error.Message)
			}
		}
	}
}

// TestWrongMethodIs405WithAllow: a known route under a method it does not
// take is 405 with the methods it does take, not a 404 that says the route
// does not exist.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/servers", "GET, HEAD, POST"},
		{"PATCH", "/api/v1/servers/x", "GET, HEAD, PUT, DELETE"},
		{"GET", "/api/v1/call", "POST"},
		{"GET", "/api/v1/servers/x/restart", "POST"},
	} {
		req, _ := http.NewRequest(tc.method, e.url+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb api.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != 405 || eb.Error.Code != sb.CodeMethodNotAllowed || resp.Header.Get("Allow") != tc.allow || !strings.Contains(eb.Error.Message, tc.allow) {
			t.Errorf("%s %s: %d Allow %q %+v, want 405 Allow %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), eb, tc.allow)
		}
	}
	if st, _ := e.do("GET", "/api/v1/nothing", nil, nil); st != 404 {
		t.Errorf("an unknown route: %d, want 404", st)
	}
}

// TestStoreRefusalsInTheAPIWords: a conflict, a name taken and a name
// unknown are told without the store's words ("sqlite: update ..."), with
// the versions involved and what to do.
func TestStoreRefusalsInTheAPIWords(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn func(t *testing.T) string) {
		e := newEnv(t, dsn(t), "")
		cfg := map[string]any{"name": "everything", "transport": "stdio", "command": "x", "enabled": false}
		e.do("POST", "/api/v1/servers", cfg, nil)
		e.do("PUT", "/api/v1/servers/everything", cfg, nil) // version 2
		for _, tc := range []struct {
			method, path string
			body         any
			hdr          []string
			status       int
			want         string
		}{
			{"PUT", "/api/v1/servers/everything", cfg, []string{"If-Match", `"1"`}, 409,
				`"everything" was changed by someone else since version 1 was read (it is at version 2 now): read it again`},
			{"DELETE", "/api/v1/servers/everything?version=1", nil, nil, 409, "since version 1 was read (it is at version 2 now)"},
			{"POST", "/api/v1/servers", cfg, nil, 409, `a server named "everything" exists already`},
			{"GET", "/api/v1/servers/nothing", nil, nil, 404, `no server named "nothing"`},
			{"PUT", "/api/v1/servers/nothing", map[string]any{"transport": "stdio", "command": "x"}, nil, 404, `no server named "nothing"`},
		} {
			var eb api.ErrorBody
			st, body := e.do(tc.method, tc.path, tc.body, &eb, tc.hdr...)
			if st != tc.status || !strings.Contains(eb.Error.Message, tc.want) {
				t.Errorf("%s %s: %d %s, want %d saying %q", tc.method, tc.path, st, body, tc.status, tc.want)
			}
			if strings.Contains(body, "sqlite") || strings.Contains(body, "postgres") {
				t.Errorf("%s %s: the store's words: %s", tc.method, tc.path, body)
			}
		}
	})
}

// TestLogsTailAndFollowAreChecked: ?tail cuts the kept lines; a bad
// ?tail or ?follow is refused saying which.
func TestLogsTailAndFollowAreChecked(t *testing.T) {
	e := newEnv(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"), "")
	e.do("POST", "/api/v1/servers", stdioServer(t, "lines", "-stderr-lines", "5"), nil)
	e.waitStatus("lines", sb.StatusConnected)
	var ll api.LogLines
	if st, body := e.do("GET", "/api/v1/servers/lines/logs?tail=2", nil, &ll); st != 200 || len(ll.Lines) != 2 {
		t.Errorf("tail=2: %d %s", st, body)
	}
	for q, want := range map[string]string{"tail=-1": "tail must be", "tail=x": "tail must be", "follow=maybe": "follow must be"} {
		if st, body := e.do("GET", "/api/v1/servers/lines/logs?"+q, nil, nil); st != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s", q, st, body)
		}
	}
}
