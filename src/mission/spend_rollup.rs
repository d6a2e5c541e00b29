//! The spend rollup: what the missions fired in each UTC hour spent, per agent,
//! envelope, queue label, host and model — so `spend` reads a few hundred rows
//! instead of joining every mission in its window to its compute record.
//!
//! Kept exact by triggers, in the transaction of every write that changes a
//! mission's figures or its grouping (its compute record, its row, its queue
//! row): each mission's current contribution is kept beside the rollup
//! (`spend_rollup_missions`), so a write takes the old contribution out and puts
//! the new one in — a delta, never a second count, whichever order a mission and
//! its compute record are written in. A group's peak memory is a maximum, which a
//! delta cannot lower: when the mission that held it moves out, it is recomputed
//! from the group's kept contributions.

/// A mission's contribution, read from its row, its compute record and its queue
/// row (the same figures the full join of `spend` summed before).
macro_rules! view {
    () => {
        "
CREATE VIEW spend_contributions AS
SELECT m.id AS mission_id, m.created_at AS created_at, m.created_at / 3600000 AS hour_bucket,
    m.agent_name AS agent, m.policy_name AS envelope, COALESCE(q.run_on, '') AS label,
    COALESCE(m.host_machine, '') AS host,
    CASE WHEN c.model IS NULL THEN 0 ELSE 1 END AS has_model, COALESCE(c.model, '') AS model,
    CASE WHEN c.reported_cost_micro_usd IS NULL THEN 0 ELSE 1 END AS reported,
    COALESCE(c.reported_cost_micro_usd, 0) AS reported_micro_usd,
    CASE WHEN c.reported_cost_micro_usd IS NULL
        AND c.spent_input_tokens + c.spent_output_tokens > 0 THEN 1 ELSE 0 END AS unreported_with_tokens,
    CASE WHEN c.reported_cost_micro_usd IS NULL THEN COALESCE(c.spent_input_tokens, 0) ELSE 0 END AS unreported_input,
    CASE WHEN c.reported_cost_micro_usd IS NULL THEN COALESCE(c.spent_output_tokens, 0) ELSE 0 END AS unreported_output,
    CASE WHEN c.reported_cost_micro_usd IS NULL THEN COALESCE(c.spent_cached_tokens, 0) ELSE 0 END AS unreported_cached,
    COALESCE(c.spent_tokens, 0) AS tokens, COALESCE(c.spent_tool_calls, 0) AS tool_calls,
    COALESCE(c.oracle_cost_micro_usd, 0) AS oracle_micro_usd,
    CASE WHEN c.oracle_calls > 0 AND c.oracle_cost_micro_usd IS NULL THEN 1 ELSE 0 END AS oracle_unpriced,
    COALESCE(c.cpu_ms, 0) AS cpu_ms, c.peak_rss_bytes AS peak_rss_bytes
FROM missions m
LEFT JOIN mission_compute c ON c.mission_id = m.id
LEFT JOIN mission_queue q ON q.mission_id = m.id;"
    };
}

