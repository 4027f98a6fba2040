-- +goose Up
-- One sealed OAuth grant per server (switchboard.OAuthGrant, AES-GCM under
-- the key file's key): the database never holds a token in the clear.
-- Replicas share it, so a refresh by one is seen by all.
CREATE TABLE oauth_grants (
    server     TEXT PRIMARY KEY NOT NULL,
    sealed     BYTEA NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE oauth_grants;
