package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/gateway"
	"github.com/switchboard-mcp/switchboard/internal/gobuild"
	"github.com/switchboard-mcp/switchboard/registry"
	"github.com/switchboard-mcp/switchboard/sandbox/sandboxtest"
	"github.com/switchboard-mcp/switchboard/toolsearch"
	"github.com/switchboard-mcp/switchboard/toolsearch/toolsearchtest"
	"github.com/switchboard-mcp/switchboard/upstream"
)

// recallQueries are what a person would type to find each tool, written
// from the tools' descriptions as the real servers give them, not from
// their names: the expected tool as "server/tool".
var recallQueries = []struct{ query, want string }{
	// @modelcontextprotocol/server-filesystem
	{"show me what is inside a text file", "files/read_text_file"},
	{"overwrite a document with new content", "files/write_file"},
	{"make line based changes to a text file and get a diff", "files/edit_file"},
	{"create nested folders in one operation", "files/create_directory"},
	{"detailed listing of everything in a path", "files/list_directory"},
	{"listing of files with their sizes", "files/list_directory_with_sizes"},
	{"recursive tree view as json", "files/directory_tree"},
	{"rename a file", "files/move_file"},
	{"find files matching a glob pattern", "files/search_files"},
	{"size, permissions and last modified time of a file", "files/get_file_info"},
	{"which directories may the server access", "files/list_allowed_directories"},
	{"read the contents of many files simultaneously", "files/read_multiple_files"},
	{"read an image or audio file as base64", "files/read_media_file"},
	// @modelcontextprotocol/server-memory
	{"add entities to the knowledge graph", "memory/create_entities"},
	{"connect two entities with a relation in active voice", "memory/create_relations"},
	{"attach new observations to an existing entity", "memory/add_observations"},
	{"remove entities along with their associated relations", "memory/delete_entities"},
	{"remove specific observations from an entity", "memory/delete_observations"},
	{"delete relations from the graph", "memory/delete_relations"},
	{"dump the entire knowledge graph", "memory/read_graph"},
	{"look up nodes in the graph based on a query", "memory/search_nodes"},
	{"open graph nodes by their names", "memory/open_nodes"},
	// @modelcontextprotocol/server-everything
	{"echoes back my input string", "everything/echo"},
	{"print all environment variables for debugging the configuration", "everything/get-env"},
	{"the sum of two numbers", "everything/get-sum"},
	{"show a tiny logo image", "everything/get-tiny-image"},
	{"compress a file with gzip", "everything/gzip-file-as-resource"},
	{"turn simulated random logging on or off", "everything/toggle-simulated-logging"},
	{"toggle resource subscription updates", "everything/toggle-subscriber-updates"},
	{"long running operation with progress updates", "everything/trigger-long-running-operation"},
	{"current roots provided by the client", "everything/get-roots-list"},
	{"deep research that gathers, analyzes and synthesizes information", "everything/simulate-research-query"},
	{"structured content with an output schema for validation", "everything/get-structured-content"},
	{"message with annotations as metadata about content", "everything/get-annotated-message"},
	{"up to ten links referencing different types of resources", "everything/get-resource-links"},
	// internal/testserver
	{"adds two numbers", "tests/add"},
	{"sleep some milliseconds without reporting progress", "tests/sleep"},
	{"ask the client for an answer and return it", "tests/elicit"},
	{"register a new echo tool so the list changes", "tests/add_tool"},
	{"exit the server process without answering", "tests/crash"},
	{"return a text content of x bytes", "tests/big"},
	{"return a tool error carrying the message", "tests/fail"},
	{"answer the call with a json-rpc error instead of a result", "tests/rpc_error"},
	{"ask the client's model to answer a message", "tests/sample"},
	{"send a log notification to the client", "tests/log"},
	{"one content of every kind: text, image, audio, resource link", "tests/mixed"},
	{"the server's process id", "tests/pid"},
	// the go-sdk's everything example server
	{"say hi", "gosdk/greet"},
}

// Recall floors, a little under what was measured (45 and 47 of the 48
// queries on the real servers, 46 and 47 among the generated tools;
// docs/tool-search.md): a change that ranks two more queries worse fails
// here.
const (
	recallAt1Floor            = 0.90
	recallAt5Floor            = 0.95
	recallAt1DistractorsFloor = 0.90
	recallAt5DistractorsFloor = 0.95
)