/// Both tables, in one spelling (`{int}`: the integer type).
macro_rules! tables {
    ($int:literal) => {
        concat!(
            "
CREATE TABLE spend_rollup_missions (
    mission_id             TEXT PRIMARY KEY NOT NULL,
    hour_bucket            ",
            $int,
            " NOT NULL,
    agent                  TEXT NOT NULL,
    envelope               TEXT NOT NULL,
    label                  TEXT NOT NULL,
    host                   TEXT NOT NULL,
    has_model              ",
            $int,
            " NOT NULL,
    model                  TEXT NOT NULL,
    reported               ",
            $int,
            " NOT NULL,
    reported_micro_usd     ",
            $int,
            " NOT NULL,
    unreported_with_tokens ",
            $int,
            " NOT NULL,
    unreported_input       ",
            $int,
            " NOT NULL,
    unreported_output      ",
            $int,
            " NOT NULL,
    unreported_cached      ",
            $int,
            " NOT NULL,
    tokens                 ",
            $int,
            " NOT NULL,
    tool_calls             ",
            $int,
            " NOT NULL,
    oracle_micro_usd       ",
            $int,
            " NOT NULL,
    oracle_unpriced        ",
            $int,
            " NOT NULL,
    cpu_ms                 ",
            $int,
            " NOT NULL,
    peak_rss_bytes         ",
            $int,
            "
);
CREATE INDEX spend_rollup_missions_by_group ON spend_rollup_missions
    (hour_bucket, agent, envelope, label, host, has_model, model);
CREATE TABLE spend_rollup (
    hour_bucket            ",
            $int,
            " NOT NULL,
    agent                  TEXT NOT NULL,
    envelope               TEXT NOT NULL,
    label                  TEXT NOT NULL,
    host                   TEXT NOT NULL,
    has_model              ",
            $int,
            " NOT NULL,
    model                  TEXT NOT NULL,
    missions               ",
            $int,
            " NOT NULL,
    reported               ",
            $int,
            " NOT NULL,
    reported_micro_usd     ",
            $int,
            " NOT NULL,
    unreported_with_tokens ",
            $int,
            " NOT NULL,
    unreported_input       ",
            $int,
            " NOT NULL,
    unreported_output      ",
            $int,
            " NOT NULL,
    unreported_cached      ",
            $int,
            " NOT NULL,
    tokens                 ",
            $int,
            " NOT NULL,
    tool_calls             ",
            $int,
            " NOT NULL,
    oracle_micro_usd       ",
            $int,
            " NOT NULL,
    oracle_unpriced        ",
            $int,
            " NOT NULL,
    cpu_ms                 ",
            $int,
            " NOT NULL,
    peak_rss_bytes         ",
            $int,
            ",
    PRIMARY KEY (hour_bucket, agent, envelope, label, host, has_model, model)
);"
        )
    };
}

/// The figures' columns, in the tables' order after the group's.
macro_rules! figures {
    () => {
        "reported, reported_micro_usd, unreported_with_tokens, unreported_input, unreported_output,
    unreported_cached, tokens, tool_calls, oracle_micro_usd, oracle_unpriced, cpu_ms"
    };
}

/// The group's columns.
macro_rules! group {
    () => {
        "hour_bucket, agent, envelope, label, host, has_model, model"
    };
}

/// `r` and `s` name the same group.
macro_rules! same_group {
    ($r:literal, $s:literal) => {
        concat!(
            $r,
            ".hour_bucket = ",
            $s,
            ".hour_bucket AND ",
            $r,
            ".agent = ",
            $s,
            ".agent AND ",
            $r,
            ".envelope = ",
            $s,
            ".envelope AND ",
            $r,
            ".label = ",
            $s,
            ".label AND ",
            $r,
            ".host = ",
            $s,
            ".host AND ",
            $r,
            ".has_model = ",
            $s,
            ".has_model AND ",
            $r,
            ".model = ",
            $s,
            ".model"
        )
    };
}

