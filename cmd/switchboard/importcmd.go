package main

// This file holds "import": it reads another client's MCP server list
// (Claude Desktop, Cursor, VS Code) with package importer and creates each
// server through the API of a running switchboard.

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/client"
	"github.com/switchboard-mcp/switchboard/importer"
	"github.com/switchboard-mcp/switchboard/internal/render"
)

// importReport is what "import" did (or, with --dry-run, would do); --json
// prints it.
type importReport struct {
	File     string            `json:"file"`
	Format   string            `json:"format"`
	DryRun   bool              `json:"dry_run,omitempty"`
	Imported []string          `json:"imported"`
	Skipped  []importSkip      `json:"skipped"`
	Renamed  map[string]string `json:"renamed"` // new name -> name in the file
	Failed   []importFailure   `json:"failed"`
	// Servers says, for each server imported (or that would be), what of
	// this machine it takes: the env values copied from this process's
	// environment (masked) and every mount its sandbox gets or is refused.
	Servers []importedServer `json:"servers"`
}

// importedServer is what one imported server takes from this machine.
type importedServer struct {
	Name string `json:"name"`
	// Env is the server's env, every value masked ("***").
	Env map[string]string `json:"env,omitempty"`
	// FromEnv are the ${env:NAME} of the file whose values were copied.
	FromEnv []importer.EnvUse `json:"from_env,omitempty"`
	// Mounts are the config's own; DerivedMounts and RefusedMounts as
	// stored (or, dry, as derived here).
	Mounts        []sb.Mount        `json:"mounts,omitempty"`
	DerivedMounts []sb.DerivedMount `json:"derived_mounts,omitempty"`
	RefusedMounts []sb.DerivedMount `json:"refused_mounts,omitempty"`
}

// takes returns what the server of cfg (the stored view's config, or the
// parsed one when dry) takes from this machine.
func takes(cfg *sb.ServerConfig, fromEnv []importer.EnvUse) importedServer {
	m := cfg.Masked()
	s := importedServer{Name: cfg.Name, Env: m.Env, FromEnv: fromEnv}
	if m.Sandbox != nil {
		s.Mounts, s.DerivedMounts, s.RefusedMounts = m.Sandbox.Mounts, m.Sandbox.DerivedMounts, m.Sandbox.RefusedMounts
	}
	return s
}

// importSkip is an entry that was not imported, and why; "exists" when a
// server of that name is configured already.
type importSkip struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// importFailure is a server the API refused.
type importFailure struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// reasonExists is the reason of a server skipped because its name is taken.
const reasonExists = "exists"