// The query set against the real servers, sandboxed as users run them,
// through search_tools on /mcp in search mode (recall@1 and @5), and
// against the same tools among 5,000 generated ones.
func TestSearchRecallOnRealServers(t *testing.T) {
	rt := sandboxtest.Runtime(t)
	npm := os.Getenv("SWITCHBOARD_SANDBOX_NPM")
	if npm == "" {
		if os.Getenv("SWITCHBOARD_SANDBOX_REQUIRED") != "" {
			t.Fatal("SWITCHBOARD_SANDBOX_NPM is not set: source scripts/sandbox-setup.sh")
		}
		t.Skip("SWITCHBOARD_SANDBOX_NPM is not set: source scripts/sandbox-setup.sh")
	}
	modules := filepath.Join(npm, "node_modules", "@modelcontextprotocol")
	dir, err := os.MkdirTemp("", "gosdk-everything-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Open to the sandbox's user, as an installed program is.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gosdk, err := gobuild.Build("github.com/modelcontextprotocol/go-sdk/examples/server/everything", filepath.Join(dir, "everything"))
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	sandboxtest.GiveToServers(t, rt, data)
	code := sb.Mount{Host: npm}
	node := func(name string, args ...string) *sb.ServerConfig {
		env := map[string]string{}
		for _, k := range []string{"NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"} {
			if v := os.Getenv(k); v != "" {
				env[k] = v
			}
		}
		return &sb.ServerConfig{Name: name, Transport: sb.TransportStdio, Command: "node", Args: args, Env: env,
			Sandbox: &sb.SandboxConfig{Mounts: []sb.Mount{code}}}
	}
	files := node("files", filepath.Join(modules, "server-filesystem", "dist", "index.js"), "/data")
	files.Sandbox.Mounts = append(files.Sandbox.Mounts, sb.Mount{Host: data, Path: "/data", Mode: sb.MountReadWrite})
	memory := node("memory", filepath.Join(modules, "server-memory", "dist", "index.js"))
	memory.Env["MEMORY_FILE_PATH"] = sb.SandboxWorkspacePath + "/memory.jsonl"
	servers := []*sb.ServerConfig{files, memory,
		node("everything", filepath.Join(modules, "server-everything", "dist", "index.js")),
		stdio(t, "tests"),
		{Name: "gosdk", Transport: sb.TransportStdio, Command: gosdk},
	}
	e := newEnvRegistry(t, "", registry.Options{Session: upstream.Options{Sandbox: rt, SandboxDefault: true, HealthInterval: -1}},
		gateway.Options{ResyncInterval: time.Second, MCPMode: sb.ModeSearch, ReadyTimeout: 2 * time.Minute}, servers...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := e.gw.WaitInStep(ctx); err != nil {
		t.Fatal(err)
	}
	catalogs := map[string][]toolsearch.Tool{}
	for _, s := range servers {
		v, err := e.reg.Get(s.Name)
		if err != nil || v.Runtime.Status != sb.StatusConnected || v.Runtime.Sandbox == nil || !v.Runtime.Sandbox.Enabled {
			t.Fatalf("%s: %+v, %v; want it connected in its sandbox", s.Name, v.Runtime, err)
		}
		session, _ := e.reg.Session(s.Name)
		tools, _, _, _ := session.Catalog()
		catalogs[s.Name] = gateway.SearchDocs(tools)
	}

	cs := e.connect("/mcp", nil)
	at1, at5 := 0, 0
	for _, q := range recallQueries {
		server, tool, _ := cutAddress(q.want)
		want := server + "__" + tool
		names, _ := search(t, cs, q.query, 5)
		switch i := indexOf(names, want); {
		case i == 0:
			at1++
			at5++
		case i > 0:
			at5++
			t.Logf("%q: %s is number %d of %v", q.query, want, i+1, names)
		default:
			t.Logf("%q: %s not among %v", q.query, want, names)
		}
	}
	n := float64(len(recallQueries))
	t.Logf("real servers (%d tools), %d queries: recall@1 %.3f, recall@5 %.3f", countTools(catalogs), len(recallQueries), float64(at1)/n, float64(at5)/n)
	if float64(at1)/n < recallAt1Floor || float64(at5)/n < recallAt5Floor {
		t.Errorf("recall@1 %.3f, recall@5 %.3f; floors %.2f and %.2f", float64(at1)/n, float64(at5)/n, recallAt1Floor, recallAt5Floor)
	}

	// The same tools among 5,000 generated ones of 100 servers.
	ix := toolsearch.New()
	for s, tools := range toolsearchtest.Catalog(100, 50) {
		ix.Set(s, tools)
	}
	for s, tools := range catalogs {
		ix.Set(s, tools)
	}
	at1, at5 = 0, 0
	for _, q := range recallQueries {
		hits := ix.Search(q.query, 5, nil)
		for i, h := range hits {
			if h.Tool.Server+"/"+h.Tool.Name == q.want {
				if i == 0 {
					at1++
				}
				at5++
				break
			}
		}
	}
	t.Logf("among %d tools: recall@1 %.3f, recall@5 %.3f", ix.Len(), float64(at1)/n, float64(at5)/n)
	if float64(at1)/n < recallAt1DistractorsFloor || float64(at5)/n < recallAt5DistractorsFloor {
		t.Errorf("among %d tools: recall@1 %.3f, recall@5 %.3f; floors %.2f and %.2f", ix.Len(), float64(at1)/n, float64(at5)/n,
			recallAt1DistractorsFloor, recallAt5DistractorsFloor)
	}
}

func cutAddress(a string) (server, tool string, ok bool) {
	for i := range len(a) {
		if a[i] == '/' {
			return a[:i], a[i+1:], true
		}
	}
	return "", a, false
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

func countTools(catalogs map[string][]toolsearch.Tool) int {
	n := 0
	for _, tools := range catalogs {
		n += len(tools)
	}
	return n
}
