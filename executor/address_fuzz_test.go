package executor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/executor"
)

// FuzzParseAddress checks that ParseAddress never panics, that a successful
// parse joins back to its input (server "/" tool, the server without a
// slash, neither part empty, no surrounding space), and that a failure is
// an *AddressError of kind ErrBadAddress. An executor with no plugins must
// refuse every address with a typed error, never a panic.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"github/create_issue", "fs/dir/list", "a/b", "/tool", "server/", "noslash", "", "/",
		" s/t", "s/t ", "s/\tt", "s//t", "é/ü", "s/t\x00", "\xff/\xfe",
	} {
		f.Add(s)
	}
	ex := executor.New()
	f.Fuzz(func(t *testing.T, addr string) {
		server, tool, err := executor.ParseAddress(addr)
		if err == nil {
			if server+"/"+tool != addr {
				t.Fatalf("ParseAddress(%q) = %q, %q: does not join back", addr, server, tool)
			}
			if server == "" || tool == "" || strings.Contains(server, "/") {
				t.Fatalf("ParseAddress(%q) = %q, %q", addr, server, tool)
			}
			if strings.TrimSpace(addr) != addr {
				t.Fatalf("ParseAddress(%q) accepted surrounding space", addr)
			}
			if s2, t2, err := executor.ParseAddress(server + "/" + tool); err != nil || s2 != server || t2 != tool {
				t.Fatalf("reparse of %q: %q %q %v", addr, s2, t2, err)
			}
		} else {
			var ae *executor.AddressError
			if !errors.As(err, &ae) || !errors.Is(err, executor.ErrBadAddress) || ae.Address != addr {
				t.Fatalf("ParseAddress(%q) error %T %v, want an *AddressError of kind ErrBadAddress", addr, err, err)
			}
			if server != "" || tool != "" {
				t.Fatalf("ParseAddress(%q) failed but returned %q, %q", addr, server, tool)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
		}
		// An executor without plugins resolves nothing, without panicking.
		_, xerr := ex.Execute(context.Background(), addr, nil, sb.InvokeOptions{})
		var ae *executor.AddressError
		switch {
		case !errors.As(xerr, &ae):
			t.Fatalf("Execute(%q) on an empty executor: %T %v", addr, xerr, xerr)
		case err != nil && !errors.Is(xerr, executor.ErrBadAddress):
			t.Fatalf("Execute(%q): %v, want ErrBadAddress", addr, xerr)
		case err == nil && !errors.Is(xerr, executor.ErrUnknownServer):
			t.Fatalf("Execute(%q): %v, want ErrUnknownServer", addr, xerr)
		}
		_ = xerr.Error()
	})
}
