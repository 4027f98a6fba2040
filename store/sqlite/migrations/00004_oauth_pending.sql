-- +goose Up
-- The OAuth authorizations waiting for their callback (at most ten
-- minutes), so that the callback may reach any process on the database.
-- id is the SHA-256 of the state parameter (the callback's credential);
-- sealed holds the PKCE verifier and the client, AES-GCM under the key
-- file's key with the server's name as additional data. A row is taken
-- (deleted) by the callback that uses it: a replayed callback finds none.
CREATE TABLE oauth_pending (
    id         TEXT PRIMARY KEY NOT NULL,
    server     TEXT NOT NULL,
    sealed     BLOB NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX oauth_pending_server ON oauth_pending (server);

-- +goose Down
DROP TABLE oauth_pending;
