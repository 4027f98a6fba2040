-- +goose Up
-- config holds the whole ServerConfig as JSON; name duplicates config's name
-- as the key. Timestamps are RFC 3339 UTC text with a fixed microsecond
-- width, so they sort as text and round-trip exactly like PostgreSQL's.
CREATE TABLE servers (
    name       TEXT PRIMARY KEY NOT NULL,
    config     TEXT NOT NULL CHECK (json_valid(config)),
    version    BIGINT NOT NULL CHECK (version >= 1),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- +goose Down
DROP TABLE servers;
