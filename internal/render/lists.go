package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

func ToolsetList(out io.Writer, list []api.ToolsetView, wide bool) {
	if len(list) == 0 {
		fmt.Fprintln(out, `no toolsets; add one with "switchboard toolset add"`)
		return
	}
	tw := Table(out)
	if wide {
		fmt.Fprintln(tw, "NAME\tVERSION\tTOOLS\tPROMPTS\tRESOURCES\tDESCRIPTION")
	} else {
		fmt.Fprintln(tw, "NAME\tTOOLS\tPROMPTS\tRESOURCES\tDESCRIPTION")
	}
	for _, v := range list {
		desc := v.Description
		if desc == "" {
			desc = "-"
		}
		if wide {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", v.Name, v.Version, Selectors(v.Tools), Selectors(v.Prompts), resourceSelectors(v.Resources), desc)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", v.Name, len(v.Tools), len(v.Prompts), len(v.Resources), desc)
		}
	}
	tw.Flush()
}

// Selectors writes selectors as the --tool flag takes them.
func Selectors(sels []sb.Selector) string {
	if len(sels) == 0 {
		return "-"
	}
	parts := make([]string, len(sels))
	for i, s := range sels {
		parts[i] = s.Server + "/" + s.Tool
		if s.As != "" {
			parts[i] += "=" + s.As
		}
	}
	return strings.Join(parts, ",")
}

func resourceSelectors(sels []sb.ResourceSelector) string {
	if len(sels) == 0 {
		return "-"
	}
	parts := make([]string, len(sels))
	for i, s := range sels {
		parts[i] = s.Server + "/" + s.URI
	}
	return strings.Join(parts, ",")
}

func TokenList(out io.Writer, list []sb.Token, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(out, `no tokens; create one with "switchboard token create"`)
		return
	}
	tw := Table(out)
	fmt.Fprintln(tw, "NAME\tSCOPES\tCREATED\tLAST USED")
	for _, t := range list {
		used := "never"
		if t.LastUsedAt != nil {
			used = now.Sub(*t.LastUsedAt).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, Scopes(t.Scopes), t.CreatedAt.Local().Format(time.DateTime), used)
	}
	tw.Flush()
}

func Scopes(scopes []sb.Scope) string {
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}