/// Bring mission `id`'s contribution up to date (an SQL expression naming the
/// mission): take its kept contribution out of its group, fix the group's peak
/// if it held it, then keep and add its contribution as it is now (none when the
/// mission does not exist yet, or any more).
macro_rules! resync {
    ($id:literal) => {
        concat!(
            "
    INSERT INTO spend_rollup (", group!(), ", missions, ", figures!(), ", peak_rss_bytes)
        SELECT ", group!(), ", -1, -reported, -reported_micro_usd, -unreported_with_tokens,
            -unreported_input, -unreported_output, -unreported_cached, -tokens, -tool_calls,
            -oracle_micro_usd, -oracle_unpriced, -cpu_ms, NULL
        FROM spend_rollup_missions WHERE mission_id = ", $id, "
        ON CONFLICT (", group!(), ") DO UPDATE SET
            missions = spend_rollup.missions + excluded.missions,
            reported = spend_rollup.reported + excluded.reported,
            reported_micro_usd = spend_rollup.reported_micro_usd + excluded.reported_micro_usd,
            unreported_with_tokens = spend_rollup.unreported_with_tokens + excluded.unreported_with_tokens,
            unreported_input = spend_rollup.unreported_input + excluded.unreported_input,
            unreported_output = spend_rollup.unreported_output + excluded.unreported_output,
            unreported_cached = spend_rollup.unreported_cached + excluded.unreported_cached,
            tokens = spend_rollup.tokens + excluded.tokens,
            tool_calls = spend_rollup.tool_calls + excluded.tool_calls,
            oracle_micro_usd = spend_rollup.oracle_micro_usd + excluded.oracle_micro_usd,
            oracle_unpriced = spend_rollup.oracle_unpriced + excluded.oracle_unpriced,
            cpu_ms = spend_rollup.cpu_ms + excluded.cpu_ms;
    UPDATE spend_rollup SET peak_rss_bytes = (
            SELECT MAX(o.peak_rss_bytes) FROM spend_rollup_missions o
            WHERE ", same_group!("o", "spend_rollup"), " AND o.mission_id <> ", $id, ")
        WHERE EXISTS (SELECT 1 FROM spend_rollup_missions s WHERE s.mission_id = ", $id, "
            AND ", same_group!("s", "spend_rollup"), " AND s.peak_rss_bytes >= spend_rollup.peak_rss_bytes);
    DELETE FROM spend_rollup WHERE missions = 0 AND EXISTS (SELECT 1 FROM spend_rollup_missions s
        WHERE s.mission_id = ", $id, " AND ", same_group!("s", "spend_rollup"), ");
    DELETE FROM spend_rollup_missions WHERE mission_id = ", $id, ";
    INSERT INTO spend_rollup_missions (mission_id, ", group!(), ", ", figures!(), ", peak_rss_bytes)
        SELECT mission_id, ", group!(), ", ", figures!(), ", peak_rss_bytes
        FROM spend_contributions WHERE mission_id = ", $id, ";
    INSERT INTO spend_rollup (", group!(), ", missions, ", figures!(), ", peak_rss_bytes)
        SELECT ", group!(), ", 1, ", figures!(), ", peak_rss_bytes
        FROM spend_rollup_missions WHERE mission_id = ", $id, "
        ON CONFLICT (", group!(), ") DO UPDATE SET
            missions = spend_rollup.missions + excluded.missions,
            reported = spend_rollup.reported + excluded.reported,
            reported_micro_usd = spend_rollup.reported_micro_usd + excluded.reported_micro_usd,
            unreported_with_tokens = spend_rollup.unreported_with_tokens + excluded.unreported_with_tokens,
            unreported_input = spend_rollup.unreported_input + excluded.unreported_input,
            unreported_output = spend_rollup.unreported_output + excluded.unreported_output,
            unreported_cached = spend_rollup.unreported_cached + excluded.unreported_cached,
            tokens = spend_rollup.tokens + excluded.tokens,
            tool_calls = spend_rollup.tool_calls + excluded.tool_calls,
            oracle_micro_usd = spend_rollup.oracle_micro_usd + excluded.oracle_micro_usd,
            oracle_unpriced = spend_rollup.oracle_unpriced + excluded.oracle_unpriced,
            cpu_ms = spend_rollup.cpu_ms + excluded.cpu_ms,
            peak_rss_bytes = CASE WHEN spend_rollup.peak_rss_bytes IS NULL THEN excluded.peak_rss_bytes
                WHEN excluded.peak_rss_bytes IS NULL THEN spend_rollup.peak_rss_bytes
                WHEN excluded.peak_rss_bytes > spend_rollup.peak_rss_bytes THEN excluded.peak_rss_bytes
                ELSE spend_rollup.peak_rss_bytes END;"
        )
    };
}

