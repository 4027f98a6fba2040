package httpapi_test

import (
	"path/filepath"
	"strings"
	"testing"
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
