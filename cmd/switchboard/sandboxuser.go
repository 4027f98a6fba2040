package main

import (
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
