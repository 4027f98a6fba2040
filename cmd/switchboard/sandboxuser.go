package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"github.com/switchboard-mcp/switchboard/sandbox"
)

// registerSandboxUser adds --sandbox-user, shared by the commands that
// start servers (serve, stdio, check).
func registerSandboxUser(f *pflag.FlagSet, v *string) {
	f.StringVar(v, "sandbox-user", os.Getenv("SWITCHBOARD_SANDBOX_USER"),
		"the user sandboxed servers run as when Switchboard runs as root, a name or UID[:GID]; never root "+
			"(env SWITCHBOARD_SANDBOX_USER; default "+sandbox.DefaultUser+", created as a system user if missing)")
}

// sandboxRuntime returns the sandbox runtime the servers of a command run
// in: nil (sandbox.System) for a Switchboard that is not root and names
// no user; as root, one that runs them as the named user, or as
// sandbox.DefaultUser, which it creates if missing.
func sandboxRuntime(spec string, log *slog.Logger) (*sandbox.Runtime, error) {
	if os.Geteuid() != 0 {
		if spec != "" {
			return nil, fmt.Errorf("--sandbox-user %s: only a Switchboard running as root runs its servers as another user; "+
				"not as root, they run as you (uid %d)", spec, os.Geteuid())
		}
		return nil, nil
	}
	create := spec == ""
	if create {
		spec = sandbox.DefaultUser
	}
	cred, err := sandbox.LookupUser(spec, create)
	if err != nil {
		if !create {
			return nil, fmt.Errorf("--sandbox-user: %w", err)
		}
		// The library's own fallback, nobody, still keeps them from root.
		log.Warn("running sandboxed servers as nobody: "+err.Error(), "error", err)
		return nil, nil
	}
	log.Debug("sandboxed servers run as an unprivileged user", "uid", cred.Uid, "gid", cred.Gid)
	return &sandbox.Runtime{Credential: cred}, nil
}