/// The compute record's columns a rollup figure or group reads.
macro_rules! compute_changed {
    () => {
        "OLD.model IS NOT NEW.model OR OLD.reported_cost_micro_usd IS NOT NEW.reported_cost_micro_usd
    OR OLD.spent_input_tokens IS NOT NEW.spent_input_tokens OR OLD.spent_output_tokens IS NOT NEW.spent_output_tokens
    OR OLD.spent_cached_tokens IS NOT NEW.spent_cached_tokens OR OLD.spent_tokens IS NOT NEW.spent_tokens
    OR OLD.spent_tool_calls IS NOT NEW.spent_tool_calls OR OLD.oracle_cost_micro_usd IS NOT NEW.oracle_cost_micro_usd
    OR OLD.oracle_calls IS NOT NEW.oracle_calls OR OLD.cpu_ms IS NOT NEW.cpu_ms
    OR OLD.peak_rss_bytes IS NOT NEW.peak_rss_bytes OR OLD.mission_id IS NOT NEW.mission_id"
    };
}

/// The backfill: every existing mission's contribution, and their sums.
macro_rules! backfill {
    () => {
        concat!(
            "
INSERT INTO spend_rollup_missions (mission_id, ", group!(), ", ", figures!(), ", peak_rss_bytes)
    SELECT mission_id, ", group!(), ", ", figures!(), ", peak_rss_bytes FROM spend_contributions;
INSERT INTO spend_rollup (", group!(), ", missions, ", figures!(), ", peak_rss_bytes)
    SELECT ", group!(), ", COUNT(*), SUM(reported), SUM(reported_micro_usd), SUM(unreported_with_tokens),
        SUM(unreported_input), SUM(unreported_output), SUM(unreported_cached), SUM(tokens), SUM(tool_calls),
        SUM(oracle_micro_usd), SUM(oracle_unpriced), SUM(cpu_ms), MAX(peak_rss_bytes)
    FROM spend_rollup_missions GROUP BY ", group!(), ";"
        )
    };
}

/// v25: the spend rollup, its triggers, and its backfill from existing records.
pub(crate) const SCHEMA_V25: &str = concat!(
    view!(),
    tables!("INTEGER"),
    backfill!(),
    "
CREATE TRIGGER spend_rollup_mission_insert AFTER INSERT ON missions BEGIN",
    resync!("NEW.id"),
    "
END;
CREATE TRIGGER spend_rollup_mission_update AFTER UPDATE OF agent_name, policy_name, host_machine, created_at ON missions
    WHEN OLD.agent_name IS NOT NEW.agent_name OR OLD.policy_name IS NOT NEW.policy_name
        OR OLD.host_machine IS NOT NEW.host_machine OR OLD.created_at IS NOT NEW.created_at BEGIN",
    resync!("NEW.id"),
    "
END;
CREATE TRIGGER spend_rollup_mission_delete AFTER DELETE ON missions BEGIN",
    resync!("OLD.id"),
    "
END;
CREATE TRIGGER spend_rollup_compute_insert AFTER INSERT ON mission_compute BEGIN",
    resync!("NEW.mission_id"),
    "
END;
CREATE TRIGGER spend_rollup_compute_update AFTER UPDATE ON mission_compute WHEN ",
    compute_changed!(),
    " BEGIN",
    resync!("NEW.mission_id"),
    "
END;
CREATE TRIGGER spend_rollup_compute_delete AFTER DELETE ON mission_compute BEGIN",
    resync!("OLD.mission_id"),
    "
END;
CREATE TRIGGER spend_rollup_queue_insert AFTER INSERT ON mission_queue BEGIN",
    resync!("NEW.mission_id"),
    "
END;
CREATE TRIGGER spend_rollup_queue_update AFTER UPDATE OF run_on, mission_id ON mission_queue
    WHEN OLD.run_on IS NOT NEW.run_on OR OLD.mission_id IS NOT NEW.mission_id BEGIN",
    resync!("OLD.mission_id"),
    resync!("NEW.mission_id"),
    "
END;
CREATE TRIGGER spend_rollup_queue_delete AFTER DELETE ON mission_queue BEGIN",
    resync!("OLD.mission_id"),
    "
END;"
);

