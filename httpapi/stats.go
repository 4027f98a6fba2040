package httpapi

import (
	"net/http"
)

// serverStats answers GET /api/v1/servers/{name}/stats: the last hour of
// the server's calls (api.Stats), zero for one that had none.
func (a *handler) serverStats(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, err := a.reg.Get(name); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.stats.Server(name))
}

// daemonStats answers GET /api/v1/stats: the last hour of every call, with
// each configured server's totals.
func (a *handler) daemonStats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.stats.Daemon(a.reg.Names()))
}