func newImportCommand() *cobra.Command {
	var dryRun, disabled bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import the MCP servers of a Claude Desktop, Cursor or VS Code config file",
		Long: `import reads the server list of another MCP client and creates each server
in the running switchboard: Claude Desktop's claude_desktop_config.json,
Cursor's mcp.json (~/.cursor or a project's .cursor), VS Code's mcp.json
(a project's .vscode) or settings.json.

Names are normalised to Switchboard's rule (lowercase letters, digits and
'-'); renamed servers are listed. Entries that cannot be imported (an
input VS Code would prompt for, an unset ${env:NAME}, no command or url)
are skipped with the reason, as are servers whose name is already
configured ("exists"): import never replaces a server. Other refusals are
reported as failures and make the exit status non-zero, after the rest
was imported. --dry-run reports what would happen and changes nothing.

Each server's summary lists its env (values masked, and which came from
this shell's environment through ${env:NAME}) and every mount its sandbox
gets: the derived ones, read-only (what its command runs, and arguments
that are host paths), and those refused. The home directory, the user's
config and state directories, serve's database directory and / are never
mounted, however the file names them (${userHome} included). Use
--dry-run to read the summary before anything is stored.`,
		Example: `  switchboard import ~/Library/Application\ Support/Claude/claude_desktop_config.json
  switchboard import .vscode/mcp.json --dry-run
  switchboard import ~/.cursor/mcp.json --disabled`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := importer.ParseFile(args[0])
			if err != nil {
				return err
			}
			if disabled {
				off := false
				for _, cfg := range res.Servers {
					cfg.Enabled = &off
				}
			}
			return withClient(cmd, func(c *client.Client) error {
				rep, err := runImport(cmd, c, args[0], res, dryRun)
				if err != nil {
					return err
				}
				if jsonOutput(cmd) {
					if err := render.JSON(cmd.OutOrStdout(), rep); err != nil {
						return err
					}
				} else {
					printImportReport(cmd.OutOrStdout(), rep, res)
				}
				if n := len(rep.Failed); n > 0 {
					return fmt.Errorf("%d of %d servers could not be imported", n, len(res.Servers))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be imported without changing anything")
	cmd.Flags().BoolVar(&disabled, "disabled", false, "import every server disabled (start them later with \"server enable\")")
	addTokenFlag(cmd, false)
	return cmd
}

// runImport creates each parsed server (or, dry, checks which names are
// taken) and reports the outcome of each. It fails only if the daemon
// cannot be reached or refuses every request alike (a wrong token).
func runImport(cmd *cobra.Command, c *client.Client, file string, res *importer.Result, dry bool) (*importReport, error) {
	rep := &importReport{File: file, Format: res.Format, DryRun: dry,
		Imported: []string{}, Skipped: []importSkip{}, Renamed: map[string]string{}, Failed: []importFailure{},
		Servers: []importedServer{}}
	for _, s := range res.Skipped {
		rep.Skipped = append(rep.Skipped, importSkip{Name: s.Name, Reason: s.Reason})
	}
	existing := map[string]bool{}
	if dry {
		servers, err := c.Servers(cmd.Context())
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "switchboard: not checking which names are taken: %v\n", explain(cmd.Context(), c, err))
		}
		for _, v := range servers {
			existing[v.Name] = true
		}
	}
	for _, cfg := range res.Servers {
		name := cfg.Name
		var err error
		stored := cfg
		switch {
		case dry && existing[name]:
			err = sb.ErrExists
		case !dry:
			var v sb.ServerView
			v, err = c.CreateServer(cmd.Context(), cfg)
			stored = &v.ServerConfig // the daemon's derived mounts
		}
		var ae *client.Error
		switch {
		case err == nil:
			rep.Imported = append(rep.Imported, name)
			rep.Servers = append(rep.Servers, takes(stored, res.FromEnv[name]))
			if orig, ok := res.Renamed[name]; ok {
				rep.Renamed[name] = orig
			}
		case sb.CodeOf(err) == sb.CodeExists:
			rep.Skipped = append(rep.Skipped, importSkip{Name: name, Reason: reasonExists})
		case sb.CodeOf(err) == sb.CodeUnauthorized, cmd.Context().Err() != nil:
			return nil, err // every other request would fail the same way
		case !errors.As(err, &ae):
			return nil, err // the daemon is unreachable
		default:
			rep.Failed = append(rep.Failed, importFailure{Name: name, Error: err.Error()})
		}
	}
	return rep, nil
}

// printImportReport prints one line per entry of the file: imported,
// skipped (with the reason) or failed, then a summary.
func printImportReport(out io.Writer, rep *importReport, res *importer.Result) {
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
		if reason == reasonExists {
			reason = "exists: a server of that name is configured already"
		}
		rows = append(rows, row{s.Name, "skipped", reason})
	}
	for _, f := range rep.Failed {
		rows = append(rows, row{f.Name, "failed", f.Error})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].name < rows[j].name })

	fmt.Fprintf(out, "%s (%s)\n", rep.File, render.OrDash(rep.Format))
	if len(rows) > 0 {
		tw := render.Table(out)
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
func printTakes(out io.Writer, s importedServer) {
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
