//! The `missions` table and its status counts, as each schema version left them,
//! in both spellings (`crate::schema` lists them in version order).

pub(crate) const SCHEMA_V2: &str = "
CREATE TABLE missions (
    id                TEXT PRIMARY KEY NOT NULL,
    intent            TEXT NOT NULL,
    agent_name        TEXT NOT NULL,
    policy_name       TEXT NOT NULL,
    cwd               TEXT NOT NULL DEFAULT '',
    session_id        TEXT,
    instance_id       TEXT,
    parent_session_id TEXT,
    status            TEXT NOT NULL DEFAULT 'open',
    status_reason     TEXT,
    plan_revision     INTEGER NOT NULL DEFAULT 0,
    last_heartbeat    INTEGER,
    last_error        TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);
CREATE INDEX missions_by_created ON missions (created_at DESC, id DESC);
CREATE INDEX missions_by_status ON missions (status, created_at);";

/// v9: the process hosting each mission's unit (so a surface can tell an open
/// mission whose host died), and an index on last activity (the board's heartbeat
/// sort and the reclaim sweep read missions in that order).
pub(crate) const SCHEMA_V9: &str = "
ALTER TABLE missions ADD COLUMN host_pid INTEGER;
ALTER TABLE missions ADD COLUMN host_start TEXT;
CREATE INDEX missions_by_activity ON missions (MAX(created_at, COALESCE(last_heartbeat, 0)) DESC, id DESC);";

/// v11: how many missions hold each status, kept by triggers in the same transaction
/// as the write that changes it (so every writer, in every process, keeps it exact),
/// and backfilled from the rows already there. The board reads its open count here
/// instead of counting a million rows.
pub(crate) const SCHEMA_V11: &str = "
CREATE TABLE mission_status_counts (
    status TEXT PRIMARY KEY NOT NULL,
    n      INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO mission_status_counts (status, n)
    SELECT status, COUNT(*) FROM missions GROUP BY status;
CREATE TRIGGER missions_count_insert AFTER INSERT ON missions BEGIN
    INSERT INTO mission_status_counts (status, n) VALUES (NEW.status, 1)
        ON CONFLICT (status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER missions_count_status AFTER UPDATE OF status ON missions
    WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE mission_status_counts SET n = n - 1 WHERE status = OLD.status;
    INSERT INTO mission_status_counts (status, n) VALUES (NEW.status, 1)
        ON CONFLICT (status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER missions_count_delete AFTER DELETE ON missions BEGIN
    UPDATE mission_status_counts SET n = n - 1 WHERE status = OLD.status;
END;";

/// v12: the host's id and machine beside its pid, so a host on another machine
/// sharing the store is told apart (and judged by its heartbeat, `hosts`).
pub(crate) const SCHEMA_V12: &str = "
ALTER TABLE missions ADD COLUMN host_id TEXT;
ALTER TABLE missions ADD COLUMN host_machine TEXT;";

/// The PostgreSQL spelling of [`SCHEMA_V12`].
pub(crate) const PG_SCHEMA_V12: &str = SCHEMA_V12;

/// The PostgreSQL spelling of this module's tables as of schema v11 (see
/// `crate::schema`). `rowid` is the insertion order SQLite keeps implicitly; the
/// status counts are kept by one trigger function.
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE missions (
    id                TEXT PRIMARY KEY NOT NULL,
    rowid             BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    intent            TEXT NOT NULL,
    agent_name        TEXT NOT NULL,
    policy_name       TEXT NOT NULL,
    cwd               TEXT NOT NULL DEFAULT '',
    session_id        TEXT,
    instance_id       TEXT,
    parent_session_id TEXT,
    status            TEXT NOT NULL DEFAULT 'open',
    status_reason     TEXT,
    plan_revision     BIGINT NOT NULL DEFAULT 0,
    last_heartbeat    BIGINT,
    last_error        TEXT,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    host_pid          BIGINT,
    host_start        TEXT
);
CREATE INDEX missions_by_created ON missions (created_at DESC, id DESC);
CREATE INDEX missions_by_status ON missions (status, created_at);
CREATE INDEX missions_by_activity ON missions (GREATEST(created_at, COALESCE(last_heartbeat, 0)) DESC, id DESC);
CREATE TABLE mission_status_counts (
    status TEXT PRIMARY KEY NOT NULL,
    n      BIGINT NOT NULL
);
CREATE FUNCTION missions_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE mission_status_counts SET n = n - 1 WHERE status = OLD.status;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO mission_status_counts (status, n) VALUES (NEW.status, 1)
            ON CONFLICT (status) DO UPDATE SET n = mission_status_counts.n + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER missions_count AFTER INSERT OR DELETE ON missions
    FOR EACH ROW EXECUTE FUNCTION missions_count();
CREATE TRIGGER missions_count_status AFTER UPDATE OF status ON missions
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION missions_count();";
