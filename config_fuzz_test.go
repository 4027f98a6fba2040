package switchboard

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzValidateConfig decodes arbitrary bytes as a ServerConfig, the way the
// store and the API do, and checks what every caller relies on:
//
//   - Validate, Secrets, Clone, Masked, Unmask and the accessors never panic;
//   - an error from Validate is a *ValidationError naming at least one field
//     and matching ErrInvalidConfig;
//   - a config that validates survives a JSON round trip unchanged and still
//     validates, and its effective values are within the documented limits;
//   - Unmask(Masked(c)) with prev = c gives back c, and Masked hides every
//     env and header value.
//
// Seeds are in testdata/fuzz/FuzzValidateConfig beside the f.Add ones.
func FuzzValidateConfig(f *testing.F) {
	for _, s := range []string{
		`{"name":"fs","transport":"stdio","command":"npx","args":["-y","x"],"env":{"TOKEN":"abc"},"cwd":"/srv"}`,
		`{"name":"gh","transport":"remote","url":"https://user:pw@h.example/mcp?api_key=1","headers":{"Authorization":"Bearer x"}}`,
		`{"name":"s","transport":"sse","url":"http://127.0.0.1:1/sse","enabled":false,"protocol_version":"2025-11-25"}`,
		`{"name":"r","transport":"streamable-http","url":"http://h/","startup_timeout_ms":86400000,"call_timeout_ms":1,"max_total_timeout_ms":0,"retry":{"max_attempts":100,"delays_ms":[0,3600000],"slow_retry_ms":600000}}`,
		`{"name":"a__b","transport":"stdio","command":"x"}`,
		`{"name":"x","transport":"stdio","command":"a\u0000b","env":{"A-B":"***"}}`,
		`{"name":"x","transport":"remote","url":"http://h/","headers":{"X":"a\r\nB: c","bad key":"v"}}`,
		`{"name":"x","transport":"stdio","command":"x","retry":{"max_attempts":-1,"delays_ms":[-5]},"startup_timeout_ms":-1}`,
		`{"name":"x","transport":"stdio","command":"x","env":{},"args":[],"retry":{}}`,
		`{"name":"x","transport":"websocket"}`,
		`{"name":"x","transport":"stdio","command":"x","sandbox":{"network":{"allow":["a.example:443","10.0.0.0/8","192.0.2.1:53"]}}}`,
		`{"name":"x","transport":"stdio","command":"x","sandbox":{"network":false}}`,
		`null`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c ServerConfig
		if json.Unmarshal(data, &c) != nil {
			return
		}
		exercise(t, &c)
		err := c.Validate()
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) == 0 || !errors.Is(err, ErrInvalidConfig) || err.Error() == "" {
				t.Fatalf("Validate returned %T %v, want a *ValidationError naming a field", err, err)
			}
			for _, fe := range ve.Fields {
				if fe.Field == "" || fe.Message == "" {
					t.Fatalf("field error without field or message: %+v", fe)
				}
			}
		} else {
			checkValid(t, &c)
		}
		checkMasking(t, &c)
	})
}

// exercise calls every method that must never panic, whatever the config.
func exercise(t *testing.T, c *ServerConfig) {
	t.Helper()
	_ = c.IsEnabled()
	_ = c.IsStdio()
	_ = c.StartupTimeout()
	_ = c.CallTimeout()
	_ = c.MaxTotalTimeout()
	_ = c.MaxAttempts()
	_ = c.RetryDelays()
	_ = c.SlowRetry()
	_ = c.Secrets()
	if cl := c.Clone(); !reflect.DeepEqual(cl, c) {
		t.Fatalf("Clone differs:\n%#v\n%#v", cl, c)
	}
}