/// The PostgreSQL spelling of [`SCHEMA_V25`]: one function brings a mission up to
/// date, and each table's trigger calls it.
pub(crate) const PG_SCHEMA_V25: &str = concat!(
    view!(),
    tables!("BIGINT"),
    backfill!(),
    "
CREATE FUNCTION spend_rollup_resync(mid TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN",
    resync!("mid"),
    "
END $$;
CREATE FUNCTION spend_rollup_on_mission() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM spend_rollup_resync(OLD.id);
    ELSE
        PERFORM spend_rollup_resync(NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE FUNCTION spend_rollup_on_mission_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.mission_id IS DISTINCT FROM NEW.mission_id) THEN
        PERFORM spend_rollup_resync(OLD.mission_id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM spend_rollup_resync(NEW.mission_id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER spend_rollup_mission AFTER INSERT OR DELETE ON missions
    FOR EACH ROW EXECUTE FUNCTION spend_rollup_on_mission();
CREATE TRIGGER spend_rollup_mission_update AFTER UPDATE OF agent_name, policy_name, host_machine, created_at ON missions
    FOR EACH ROW WHEN (OLD.agent_name IS DISTINCT FROM NEW.agent_name OR OLD.policy_name IS DISTINCT FROM NEW.policy_name
        OR OLD.host_machine IS DISTINCT FROM NEW.host_machine OR OLD.created_at IS DISTINCT FROM NEW.created_at)
    EXECUTE FUNCTION spend_rollup_on_mission();
CREATE TRIGGER spend_rollup_compute AFTER INSERT OR DELETE ON mission_compute
    FOR EACH ROW EXECUTE FUNCTION spend_rollup_on_mission_row();
CREATE TRIGGER spend_rollup_compute_update AFTER UPDATE ON mission_compute
    FOR EACH ROW WHEN (OLD.model IS DISTINCT FROM NEW.model
        OR OLD.reported_cost_micro_usd IS DISTINCT FROM NEW.reported_cost_micro_usd
        OR OLD.spent_input_tokens IS DISTINCT FROM NEW.spent_input_tokens
        OR OLD.spent_output_tokens IS DISTINCT FROM NEW.spent_output_tokens
        OR OLD.spent_cached_tokens IS DISTINCT FROM NEW.spent_cached_tokens
        OR OLD.spent_tokens IS DISTINCT FROM NEW.spent_tokens
        OR OLD.spent_tool_calls IS DISTINCT FROM NEW.spent_tool_calls
        OR OLD.oracle_cost_micro_usd IS DISTINCT FROM NEW.oracle_cost_micro_usd
        OR OLD.oracle_calls IS DISTINCT FROM NEW.oracle_calls OR OLD.cpu_ms IS DISTINCT FROM NEW.cpu_ms
        OR OLD.peak_rss_bytes IS DISTINCT FROM NEW.peak_rss_bytes OR OLD.mission_id IS DISTINCT FROM NEW.mission_id)
    EXECUTE FUNCTION spend_rollup_on_mission_row();
CREATE TRIGGER spend_rollup_queue AFTER INSERT OR DELETE ON mission_queue
    FOR EACH ROW EXECUTE FUNCTION spend_rollup_on_mission_row();
CREATE TRIGGER spend_rollup_queue_update AFTER UPDATE OF run_on, mission_id ON mission_queue
    FOR EACH ROW WHEN (OLD.run_on IS DISTINCT FROM NEW.run_on OR OLD.mission_id IS DISTINCT FROM NEW.mission_id)
    EXECUTE FUNCTION spend_rollup_on_mission_row();"
);

/// The rollup's PostgreSQL triggers, with their tables.
const PG_TRIGGERS: [(&str, &str); 6] = [
    ("missions", "spend_rollup_mission"),
    ("missions", "spend_rollup_mission_update"),
    ("mission_compute", "spend_rollup_compute"),
    ("mission_compute", "spend_rollup_compute_update"),
    ("mission_queue", "spend_rollup_queue"),
    ("mission_queue", "spend_rollup_queue_update"),
];

/// Run a bulk load of missions and their records (the bench's seeding) in `tx`,
/// then leave the rollup exact. On PostgreSQL a per-row trigger is a plpgsql call
/// of seven statements, so a load of 100k missions through them takes many
/// minutes: there the triggers are off for the load (`ALTER TABLE` is part of the
/// transaction, and the table lock it takes keeps every other writer out until the
/// commit) and the rollup is rebuilt once from the records after it, as the
/// migration backfilled it. SQLite's triggers run in-process and cost the load
/// seconds, so they stay on.
pub(crate) fn bulk_load<T>(
    tx: &crate::store::Conn<'_>,
    load: impl FnOnce(&crate::store::Conn<'_>) -> crate::store::sql::Result<T>,
) -> crate::store::sql::Result<T> {
    if !tx.is_postgres() {
        return load(tx);
    }
    let toggle = |how: &str| {
        PG_TRIGGERS
            .iter()
            .map(|(table, trigger)| format!("ALTER TABLE {table} {how} TRIGGER {trigger};"))
            .collect::<String>()
    };
    tx.execute_batch(&toggle("DISABLE"))?;
    let loaded = load(tx)?;
    tx.execute_batch(&toggle("ENABLE"))?;
    tx.execute_batch(concat!(
        "DELETE FROM spend_rollup; DELETE FROM spend_rollup_missions;",
        backfill!()
    ))?;
    Ok(loaded)
}

/// The rollup statement `spend` runs, in the house dialect: whole hours from the
/// rollup, the partial hour at the window's edge from the missions themselves
/// (their creation-time index bounds it), summed per group and model. `?1`: the
/// earliest fire time counted; `?2`: the first whole hour (hours since the epoch);
/// `?3`: that hour's start, in ms.
pub(crate) fn spend_sql(rollup_key: &str, edge_key: &str) -> String {
    format!(
        "SELECT k, model, CAST(SUM(n) AS BIGINT), CAST(SUM(reported) AS BIGINT),
             CAST(SUM(reported_micro_usd) AS BIGINT), CAST(SUM(unreported_with_tokens) AS BIGINT),
             CAST(SUM(unreported_input) AS BIGINT), CAST(SUM(unreported_output) AS BIGINT),
             CAST(SUM(unreported_cached) AS BIGINT), CAST(SUM(tokens) AS BIGINT),
             CAST(SUM(tool_calls) AS BIGINT), CAST(SUM(oracle_micro_usd) AS BIGINT),
             CAST(SUM(oracle_unpriced) AS BIGINT), CAST(SUM(cpu_ms) AS BIGINT), MAX(peak_rss_bytes)
         FROM (
             SELECT {rollup_key} AS k, CASE WHEN r.has_model = 1 THEN r.model END AS model, r.missions AS n,
                 {rollup_figures}, r.peak_rss_bytes
             FROM spend_rollup r WHERE r.hour_bucket >= ?2
             UNION ALL
             SELECT {edge_key} AS k, CASE WHEN v.has_model = 1 THEN v.model END AS model, 1 AS n,
                 {edge_figures}, v.peak_rss_bytes
             FROM spend_contributions v WHERE v.created_at >= ?1 AND v.created_at < ?3
         ) s
         GROUP BY k, model
         ORDER BY 1, 2",
        rollup_figures = FIGURE_LIST.map(|f| format!("r.{f}")).join(", "),
        edge_figures = FIGURE_LIST.map(|f| format!("v.{f}")).join(", "),
    )
}

const FIGURE_LIST: [&str; 11] = [
    "reported",
    "reported_micro_usd",
    "unreported_with_tokens",
    "unreported_input",
    "unreported_output",
    "unreported_cached",
    "tokens",
    "tool_calls",
    "oracle_micro_usd",
    "oracle_unpriced",
    "cpu_ms",
];
