package httpapi

import (
	"encoding/json"
	"net/http"

	sb "github.com/switchboard-mcp/switchboard"
	"github.com/switchboard-mcp/switchboard/api"
)

// toolsetBody is a toolset as sent to create or update, or a whole
// ToolsetView sent back (its times are ignored).
type toolsetBody struct {
	sb.Toolset
	Version int64 `json:"version,omitempty"`
}

func (b *toolsetBody) UnmarshalJSON(data []byte) error {
	var view struct {
		sb.Toolset
		Version   int64           `json:"version"`
		CreatedAt json.RawMessage `json:"created_at"`
		UpdatedAt json.RawMessage `json:"updated_at"`
	}
	if err := decodeStrict(data, &view); err != nil {
		return err
	}
	b.Toolset, b.Version = view.Toolset, view.Version
	return nil
}

func (a *handler) listToolsets(w http.ResponseWriter, r *http.Request) {
	out := api.ToolsetList{Toolsets: []api.ToolsetView{}}
	for _, st := range a.toolsets.List() {
		out.Toolsets = append(out.Toolsets, api.NewToolsetView(st))
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *handler) getToolset(w http.ResponseWriter, r *http.Request) {
	st, err := a.toolsets.Get(r.PathValue("name"))
	if err != nil {
		a.writeJSONError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.NewToolsetView(st))
}

func (a *handler) createToolset(w http.ResponseWriter, r *http.Request) {
	var b toolsetBody
	if err := decode(w, r, DefaultMaxConfigBytes, &b); err != nil {
		a.writeJSONError(w, err)
		return
	}
	st, err := a.toolsets.Create(r.Context(), &b.Toolset)
	if err != nil {
		a.writeJSONError(w, err)
		return
	}
	w.Header().Set("Location", "/api/v1/toolsets/"+st.Toolset.Name)
	writeJSON(w, http.StatusCreated, api.NewToolsetView(st))
}

func (a *handler) updateToolset(w http.ResponseWriter, r *http.Request) {
	var b toolsetBody
	if err := decode(w, r, DefaultMaxConfigBytes, &b); err != nil {
		a.writeJSONError(w, err)
		return
	}
	version, err := versionFrom(r, b.Version)
	if err != nil {
		a.writeJSONError(w, err)
		return
	}
	st, err := a.toolsets.Update(r.Context(), r.PathValue("name"), &b.Toolset, version)
	if err != nil {
		a.writeJSONError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.NewToolsetView(st))
}

func (a *handler) deleteToolset(w http.ResponseWriter, r *http.Request) {
	version, err := versionFrom(r, 0)
	if err != nil {
		a.writeJSONError(w, err)
		return
	}
	if err := a.toolsets.Delete(r.Context(), r.PathValue("name"), version); err != nil {
		a.writeJSONError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// writeJSONError answers err as the API does, without the server wording
// of writeError (a toolset or a token is no server).
func (a *handler) writeJSONError(w http.ResponseWriter, err error) {
	status, info := classify(err)
	writeJSON(w, status, api.ErrorBody{Error: info})
}
