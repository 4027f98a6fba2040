-- +goose Up
-- A toolset is stored like a server: the whole Toolset as JSON, keyed by
-- its name, with a version for guarded writes.
CREATE TABLE toolsets (
    name       TEXT PRIMARY KEY NOT NULL,
    toolset    TEXT NOT NULL CHECK (json_valid(toolset)),
    version    BIGINT NOT NULL CHECK (version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- An API token: never its secret, only the SHA-256 of it. scopes is a JSON
-- array of strings.
CREATE TABLE tokens (
    name         TEXT PRIMARY KEY NOT NULL,
    hash         BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),
    scopes       TEXT NOT NULL CHECK (json_valid(scopes)),
    created_at   TEXT NOT NULL,
    last_used_at TEXT
);

-- +goose Down
DROP TABLE tokens;
DROP TABLE toolsets;
