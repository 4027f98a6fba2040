-- +goose Up
-- Every committed write to servers is announced on the channel
-- switchboard_changes, from the writing transaction itself (a NOTIFY is
-- delivered at commit, and not at all on rollback), so that every replica
-- hears of a change made through any one of them, or by hand in psql. The
-- payload is {"kind": ..., "name": ..., "version": ...}, version 0 for a
-- deletion; the kind is the trigger's argument, so that tables to come
-- (toolsets, tokens) reuse the function with a kind of their own.
-- +goose StatementBegin
CREATE FUNCTION switchboard_notify_change() RETURNS trigger AS $$
DECLARE
    kind text := TG_ARGV[0];
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('switchboard_changes',
            json_build_object('kind', kind, 'name', OLD.name, 'version', 0)::text);
        RETURN OLD;
    END IF;
    PERFORM pg_notify('switchboard_changes',
        json_build_object('kind', kind, 'name', NEW.name, 'version', NEW.version)::text);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER servers_notify_change
    AFTER INSERT OR UPDATE OR DELETE ON servers
    FOR EACH ROW EXECUTE FUNCTION switchboard_notify_change('server');

-- +goose Down
DROP TRIGGER servers_notify_change ON servers;
DROP FUNCTION switchboard_notify_change();
