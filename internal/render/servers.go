package render

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/internal/prompt"
)

// Info prints the runtime info a check or a test session reached:
// status, transport, protocol, server info and tools, or the error with
// its phase and code and the last lines the server wrote to stderr.
func Info(out io.Writer, info sb.RuntimeInfo, logs []string, failed bool) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	if failed && info.Error != nil {
		row("status", "error")
		row("phase", string(info.Error.Phase))
		row("code", string(info.Error.Code))
		row("error", info.Error.Message)
	} else {
		row("status", string(info.Status))
		row("transport", string(info.Transport))
		row("protocol", info.ProtocolVersion)
		if info.ServerInfo != nil {
			row("server", strings.TrimSpace(info.ServerInfo.Name+" "+info.ServerInfo.Version))
		}
		row("tools", fmt.Sprint(info.ToolCount))
		row("resources", fmt.Sprint(info.ResourceCount))
		row("prompts", fmt.Sprint(info.PromptCount))
	}
	tw.Flush()
	if !failed && len(info.Tools) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tDESCRIPTION")
		for _, t := range info.Tools {
			fmt.Fprintf(tw, "%s\t%s\n", t.Name, FirstLine(t.Description, 80))
		}
		tw.Flush()
	}
	if failed && len(logs) > 0 {
		fmt.Fprintln(out, "\nlast stderr lines:")
		for _, l := range logs[max(0, len(logs)-10):] {
			fmt.Fprintln(out, "  "+l)
		}
	}
}

// CheckJSON prints what "check -o json" prints: the runtime info and the
// logs, which are left out when there are none, unlike in the API's test
// result.
func CheckJSON(out io.Writer, info sb.RuntimeInfo, logs []string) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Runtime sb.RuntimeInfo `json:"runtime"`
		Logs    []string       `json:"logs,omitempty"`
	}{info, logs})
}

func FirstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}

// ListErrorWidth bounds the ERROR column of "server list".
const ListErrorWidth = 60

// ServerList prints the table of "server list": errors cut to fit
// a line, or, wide, whole (on one line) with their code and the pid.
func ServerList(out io.Writer, servers []sb.ServerView, wide bool) {
	if len(servers) == 0 {
		fmt.Fprintln(out, `no servers configured; add one with "switchboard server add"`)
		return
	}
	tw := Table(out)
	if wide {
		fmt.Fprintln(tw, "NAME\tSTATUS\tTRANSPORT\tTOOLS\tRECONNECTS\tPID\tCODE\tERROR")
	} else {
		fmt.Fprintln(tw, "NAME\tSTATUS\tTRANSPORT\tTOOLS\tRECONNECTS\tERROR")
	}
	cut := false
	for _, v := range servers {
		transport := string(v.Runtime.Transport)
		if transport == "" {
			transport = string(v.Transport)
		}
		tools := "-"
		if v.Runtime.Status == sb.StatusConnected {
			tools = strconv.Itoa(v.Runtime.ToolCount)
		}
		errText, code := "-", "-"
		if e := v.Runtime.Error; e != nil {
			whole := string(e.Phase) + ": " + e.Message
			code = string(e.Code)
			if wide {
				errText = strings.Join(strings.Fields(whole), " ")
			} else {
				errText = prompt.FirstLine(whole, ListErrorWidth)
				cut = cut || errText != whole
			}
		}
		if wide {
			pid := "-"
			if v.Runtime.PID != 0 {
				pid = strconv.Itoa(v.Runtime.PID)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", v.Name, v.Runtime.Status, transport, tools, v.Runtime.Reconnects, pid, code, errText)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", v.Name, v.Runtime.Status, transport, tools, v.Runtime.Reconnects, errText)
		}
	}
	tw.Flush()
	if cut {
		fmt.Fprintln(out, `(errors cut to fit; "server list -o wide" or "server show NAME" prints them whole)`)
	}
}

