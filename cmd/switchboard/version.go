package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/switchboard-mcp/switchboard/internal/buildinfo"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary",
		Long: `version prints the module version of this binary (a release tag when it was
installed with "go install ...@VERSION", "(devel)" when built from a clone),
the commit it was built from, and the Go version. --version says the same.`,
		Example: `  switchboard version
  switchboard version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := buildinfo.Read(version)
			return show(cmd, bi, func(out io.Writer) { io.WriteString(out, bi.String()+"\n") })
		},
	}
}
