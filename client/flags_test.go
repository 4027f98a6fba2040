package client

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
)

func TestParseEnvTakesABareNameFromTheEnvironment(t *testing.T) {
	lookup := func(k string) (string, bool) { return map[string]string{"TOKEN": "s3cret"}[k], k == "TOKEN" }
	got, err := ParseEnv([]string{"A=1", " B = two ", "TOKEN", "EMPTY="}, lookup)
	if want := map[string]string{"A": "1", "B": "two", "TOKEN": "s3cret", "EMPTY": ""}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseEnv = %v, %v; want %v", got, err, want)
	}
	if _, err := ParseEnv([]string{"UNSET"}, lookup); err == nil || err.Error() != "UNSET: UNSET is not set in this environment (give K=V, or set UNSET)" {
		t.Errorf("a bare name not set: %v", err)
	}
	if _, err := ParseEnv([]string{"=v"}, lookup); err == nil || err.Error() != `"=v": want K=V` {
		t.Errorf("an empty key: %v", err)
	}
	if m, err := ParseEnv(nil, lookup); m != nil || err != nil {
		t.Errorf("none: %v, %v", m, err)
	}
}

func TestParsePairs(t *testing.T) {
	got, err := ParsePairs([]string{"Authorization: Bearer x:y", "X-A:1"}, ":")
	if want := map[string]string{"Authorization": "Bearer x:y", "X-A": "1"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePairs = %v, %v", got, err)
	}
	if _, err := ParsePairs([]string{"novalue"}, ":"); err == nil || err.Error() != `"novalue": want K:V` {
		t.Errorf("no separator: %v", err)
	}
}

func TestParseMount(t *testing.T) {
	wd, _ := os.Getwd()
	for in, want := range map[string]sb.Mount{
		"/srv/data":       {Host: "/srv/data"},
		"/srv/docs:/docs": {Host: "/srv/docs", Path: "/docs"},
		"/srv/out:rw":     {Host: "/srv/out", Mode: "rw"},
		"/srv/db:/db:ro":  {Host: "/srv/db", Path: "/db", Mode: "ro"},
		"rel":             {Host: filepath.Join(wd, "rel")},
	} {
		if got, err := ParseMount(in); err != nil || got != want {
			t.Errorf("ParseMount(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"a:b:c": "want HOST", ":/x": "the host path is empty", ":rw": "the host path is empty"} {
		if _, err := ParseMount(in); err == nil || !strings.HasPrefix(err.Error(), `"`+in+`"`) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMount(%q): %v, want %q", in, err, want)
		}
	}
}

func TestParseSelectors(t *testing.T) {
	if s, err := ParseSelector("TOOL", "fs/read_file=read"); err != nil || s != (sb.Selector{Server: "fs", Tool: "read_file", As: "read"}) {
		t.Errorf("renamed: %+v, %v", s, err)
	}
	if s, err := ParseSelector("PROMPT", "gh/review_*"); err != nil || s != (sb.Selector{Server: "gh", Tool: "review_*"}) {
		t.Errorf("pattern: %+v, %v", s, err)
	}
	for _, bad := range []string{"read_file", "/x", "fs/", "fs/=x"} {
		if _, err := ParseSelector("PROMPT", bad); err == nil || !strings.Contains(err.Error(), "want SERVER/PROMPT or SERVER/PROMPT=EXPOSED") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if r, err := ParseResourceSelector("fs/file:///repo/*"); err != nil || r != (sb.ResourceSelector{Server: "fs", URI: "file:///repo/*"}) {
		t.Errorf("resource: %+v, %v", r, err)
	}
	if _, err := ParseResourceSelector("fs"); err == nil || err.Error() != `"fs": want SERVER/URI, such as fs/file:///repo/*` {
		t.Errorf("resource without a URI: %v", err)
	}
}
