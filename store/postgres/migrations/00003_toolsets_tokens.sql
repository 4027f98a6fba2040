-- +goose Up
-- A toolset is stored like a server: the whole Toolset as JSON, keyed by
-- its name, with a version for guarded writes, and announced to the other
-- replicas by the trigger function of 00002_notify.sql.
CREATE TABLE toolsets (
    name       TEXT PRIMARY KEY,
    toolset    JSONB NOT NULL,
    version    BIGINT NOT NULL CHECK (version >= 1),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TRIGGER toolsets_notify_change
    AFTER INSERT OR UPDATE OR DELETE ON toolsets
    FOR EACH ROW EXECUTE FUNCTION switchboard_notify_change('toolset');

-- An API token: never its secret, only the SHA-256 of it. version is
-- always 1 (tokens are not edited); it is there for the notify function.
-- Creation and revocation are announced, so that a token revoked through
-- one replica stops working on all of them at once; the last-used time is
-- not (it changes all the time and nobody needs to hear of it).
CREATE TABLE tokens (
    name         TEXT PRIMARY KEY,
    hash         BYTEA NOT NULL UNIQUE CHECK (length(hash) = 32),
    scopes       JSONB NOT NULL,
    version      BIGINT NOT NULL DEFAULT 1,
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ
);

CREATE TRIGGER tokens_notify_change
    AFTER INSERT OR DELETE ON tokens
    FOR EACH ROW EXECUTE FUNCTION switchboard_notify_change('token');

-- +goose Down
DROP TABLE tokens;
DROP TABLE toolsets;
