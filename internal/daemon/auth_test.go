package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExposure is the rule of where serve may listen with which
// credential: with one, anywhere, silently; without one, nowhere unless
// --insecure-no-auth, and then with a warning that says who can run any
// command. Tested here because no test binds a non-loopback address.
func TestExposure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		loopback bool
		auth     Auth
		warn     string // substring; "" for none
		err      string // substring; "" for none
	}{
		{"loopback, credential", true, Auth{Token: "t"}, "", ""},
		{"network, credential", false, Auth{Token: "t"}, "", ""},
		{"loopback, no credential", true, Auth{}, "", "--insecure-no-auth"},
		{"network, no credential", false, Auth{}, "", "--insecure-no-auth"},
		{"loopback, --insecure-no-auth", true, Auth{Insecure: true}, "any local user can run any command", ""},
		{"network, --insecure-no-auth", false, Auth{Insecure: true}, "anyone who can reach it can run any command", ""},
	} {
		warn, err := exposure(tc.loopback, tc.auth)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn):
			t.Errorf("%s: warning %q, want %q", tc.name, warn, tc.warn)
		}
		if warn != "" && !strings.Contains(warn, "--insecure-no-auth") {
			t.Errorf("%s: the warning does not name the flag: %s", tc.name, warn)
		}
	}
}

// TestAuthFrom: --token, then SWITCHBOARD_TOKEN, then the credential file
// (generated once, then reused); --insecure-no-auth alone means none, and
// with a token it is an error, as is having nowhere to keep the file.
func TestAuthFrom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard", "token")
	at := func() (string, error) { return path, nil }
	nowhere := func() (string, error) { return "", errors.New("neither $XDG_CONFIG_HOME nor $HOME are defined") }

	a, err := AuthFrom("", "", false, at)
	if err != nil || len(a.Token) != 64 || a.File != path || !a.Generated {
		t.Fatalf("first start: %+v %v", a, err)
	}
	b, err := AuthFrom("", "", false, at)
	if err != nil || b.Token != a.Token || b.Generated {
		t.Errorf("second start: %+v %v, want the same token, not generated", b, err)
	}
	if a, err := AuthFrom("flag", "env", false, nowhere); err != nil || a.Token != "flag" || a.File != "" {
		t.Errorf("--token and SWITCHBOARD_TOKEN: %+v %v", a, err)
	}
	if a, err := AuthFrom("", "env", false, nowhere); err != nil || a.Token != "env" {
		t.Errorf("SWITCHBOARD_TOKEN: %+v %v", a, err)
	}
	if a, err := AuthFrom("", "", true, nowhere); err != nil || a.Token != "" || !a.Insecure {
		t.Errorf("--insecure-no-auth: %+v %v", a, err)
	}
	for _, tok := range [][2]string{{"flag", ""}, {"", "env"}} {
		if _, err := AuthFrom(tok[0], tok[1], true, at); err == nil || !strings.Contains(err.Error(), "contradicts") {
			t.Errorf("--insecure-no-auth with %q: %v", tok, err)
		}
	}
	if _, err := AuthFrom("", "", false, nowhere); err == nil || !strings.Contains(err.Error(), "--insecure-no-auth") || !strings.Contains(err.Error(), "$HOME") {
		t.Errorf("no config directory: %v", err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := AuthFrom("", "", false, at); err == nil || !strings.Contains(err.Error(), "mode 0640") {
		t.Errorf("a group-readable credential: %v", err)
	}
}

func TestHostsAllowed(t *testing.T) {
	got, err := HostsAllowed([]string{"a.example", " B.example ", "*", "::1", "198.51.100.7", ""}, "myhost.lan:7420")
	if want := []string{"a.example", "B.example", "*", "::1", "198.51.100.7", "myhost.lan"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("hostsAllowed = %q, %v; want %q", got, err, want)
	}
	if got, _ := HostsAllowed(nil, "0.0.0.0:7420"); len(got) != 0 {
		t.Errorf("an IP listen address is not a name to add: %q", got)
	}
	for _, bad := range []string{"https://a.example", "a.example:443", "a.example/mcp", "u@a.example", "[::1]:80"} {
		if _, err := HostsAllowed([]string{bad}, "127.0.0.1:7420"); err == nil || !strings.Contains(err.Error(), "--allowed-host") {
			t.Errorf("hostsAllowed(%q): %v, want an error", bad, err)
		}
	}
}
