-- +goose Up
-- The audit log: one row per tools/call, resources/read, prompts/get and
-- API request that changes something (package audit writes them in
-- batches), from every replica. at is the time the call began by the
-- writing replica's clock; duration in microseconds. arguments is NULL
-- unless the server opted in ("audit": {"arguments": true}); args_sha256
-- is kept in any case. No trigger: an entry announces nothing on
-- switchboard_changes. Retention deletes the oldest rows by id.
-- No index beside the id's: rows come in time order, so retention and a
-- list of the newest walk the id from one end and stop; an index would
-- cost every write (the writer's CPU is what the calls share).
CREATE TABLE audit_log (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at            TIMESTAMPTZ NOT NULL,
    principal     TEXT   NOT NULL,
    surface       TEXT   NOT NULL,
    toolset       TEXT   NOT NULL DEFAULT '',
    kind          TEXT   NOT NULL,
    server        TEXT   NOT NULL DEFAULT '',
    name          TEXT   NOT NULL,
    outcome       TEXT   NOT NULL,
    duration_us   BIGINT NOT NULL,
    request_bytes BIGINT NOT NULL,
    result_bytes  BIGINT NOT NULL,
    args_sha256   TEXT   NOT NULL DEFAULT '',
    arguments     TEXT
);

-- +goose Down
DROP TABLE audit_log;
