package api

import (
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// ToolsetView is a toolset as the API returns it: GET, POST and PUT
// /api/v1/toolsets[/{name}]. A PUT may send it back whole ("GET, edit,
// PUT"): version guards the edit, the times are ignored.
type ToolsetView struct {
	sb.Toolset
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ToolsetList is the answer of GET /api/v1/toolsets, ordered by name.
type ToolsetList struct {
	Toolsets []ToolsetView `json:"toolsets"`
}

// NewToolsetView is the view of a stored toolset.
func NewToolsetView(st sb.StoredToolset) ToolsetView {
	return ToolsetView{Toolset: st.Toolset, Version: st.Version, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt}
}

// TokenRequest is the body of POST /api/v1/tokens.
type TokenRequest struct {
	Name   string     `json:"name"`
	Scopes []sb.Scope `json:"scopes"`
}

// CreatedToken is the answer (201) of POST /api/v1/tokens: the token and
// its secret ("token"), shown this once; only its hash is kept.
type CreatedToken struct {
	sb.Token
	Secret string `json:"token"`
}

// TokenList is the answer of GET /api/v1/tokens: every token, ordered by
// name, never a secret.
type TokenList struct {
	Tokens []sb.Token `json:"tokens"`
}