// checkValid checks a config that Validate accepted.
func checkValid(t *testing.T, c *ServerConfig) {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("a valid config does not marshal: %v", err)
	}
	var back ServerConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("a valid config does not unmarshal from its own JSON %s: %v", b, err)
	}
	if err := back.Validate(); err != nil {
		t.Fatalf("valid config %s no longer validates after a JSON round trip: %v", b, err)
	}
	if want := normalized(c); !reflect.DeepEqual(normalized(&back), want) {
		t.Fatalf("JSON round trip changed the config:\n%#v\n%#v", want, normalized(&back))
	}
	if again, _ := json.Marshal(&back); string(again) != string(b) {
		t.Fatalf("JSON is not stable: %s then %s", b, again)
	}
	switch {
	case c.StartupTimeout() <= 0 || c.StartupTimeout() > 24*60*60e9:
		t.Fatalf("startup timeout %v", c.StartupTimeout())
	case c.CallTimeout() <= 0 || c.CallTimeout() > 24*60*60e9:
		t.Fatalf("call timeout %v", c.CallTimeout())
	case c.MaxTotalTimeout() < 0:
		t.Fatalf("max total timeout %v", c.MaxTotalTimeout())
	case c.MaxAttempts() < 1 || c.MaxAttempts() > 100:
		t.Fatalf("max attempts %d", c.MaxAttempts())
	case c.SlowRetry() <= 0 || c.SlowRetry() > MaxSlowRetry:
		t.Fatalf("slow retry %v", c.SlowRetry())
	case len(c.RetryDelays()) == 0:
		t.Fatal("no retry delays")
	}
	for _, d := range c.RetryDelays() {
		if d < 0 || d > 60*60e9 {
			t.Fatalf("retry delay %v", d)
		}
	}
}

// normalized returns a copy in which empty collections are nil, as
// omitempty makes them after a round trip.
func normalized(c *ServerConfig) *ServerConfig {
	n := c.Clone()
	if len(n.Args) == 0 {
		n.Args = nil
	}
	if len(n.Env) == 0 {
		n.Env = nil
	}
	if len(n.Headers) == 0 {
		n.Headers = nil
	}
	if n.Retry != nil && len(n.Retry.DelaysMS) == 0 {
		n.Retry.DelaysMS = nil
	}
	return n
}

// checkMasking checks Masked and Unmask on any config, valid or not.
func checkMasking(t *testing.T, c *ServerConfig) {
	t.Helper()
	m := c.Masked()
	for k, v := range m.Env {
		if v != SecretMask {
			t.Fatalf("Masked left env %q = %q", k, v)
		}
	}
	for k, v := range m.Headers {
		if v != SecretMask {
			t.Fatalf("Masked left header %q = %q", k, v)
		}
	}
	if len(m.Env) != len(c.Env) || len(m.Headers) != len(c.Headers) {
		t.Fatalf("Masked changed the keys: %v %v", m.Env, m.Headers)
	}
	u, err := m.Unmask(c)
	if err != nil {
		t.Fatalf("Unmask(Masked(c), c): %v", err)
	}
	if !reflect.DeepEqual(u, c) {
		t.Fatalf("Unmask(Masked(c), c) != c:\n%#v\n%#v", u, c)
	}
	// Masking must not have touched c.
	if again := c.Masked(); !reflect.DeepEqual(again, m) {
		t.Fatalf("Masked is not deterministic or changed c")
	}
	// Without a previous config, a mask is an error (never a panic), and
	// anything else is kept as is.
	if u, err := c.Unmask(nil); err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("Unmask(nil) returned %T %v", err, err)
		}
	} else if !reflect.DeepEqual(u, c) {
		t.Fatalf("Unmask(nil) changed a config without masks")
	}
	// A previous config unrelated to c never makes Unmask panic.
	_, _ = m.Unmask(&ServerConfig{Env: map[string]string{"A": "b"}})
}

// TestValidateRefusesNUL: no string of a valid config holds a NUL byte.
// PostgreSQL's JSONB cannot store "\u0000" (SQLSTATE 22P05), and exec
// refuses NUL in argv and env: such a config must be a 400, not a 500 from
// the store or a failure at spawn.
func TestValidateRefusesNUL(t *testing.T) {
	for _, c := range []ServerConfig{
		{Name: "a", Transport: TransportStdio, Command: "x", Args: []string{"a\x00b"}},
		{Name: "a", Transport: TransportStdio, Command: "x", Env: map[string]string{"K": "a\x00b"}},
		{Name: "a", Transport: TransportStdio, Command: "x", Cwd: "/tmp\x00"},
		{Name: "a", Transport: TransportRemote, URL: "http://h/", Headers: map[string]string{"X": "a\x00b"}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%#v validates", c)
		}
	}
}
