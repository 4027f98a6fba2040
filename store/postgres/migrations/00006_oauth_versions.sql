-- +goose Up
-- A grant's version, one more on every write, so that a write based on
-- what a replica read fails if another replica wrote meanwhile (a
-- compare-and-swap) rather than overwriting it: a refresh that lost a race
-- must never store its empty tokens over the winner's.
ALTER TABLE oauth_grants ADD COLUMN version BIGINT NOT NULL DEFAULT 1;

-- Who refreshes a grant now, until when: of the replicas whose access
-- token expires at once, the one whose claim is stored asks the
-- authorization server and the others wait for its tokens. A claim expires
-- (expires_at, by the database's clock) when the refresh's own bound has
-- passed, so a replica that died holding one stops nobody for long. A
-- table of its own, so that a claim announces nothing on
-- switchboard_changes.
CREATE TABLE oauth_refreshes (
    server     TEXT PRIMARY KEY NOT NULL,
    holder     TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE oauth_refreshes;
ALTER TABLE oauth_grants DROP COLUMN version;
