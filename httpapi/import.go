package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
	"github.com/switchboard-mcp/switchboard/clientconfig"
)

// importConfig creates the servers of another client's config file, sent
// as text (POST /api/v1/import), or with dry_run says which it would
// create. A parse failure is a 400; a refused server is listed as failed,
// and the rest are still created.
func (a *handler) importConfig(w http.ResponseWriter, r *http.Request) {
	var req api.ImportRequest
	if err := decode(w, r, DefaultMaxConfigBytes, &req); err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := clientconfig.Parse([]byte(req.Config))
	if err != nil {
		a.writeError(w, r, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	}
	rep := api.ImportReport{Format: res.Format, DryRun: req.DryRun, Imported: []string{},
		Skipped: []api.ImportSkip{}, Renamed: map[string]string{}, Failed: []api.ImportFailure{}}
	for _, s := range res.Skipped {
		rep.Skipped = append(rep.Skipped, api.ImportSkip{Name: s.Name, Reason: s.Reason})
	}
	for _, cfg := range res.Servers {
		if req.Disabled {
			off := false
			cfg.Enabled = &off
		}
		if req.DryRun {
			if _, err = a.reg.Get(cfg.Name); err == nil {
				err = sb.ErrExists
			} else if errors.Is(err, sb.ErrNotFound) {
				err = cfg.Validate()
			}
		} else {
			_, err = a.reg.Create(r.Context(), cfg)
		}
		switch {
		case err == nil:
			rep.Imported = append(rep.Imported, cfg.Name)
			if orig, ok := res.Renamed[cfg.Name]; ok {
				rep.Renamed[cfg.Name] = orig
			}
		case sb.CodeOf(err) == sb.CodeExists:
			rep.Skipped = append(rep.Skipped, api.ImportSkip{Name: cfg.Name, Reason: api.ReasonExists})
		default:
			rep.Failed = append(rep.Failed, api.ImportFailure{Name: cfg.Name, Error: err.Error()})
		}
	}
	writeJSON(w, http.StatusOK, rep)
}
