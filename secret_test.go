package switchboard

import "testing"

func TestRedactorRemovesSecretsUserinfoAndCredentialParams(t *testing.T) {
	r := NewRedactor(&ServerConfig{
		Env:     map[string]string{"A": "longer-secret", "B": "secret", "SHORT": "on"},
		Headers: map[string]string{"Authorization": "Bearer tok-123"},
	})
	for in, want := range map[string]string{
		"token longer-secret and secret":               "token *** and ***",
		"sent Bearer tok-123":                          "sent ***",
		"short values stay: on":                        "short values stay: on",
		"GET https://bob:hunter2@h.example/mcp failed": "GET https://***@h.example/mcp failed",
		"https://h/mcp?access_token=abc&page=2":        "https://h/mcp?access_token=***&page=2",
		"https://h/mcp?page=2&apiKey=abc":              "https://h/mcp?page=2&apiKey=***",
		"nothing to hide":                              "nothing to hide",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// MaskURL (views) and Redactor (messages) must hide the same query
// parameters: one list of credential words serves both.
func TestMaskURLAndRedactorAgreeOnCredentialParams(t *testing.T) {
	r := NewRedactor(&ServerConfig{})
	for _, name := range []string{"access_token", "apiKey", "client_secret", "password", "sig", "X-Auth", "credential"} {
		u := "https://h.example/mcp?" + name + "=v4lue"
		if got := MaskURL(u); got == u {
			t.Errorf("MaskURL kept %s", name)
		}
		if got := r.String(u); got == u {
			t.Errorf("Redactor kept %s", name)
		}
	}
	u := "https://h.example/mcp?page=2"
	if MaskURL(u) != u || r.String(u) != u {
		t.Errorf("a plain parameter was hidden: %q, %q", MaskURL(u), r.String(u))
	}
}
