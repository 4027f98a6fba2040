-- +goose Up
-- A grant's version, one more on every write, so that a write based on
-- what a process read fails if another process wrote meanwhile (a
-- compare-and-swap) rather than overwriting it: a refresh that lost a race
-- must never store its empty tokens over the winner's.
ALTER TABLE oauth_grants ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

-- Who refreshes a grant now, until when: of the processes whose access
-- token expires at once, the one whose claim is stored asks the
-- authorization server and the others wait for its tokens. A claim expires
-- (expires_at) when the refresh's own bound has passed, so a process that
-- died holding one stops nobody for long.
CREATE TABLE oauth_refreshes (
    server     TEXT PRIMARY KEY NOT NULL,
    holder     TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

-- +goose Down
DROP TABLE oauth_refreshes;
ALTER TABLE oauth_grants DROP COLUMN version;
