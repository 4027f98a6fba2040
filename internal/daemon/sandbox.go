package daemon

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/switchboard-mcp/switchboard/sandbox"
)

// SandboxRuntime returns the sandbox runtime the servers of a command run
// in: nil (sandbox.System) for a Switchboard that is not root and names
// no user; as root, one that runs them as the named user, or as
// sandbox.DefaultUser, which it creates if missing.
func SandboxRuntime(spec string, log *slog.Logger) (*sandbox.Runtime, error) {
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
