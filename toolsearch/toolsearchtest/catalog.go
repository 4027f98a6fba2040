// Package toolsearchtest generates catalogs of tools for the tests and
// benchmarks of tool search: many servers of made-up services, whose tools
// read like real ones (create_invoice, "Creates a new invoice in
// billing."), in every naming style, so that a search meets the words of
// real queries among them.
package toolsearchtest

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/switchboard-mcp/switchboard/toolsearch"
)

// Catalog returns perServer tools of each of servers servers, the same for
// the same arguments: by server name. Tool names follow one style per
// server (snake_case, camelCase or kebab-case).
func Catalog(servers, perServer int) map[string][]toolsearch.Tool {
	r := rand.New(rand.NewPCG(33, uint64(servers)*1000+uint64(perServer)))
	out := make(map[string][]toolsearch.Tool, servers)
	for i := range servers {
		service := services[i%len(services)]
		name := fmt.Sprintf("%s-%02d", service, i/len(services))
		objs := make([]string, len(objects))
		copy(objs, objects)
		r.Shuffle(len(objs), func(a, b int) { objs[a], objs[b] = objs[b], objs[a] })
		style := i % 3
		var tools []toolsearch.Tool
		for n := 0; len(tools) < perServer; n++ {
			v := verbs[n%len(verbs)]
			obj := objs[(n/len(verbs))%len(objs)]
			if n/len(verbs) >= len(objs) {
				obj = fmt.Sprintf("%s %d", obj, n/(len(verbs)*len(objs)))
			}
			tools = append(tools, toolsearch.Tool{
				Name:        styled(style, v.name+" "+obj),
				Description: fmt.Sprintf(v.description, obj, service) + " " + extras[r.IntN(len(extras))],
				Params:      v.params(obj),
			})
		}
		out[name] = tools
	}
	return out
}

// styled joins words in one of three naming styles.
func styled(style int, words string) string {
	ws := strings.Fields(words)
	switch style {
	case 0:
		return strings.Join(ws, "_")
	case 1:
		for i := 1; i < len(ws); i++ {
			ws[i] = strings.ToUpper(ws[i][:1]) + ws[i][1:]
		}
		return strings.Join(ws, "")
	}
	return strings.Join(ws, "-")
}

type verb struct {
	name, description string // description: %[1]s the object, %[2]s the service
	params            func(obj string) []toolsearch.Param
}

func idParam(obj string) []toolsearch.Param {
	return []toolsearch.Param{{Name: "id", Description: "The id of the " + obj + "."}}
}

func listParams(obj string) []toolsearch.Param {
	return []toolsearch.Param{{Name: "limit", Description: "How many " + obj + " records to return."},
		{Name: "cursor", Description: "Where the previous page ended."}}
}

var verbs = []verb{
	{"create", "Creates a new %s in %s.", func(obj string) []toolsearch.Param {
		return []toolsearch.Param{{Name: "name", Description: "The name of the new " + obj + "."}, {Name: "fields", Description: "Its other fields."}}
	}},
	{"get", "Returns one %s of %s by its id, with all its fields.", idParam},
	{"list", "Lists the %s records of %s, newest first, a page at a time.", listParams},
	{"update", "Updates the fields of an existing %s in %s.", idParam},
	{"delete", "Deletes a %s from %s permanently.", idParam},
	{"search", "Searches the %s records of %s by keyword.", func(obj string) []toolsearch.Param {
		return []toolsearch.Param{{Name: "query", Description: "Words to look for in the " + obj + " records."}}
	}},
	{"archive", "Archives a %s of %s so that it no longer shows in lists.", idParam},
	{"export", "Exports the %s records of %s as a CSV file.", listParams},
	{"count", "Counts the %s records of %s that match a filter.", listParams},
	{"assign", "Assigns a %s of %s to a user or a team.", func(obj string) []toolsearch.Param {
		return append(idParam(obj), toolsearch.Param{Name: "assignee", Description: "The user or team."})
	}},
}

var services = []string{"billing", "crm", "helpdesk", "wiki", "chat", "calendar", "deploy", "storage", "analytics",
	"monitoring", "identity", "vcs", "tracker", "docs", "mail", "ads", "inventory", "shipping", "hr", "payroll"}

var objects = []string{"invoice", "payment", "customer", "subscription", "refund", "ticket", "comment", "attachment",
	"page", "space", "message", "channel", "thread", "event", "reminder", "deployment", "release", "build", "pipeline",
	"bucket", "table", "row", "query", "dashboard", "chart", "alert", "incident", "metric", "user", "group", "role",
	"permission", "repository", "branch", "commit", "label", "milestone", "project", "task", "note", "document",
	"folder", "image", "video", "contact", "lead", "campaign", "email", "template", "webhook", "secret", "certificate",
	"domain", "cluster", "node", "volume", "snapshot", "backup", "order", "product", "shipment", "employee"}

var extras = []string{
	"Requires the write scope.", "Returns the updated record.", "Fails if the record does not exist.",
	"Use it before making changes in bulk.", "The result is paginated.", "Only administrators may call it.",
	"Changes are visible to every member at once.", "Rate limited to 10 calls a second.", "",
}
