package clientconfig

// This file imports a parsed file into a running switchboard: each server
// created through its API, or, dry, checked against the names it has.

import (
	"context"
	"errors"

	sb "github.com/switchboard-mcp/switchboard"
)

// Report is what "import" did (or, with --dry-run, would do); --json
// prints it.
type Report struct {
	File     string            `json:"file"`
	Format   string            `json:"format"`
	DryRun   bool              `json:"dry_run,omitempty"`
	Imported []string          `json:"imported"`
	Skipped  []Skip            `json:"skipped"`
	Renamed  map[string]string `json:"renamed"` // new name -> name in the file
	Failed   []Failure         `json:"failed"`
	// Servers says, for each server imported (or that would be), what of
	// this machine it takes: the env values copied from this process's
	// environment (masked) and every mount its sandbox gets or is refused.
	Servers []ImportedServer `json:"servers"`
}

// ImportedServer is what one imported server takes from this machine.
type ImportedServer struct {
	Name string `json:"name"`
	// Env is the server's env, every value masked ("***").
	Env map[string]string `json:"env,omitempty"`
	// FromEnv are the ${env:NAME} of the file whose values were copied.
	FromEnv []EnvUse `json:"from_env,omitempty"`
	// Mounts are the config's own; DerivedMounts and RefusedMounts as
	// stored (or, dry, as derived here).
	Mounts        []sb.Mount        `json:"mounts,omitempty"`
	DerivedMounts []sb.DerivedMount `json:"derived_mounts,omitempty"`
	RefusedMounts []sb.DerivedMount `json:"refused_mounts,omitempty"`
}

// takes returns what the server of cfg (the stored view's config, or the
// parsed one when dry) takes from this machine.
func takes(cfg *sb.ServerConfig, fromEnv []EnvUse) ImportedServer {
	m := cfg.Masked()
	s := ImportedServer{Name: cfg.Name, Env: m.Env, FromEnv: fromEnv}
	if m.Sandbox != nil {
		s.Mounts, s.DerivedMounts, s.RefusedMounts = m.Sandbox.Mounts, m.Sandbox.DerivedMounts, m.Sandbox.RefusedMounts
	}
	return s
}

// Skip is an entry that was not imported, and why; "exists" when a
// server of that name is configured already.
type Skip struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Failure is a server the API refused.
type Failure struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// ReasonExists is the reason of a server skipped because its name is taken.
const ReasonExists = "exists"

// Daemon is what Import needs of a running switchboard (a *client.Client).
type Daemon interface {
	Servers(ctx context.Context) ([]sb.ServerView, error)
	CreateServer(ctx context.Context, cfg *sb.ServerConfig) (sb.ServerView, error)
}

// Import creates each parsed server (or, dry, checks which names are
// taken) and reports the outcome of each. It fails only if the daemon
// cannot be reached or refuses every request alike (a wrong token).
func Import(ctx context.Context, d Daemon, file string, res *Result, dry bool, onListError func(error)) (*Report, error) {
	rep := &Report{File: file, Format: res.Format, DryRun: dry,
		Imported: []string{}, Skipped: []Skip{}, Renamed: map[string]string{}, Failed: []Failure{},
		Servers: []ImportedServer{}}
	for _, s := range res.Skipped {
		rep.Skipped = append(rep.Skipped, Skip(s))
	}
	existing := map[string]bool{}
	if dry {
		servers, err := d.Servers(ctx)
		if err != nil {
			onListError(err)
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
			v, err = d.CreateServer(ctx, cfg)
			stored = &v.ServerConfig // the daemon's derived mounts
		}
		var coded interface{ ErrorCode() sb.Code } // the daemon's answer
		switch {
		case err == nil:
			rep.Imported = append(rep.Imported, name)
			rep.Servers = append(rep.Servers, takes(stored, res.FromEnv[name]))
			if orig, ok := res.Renamed[name]; ok {
				rep.Renamed[name] = orig
			}
		case sb.CodeOf(err) == sb.CodeExists:
			rep.Skipped = append(rep.Skipped, Skip{Name: name, Reason: ReasonExists})
		case sb.CodeOf(err) == sb.CodeUnauthorized, ctx.Err() != nil:
			return nil, err // every other request would fail the same way
		case !errors.As(err, &coded):
			return nil, err // the daemon is unreachable
		default:
			rep.Failed = append(rep.Failed, Failure{Name: name, Error: err.Error()})
		}
	}
	return rep, nil
}
