-- +goose Up
-- One sealed OAuth grant per server (switchboard.OAuthGrant, AES-GCM under
-- the key file's key): the database never holds a token in the clear. It is
-- not tied to servers by a foreign key: a grant may be stored before its
-- server's row is (a restore), and one left behind opens for no other server.
CREATE TABLE oauth_grants (
    server     TEXT PRIMARY KEY NOT NULL,
    sealed     BLOB NOT NULL,
    updated_at TEXT NOT NULL
);

-- +goose Down
DROP TABLE oauth_grants;
