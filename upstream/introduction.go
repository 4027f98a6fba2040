package upstream

import (
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds on what the session keeps of a server's initialize answer for as
// long as it lives: the name and version are shown with every listing of
// the servers, and the instructions are kept with the session.
const (
	maxServerName    = 256
	maxServerVersion = 64
	maxInstructions  = 16 << 10
)

// cutMark ends a string cut by cut.
const cutMark = "…"

// cut returns s cut to at most n bytes, at a UTF-8 boundary, with
// cutMark. The result never shares s's memory: a cut megabyte is freed.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + cutMark
}

// trimInitializeResult cuts what the go-sdk keeps of the server's
// initialize answer, in place, before anyone reads it: the go-sdk reads
// only its protocol version and capabilities afterwards, and
// Session.Info shows the server's name and version.
func trimInitializeResult(r *mcp.InitializeResult) {
	if r == nil {
		return
	}
	r.Instructions = cut(r.Instructions, maxInstructions)
	if r.ServerInfo != nil {
		si := *r.ServerInfo
		si.Name = cut(si.Name, maxServerName)
		si.Title = cut(si.Title, maxServerName)
		si.Version = cut(si.Version, maxServerVersion)
		r.ServerInfo = &si
	}
}