// ServerView prints "server show": config, runtime, tools.
func ServerView(out io.Writer, v *sb.ServerView, now time.Time) {
	tw := Table(out)
	row := func(k, val string) {
		if val != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, val)
		}
	}
	ms := func(v int64, def string) string {
		if v == 0 {
			return def
		}
		return (time.Duration(v) * time.Millisecond).String()
	}
	row("name", v.Name)
	row("enabled", strconv.FormatBool(v.IsEnabled()))
	row("transport", string(v.Transport))
	row("command", v.Command)
	if len(v.Args) > 0 {
		row("args", quoteArgs(v.Args))
	}
	row("env", sortedPairs(v.Env, "="))
	row("cwd", v.Cwd)
	row("url", v.URL)
	row("headers", sortedPairs(v.Headers, ": "))
	if v.OAuth != nil {
		row("oauth", describeOAuth(v.OAuth))
	}
	row("startup timeout", ms(v.StartupTimeoutMS, "default ("+v.StartupTimeout().String()+")"))
	row("call timeout", ms(v.CallTimeoutMS, "default ("+sb.DefaultCallTimeout.String()+")"))
	row("max total", ms(v.MaxTotalTimeoutMS, "none"))
	if v.ProtocolVersion != "" {
		row("protocol (pinned)", v.ProtocolVersion)
	}
	if r := v.Retry; r != nil {
		row("retry", fmt.Sprintf("max_attempts=%d delays_ms=%v slow_retry_ms=%d", r.MaxAttempts, r.DelaysMS, r.SlowRetryMS))
	}
	if s := v.Sandbox; s != nil && s.Enabled != nil {
		row("sandbox", map[bool]string{true: "required", false: "off"}[*s.Enabled])
	}
	for i, l := range mountLines(v.Sandbox) {
		if i == 0 {
			row("mounts", l)
		} else {
			row("", l)
		}
	}
	row("version", strconv.FormatInt(v.Version, 10))
	row("created", Time(v.CreatedAt, now))
	row("updated", Time(v.UpdatedAt, now))
	tw.Flush()

	rt := v.Runtime
	fmt.Fprintln(out, "\nruntime")
	tw = Table(out)
	row("  status", string(rt.Status))
	if e := rt.Error; e != nil {
		row("  error", e.Message)
		row("  phase", string(e.Phase))
		row("  code", string(e.Code))
		if !e.At.IsZero() {
			row("  at", Time(e.At, now))
		}
	}
	if rt.Attempt > 0 {
		row("  attempt", strconv.Itoa(rt.Attempt))
	}
	row("  reconnects", strconv.Itoa(rt.Reconnects))
	if rt.NextRetryAt != nil {
		row("  next retry", Time(*rt.NextRetryAt, now))
	}
	if rt.StartupTimedOut {
		row("  startup", "timed out; still trying")
	}
	if rt.ConnectedSince != nil {
		row("  connected since", Time(*rt.ConnectedSince, now))
	}
	row("  transport", string(rt.Transport))
	row("  protocol", rt.ProtocolVersion)
	if rt.ServerInfo != nil {
		row("  server", strings.TrimSpace(rt.ServerInfo.Name+" "+rt.ServerInfo.Version))
	}
	if rt.PID != 0 {
		row("  pid", strconv.Itoa(rt.PID))
	}
	if sbx := rt.Sandbox; sbx != nil {
		row("  sandbox", SandboxSummary(sbx))
	}
	if rt.Status == sb.StatusConnected {
		row("  tools", strconv.Itoa(rt.ToolCount))
		row("  resources", strconv.Itoa(rt.ResourceCount))
		row("  prompts", strconv.Itoa(rt.PromptCount))
	}
	tw.Flush()

	if len(rt.Tools) > 0 {
		fmt.Fprintln(out)
		ToolTable(out, v.Name, rt.Tools)
	}
}

// ToolTable prints TOOL/DESCRIPTION rows of one server's tools, each
// named by the address "call" takes.
func ToolTable(out io.Writer, server string, tools []sb.ToolInfo) {
	tw := Table(out)
	fmt.Fprintln(tw, "TOOL\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s/%s\t%s\n", server, t.Name, prompt.FirstLine(t.Description, 80))
	}
	tw.Flush()
}

// sortedPairs prints a map as "K=V, K=V" in key order.
func sortedPairs(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + sep + m[k]
	}
	return strings.Join(parts, ", ")
}

// quoteArgs prints arguments separated by spaces, quoting the ones that
// would otherwise be ambiguous.
func quoteArgs(args []string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			a = strconv.Quote(a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// SandboxSummary says in one line how a server is sandboxed, or why not.
func SandboxSummary(s *sb.SandboxInfo) string {
	if !s.Enabled {
		return strings.TrimSpace("off " + orParens(s.Reason))
	}
	network := "network on"
	switch {
	case !s.Network:
		network = "network off"
	case len(s.NetworkAllowed) > 0:
		network = "network only to " + strings.Join(s.NetworkAllowed, ", ")
	case len(s.NetworkAllow) > 0:
		network = "network only to " + strings.Join(s.NetworkAllow, ", ")
	}
	parts := []string{network, "limits " + OrDash(s.Limits)}
	if s.WorkspaceMode != "" {
		parts = append(parts, string(s.WorkspaceMode)+" workspace")
	}
	if len(s.Unenforced) > 0 {
		parts = append(parts, "not enforced here: "+strings.Join(s.Unenforced, ", "))
	}
	return "on (" + strings.Join(parts, "; ") + ")"
}

func orParens(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// mountLines says, one line each, what of the host a stdio server's
// sandbox shows: the config's own mounts, the derived ones (read-only,
// what its command runs and the arguments that are host paths) and those
// derivation refused. None for a config that has none.
func mountLines(s *sb.SandboxConfig) []string {
	if s == nil {
		return nil
	}
	var lines []string
	for _, m := range s.Mounts {
		mode := m.Mode
		if mode == "" {
			mode = sb.MountReadOnly
		}
		at := ""
		if m.Path != "" && m.Path != m.Host {
			at = " at " + m.Path
		}
		lines = append(lines, fmt.Sprintf("%s%s (%s, --mount)", m.Host, at, mode))
	}
	for _, m := range s.DerivedMounts {
		lines = append(lines, fmt.Sprintf("%s (ro, derived: %s)", m.Host, m.Why))
	}
	for _, m := range s.RefusedMounts {
		lines = append(lines, fmt.Sprintf("not %s (%s)", m.Host, m.Why))
	}
	return lines
}

// Mounts prints mountLines under the line of an add or an edit.
func Mounts(out io.Writer, s *sb.SandboxConfig) {
	for _, l := range mountLines(s) {
		fmt.Fprintf(out, "  mount %s\n", l)
	}
}

// describeOAuth is the one-line summary of an oauth block in server show
// (the secret is the view's mask).
func describeOAuth(o *sb.OAuthConfig) string {
	parts := []string{"grant " + o.EffectiveGrant()}
	if o.ClientID != "" {
		parts = append(parts, "client_id "+o.ClientID)
	}
	if o.ClientSecret != "" {
		parts = append(parts, "client_secret "+o.ClientSecret)
	}
	if len(o.Scopes) > 0 {
		parts = append(parts, "scopes "+strings.Join(o.Scopes, " "))
	}
	if o.ClientMetadataURL != "" {
		parts = append(parts, "client_metadata_url "+o.ClientMetadataURL)
	}
	return strings.Join(parts, ", ")
}
