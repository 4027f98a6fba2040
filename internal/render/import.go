package render

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/clientconfig"
)

// ImportReport prints one line per entry of the file: imported,
// skipped (with the reason) or failed, then a summary.
func ImportReport(out io.Writer, rep *clientconfig.Report, res *clientconfig.Result) {
	imported := "imported"
	if rep.DryRun {
		imported = "would import"
	}
	transports := map[string]sb.Transport{}
	for _, cfg := range res.Servers {
		transports[cfg.Name] = cfg.Transport
	}
	type row struct{ name, result, detail string }
	var rows []row
	for _, name := range rep.Imported {
		detail := string(transports[name])
		if orig, ok := rep.Renamed[name]; ok {
			detail += fmt.Sprintf(", renamed from %q", orig)
		}
		rows = append(rows, row{name, imported, detail})
	}
	for _, s := range rep.Skipped {
		reason := s.Reason
		if reason == clientconfig.ReasonExists {
			reason = "exists: a server of that name is configured already"
		}
		rows = append(rows, row{s.Name, "skipped", reason})
	}
	for _, f := range rep.Failed {
		rows = append(rows, row{f.Name, "failed", f.Error})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].name < rows[j].name })

	fmt.Fprintf(out, "%s (%s)\n", rep.File, OrDash(rep.Format))
	if len(rows) > 0 {
		tw := Table(out)
		fmt.Fprintln(tw, "SERVER\tRESULT\tDETAIL")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.result, strings.ReplaceAll(r.detail, "\n", " "))
		}
		tw.Flush()
	}
	for _, s := range rep.Servers {
		printTakes(out, s)
	}
	fmt.Fprintf(out, "%s %d, skipped %d, failed %d\n", imported, len(rep.Imported), len(rep.Skipped), len(rep.Failed))
}

// printTakes prints what an imported server takes from this machine: its
// env, masked, and its mounts, one a line; nothing if it takes nothing.
func printTakes(out io.Writer, s clientconfig.ImportedServer) {
	var lines []string
	from := map[string]string{}
	for _, u := range s.FromEnv {
		if k, ok := strings.CutPrefix(u.Where, "env "); ok {
			from[k] = u.Var
		} else {
			lines = append(lines, fmt.Sprintf("%s: the value of $%s from this environment", u.Where, u.Var))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		line := fmt.Sprintf("env %s=%s", k, s.Env[k])
		if v, ok := from[k]; ok {
			line += fmt.Sprintf(" (the value of $%s from this environment)", v)
		}
		lines = append(lines, line)
	}
	for _, m := range s.Mounts {
		mode, dst := orDefault(m.Mode, sb.MountReadOnly), orDefault(m.Path, m.Host)
		lines = append(lines, fmt.Sprintf("mount %s at %s (%s, the file's own)", m.Host, dst, mode))
	}
	for _, m := range s.DerivedMounts {
		lines = append(lines, fmt.Sprintf("mount %s (ro, derived: %s)", m.Host, m.Why))
	}
	for _, m := range s.RefusedMounts {
		lines = append(lines, fmt.Sprintf("not mounted %s (%s)", m.Host, m.Why))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(out, "%s:\n", s.Name)
	for _, l := range lines {
		fmt.Fprintf(out, "  %s\n", strings.ReplaceAll(l, "\n", " "))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ClientChoice is the error of "client-config" named no client it knows
// (args): what is wrong, and the clients (name and what it is), sorted.
func ClientChoice(args []string, clients map[string]string) error {
	var b strings.Builder
	switch len(args) {
	case 0:
		b.WriteString("name the client to configure:")
	case 1:
		fmt.Fprintf(&b, "no client %q; the clients are:", args[0])
	default:
		b.WriteString("name one client; the clients are:")
	}
	for _, name := range slices.Sorted(maps.Keys(clients)) {
		fmt.Fprintf(&b, "\n  %-12s %s", name, clients[name])
	}
	return errors.New(b.String())
}
