-- +goose Up
-- config holds the whole ServerConfig as JSON; name duplicates config's name
-- as the key.
CREATE TABLE servers (
    name       TEXT PRIMARY KEY,
    config     JSONB NOT NULL,
    version    BIGINT NOT NULL CHECK (version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE servers;
