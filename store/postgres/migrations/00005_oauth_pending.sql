-- +goose Up
-- The OAuth authorizations waiting for their callback (at most ten
-- minutes), so that the callback may reach any replica. id is the SHA-256
-- of the state parameter (the callback's credential); sealed holds the
-- PKCE verifier and the client, AES-GCM under the key file's key with the
-- server's name as additional data. A row is taken (deleted) by the
-- callback that uses it: a replayed callback finds none.
CREATE TABLE oauth_pending (
    id         TEXT PRIMARY KEY NOT NULL,
    server     TEXT NOT NULL,
    sealed     BYTEA NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX oauth_pending_server ON oauth_pending (server);

-- Every write of a grant is announced on switchboard_changes as kind
-- "oauth" (version 1, 0 for a deletion), from the writing transaction, so
-- that a replica whose server waits for an authorization reconnects it as
-- soon as another replica stores one.
-- +goose StatementBegin
CREATE FUNCTION switchboard_notify_oauth() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('switchboard_changes',
            json_build_object('kind', 'oauth', 'name', OLD.server, 'version', 0)::text);
        RETURN OLD;
    END IF;
    PERFORM pg_notify('switchboard_changes',
        json_build_object('kind', 'oauth', 'name', NEW.server, 'version', 1)::text);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER oauth_grants_notify_change
    AFTER INSERT OR UPDATE OR DELETE ON oauth_grants
    FOR EACH ROW EXECUTE FUNCTION switchboard_notify_oauth();

-- +goose Down
DROP TRIGGER oauth_grants_notify_change ON oauth_grants;
DROP FUNCTION switchboard_notify_oauth();
DROP TABLE oauth_pending;
