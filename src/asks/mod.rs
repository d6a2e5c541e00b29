//! Durable asks: a unit's question for the operator, or a gated tool call waiting for
//! a verdict. The row is written before anything waits on it or hears of it, and it
//! becomes terminal exactly once, by a guarded `UPDATE … WHERE state = 'pending'`.
//! Waiters poll the row (the answer may come from any process sharing the database)
//! and are woken at once when the answer comes from their own process.

pub mod allowances;
pub mod bounds;
pub mod checkpoint;
pub mod form;
pub mod trace;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::store::sql::{OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::clock;
use crate::envelope::bounds::{BUDGET_ANSWER_GRAMMAR, BudgetAnswer};
use crate::store::{Store, StoreError};
use crate::sync::LockUnpoisoned;

pub(crate) const SCHEMA_V3: &str = "
CREATE TABLE asks (
    id           TEXT PRIMARY KEY NOT NULL,
    tools_name   TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    args_summary TEXT NOT NULL DEFAULT '',
    diff         TEXT,
    policy_name  TEXT NOT NULL DEFAULT '',
    matched_rule INTEGER,
    on_timeout   TEXT NOT NULL DEFAULT 'deny',
    state        TEXT NOT NULL DEFAULT 'pending',
    resolution   TEXT,
    instance_id  TEXT NOT NULL DEFAULT '',
    session_id   TEXT NOT NULL DEFAULT '',
    agent_name   TEXT NOT NULL DEFAULT '',
    mission_id   TEXT,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    resolved_at  INTEGER
);
CREATE INDEX asks_by_state_created ON asks (state, created_at);
CREATE INDEX asks_by_state_expires ON asks (state, expires_at);
CREATE INDEX asks_by_mission ON asks (mission_id, state);";

/// v11: how many asks hold each state, kept by triggers in the same transaction as
/// the write that changes it (every writer, in every process, keeps it exact), and
/// backfilled from the rows already there: the board's pending count is one read.
pub(crate) const SCHEMA_V11: &str = "
CREATE TABLE ask_state_counts (
    state TEXT PRIMARY KEY NOT NULL,
    n     INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO ask_state_counts (state, n)
    SELECT state, COUNT(*) FROM asks GROUP BY state;
CREATE TRIGGER asks_count_insert AFTER INSERT ON asks BEGIN
    INSERT INTO ask_state_counts (state, n) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER asks_count_state AFTER UPDATE OF state ON asks
    WHEN OLD.state IS NOT NEW.state BEGIN
    UPDATE ask_state_counts SET n = n - 1 WHERE state = OLD.state;
    INSERT INTO ask_state_counts (state, n) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER asks_count_delete AFTER DELETE ON asks BEGIN
    UPDATE ask_state_counts SET n = n - 1 WHERE state = OLD.state;
END;";

/// The PostgreSQL spelling of this module's tables as of schema v11 (see
/// `crate::schema`); the state counts are kept by one trigger function.
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE asks (
    id           TEXT PRIMARY KEY NOT NULL,
    tools_name   TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    args_summary TEXT NOT NULL DEFAULT '',
    diff         TEXT,
    policy_name  TEXT NOT NULL DEFAULT '',
    matched_rule BIGINT,
    on_timeout   TEXT NOT NULL DEFAULT 'deny',
    state        TEXT NOT NULL DEFAULT 'pending',
    resolution   TEXT,
    instance_id  TEXT NOT NULL DEFAULT '',
    session_id   TEXT NOT NULL DEFAULT '',
    agent_name   TEXT NOT NULL DEFAULT '',
    mission_id   TEXT,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    resolved_at  BIGINT
);
CREATE INDEX asks_by_state_created ON asks (state, created_at);
CREATE INDEX asks_by_state_expires ON asks (state, expires_at);
CREATE INDEX asks_by_mission ON asks (mission_id, state);
CREATE TABLE ask_state_counts (
    state TEXT PRIMARY KEY NOT NULL,
    n     BIGINT NOT NULL
);
CREATE FUNCTION asks_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE ask_state_counts SET n = n - 1 WHERE state = OLD.state;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO ask_state_counts (state, n) VALUES (NEW.state, 1)
            ON CONFLICT (state) DO UPDATE SET n = ask_state_counts.n + 1;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER asks_count AFTER INSERT OR DELETE ON asks
    FOR EACH ROW EXECUTE FUNCTION asks_count();
CREATE TRIGGER asks_count_state AFTER UPDATE OF state ON asks
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION asks_count();";

/// v14: who answered each ask — the surface (board, cli, web, editor, oracle) and,
/// for the web, the device — recorded by the guarded write that resolves it; and the
/// answers newest first (`approvals history`). The same spelling on both backends.
pub(crate) const SCHEMA_V14: &str = "
ALTER TABLE asks ADD COLUMN answered_surface TEXT;
ALTER TABLE asks ADD COLUMN answered_device TEXT;
CREATE INDEX asks_by_resolved ON asks (resolved_at);";
pub(crate) const PG_SCHEMA_V14: &str = SCHEMA_V14;

/// v19: the form an elicitation ask carries (its fields, as JSON), read by every
/// surface that fills it. The same spelling on both backends.
pub(crate) const SCHEMA_V19: &str = "ALTER TABLE asks ADD COLUMN form TEXT;";
pub(crate) const PG_SCHEMA_V19: &str = SCHEMA_V19;

/// Where an answer came from: recorded with the verdict in the same guarded write,
/// shown by `mission show` and `approvals history`, and named to whoever loses a
/// race for the same ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Surface {
    Board,
    Cli,
    /// The web page, from this paired device (its name).
    Web(String),
    /// An editor session (`missionboard acp`).
    Editor,
    Oracle,
}

impl Surface {
    /// The surface's name as stored and shown.
    pub fn as_str(&self) -> &'static str {
        match self {
            Surface::Board => "board",
            Surface::Cli => "cli",
            Surface::Web(_) => "web",
            Surface::Editor => "editor",
            Surface::Oracle => "oracle",
        }
    }

    /// The device, for a web answer.
    pub fn device(&self) -> Option<&str> {
        match self {
            Surface::Web(d) => Some(d),
            _ => None,
        }
    }
}

/// "web (phone)", "cli": who answered, in words.
pub fn answered_by_label(surface: &str, device: Option<&str>) -> String {
    match device {
        Some(d) => format!("{surface} ({d})"),
        None => surface.to_string(),
    }
}

/// The toolset/tool pair that marks a question (as opposed to a permission gate).
pub const QUESTION_TOOLS: &str = "mission";
pub const QUESTION_TOOL: &str = "mission_ask_attention";
/// The tool name of a compute-bound question: the runtime asking the operator to
/// extend a crossed bound or stop the mission (`onExhausted: pause_ask`).
pub const BUDGET_TOOL: &str = "compute_bound";
/// The tool name of the runtime's ask when a mission's check failed its last try
/// under `onExhausted: pause_ask`: approve grants more tries, deny lets it rest
/// stuck (answered with a verdict, like a gated call).
pub const CHECK_TOOL: &str = "check_tries";
/// The toolset of a unit's elicitation (ACP `elicitation/create`), and its two modes.
pub const ELICITATION_TOOLS: &str = "elicitation";
pub const FORM_TOOL: &str = "form";
pub const URL_TOOL: &str = "url";

/// What an ask is, read from the toolset/tool pair its row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskKind {
    /// A unit's question to the operator: answered in words.
    Question,
    /// The runtime's question on a crossed compute bound: answered in words.
    Compute,
    /// A gated tool call: answered with a verdict.
    Permission,
    /// A form the unit asks the operator to fill (elicitation, form mode): answered
    /// with its fields' values, or declined.
    Form,
    /// A page the unit asks the operator to visit (elicitation, URL mode; never
    /// fetched by missionboard): answered done (approve) or declined (deny).
    Url,
}

impl AskKind {
    /// The kind of an ask whose row records `tools_name` / `tool_name`.
    pub fn of(tools_name: &str, tool_name: &str) -> AskKind {
        match (tools_name, tool_name) {
            (QUESTION_TOOLS, QUESTION_TOOL) => AskKind::Question,
            (QUESTION_TOOLS, BUDGET_TOOL) => AskKind::Compute,
            (ELICITATION_TOOLS, FORM_TOOL) => AskKind::Form,
            (ELICITATION_TOOLS, URL_TOOL) => AskKind::Url,
            _ => AskKind::Permission,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AskKind::Question => "question",
            AskKind::Compute => "compute",
            AskKind::Permission => "permission",
            AskKind::Form => "form",
            AskKind::Url => "url",
        }
    }

    /// Answered in words (a question of either kind, or a form's `key=value`
    /// pairs), not with a verdict.
    pub fn takes_words(self) -> bool {
        !matches!(self, AskKind::Permission | AskKind::Url)
    }
}

impl std::fmt::Display for AskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How often a waiter re-reads its row when nothing wakes it: an answer from another
/// process is pushed (`store::changes`) and read at once, so this is the fallback
/// where commits are not pushed.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Where an ask stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AskState {
    Pending,
    Approved,
    Denied,
    Expired,
}

impl AskState {
    pub fn as_str(self) -> &'static str {
        match self {
            AskState::Pending => "pending",
            AskState::Approved => "approved",
            AskState::Denied => "denied",
            AskState::Expired => "expired",
        }
    }

    fn parse(s: &str) -> AskState {
        match s {
            "approved" => AskState::Approved,
            "denied" => AskState::Denied,
            "expired" => AskState::Expired,
            _ => AskState::Pending,
        }
    }
}

/// The pending questions of mission `?4`, or of every open mission when `?4` is
/// NULL; `?1`–`?3` name the question tools. (An ask filed by a mission that is no
/// longer open is `approvals list`'s to show, not `mission asks`'.)
const PENDING_QUESTIONS: &str = "WHERE state = 'pending' AND tools_name = ?1 AND tool_name IN (?2, ?3)
   AND (mission_id = ?4 OR (?4 IS NULL AND mission_id IN (SELECT id FROM missions WHERE status = 'open')))";

/// One ask row.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ask {
    pub id: String,
    pub tools_name: String,
    pub tool_name: String,
    pub args_summary: String,
    /// A permission's diff, or a question's long-form detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The envelope that raised it (`policyName` in `--json`, `policy_name` in the table).
    #[serde(rename = "policyName")]
    pub envelope_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_rule: Option<i64>,
    pub on_timeout: String,
    pub state: AskState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Value>,
    pub instance_id: String,
    pub session_id: String,
    pub agent_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mission_id: Option<String>,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub created_at: i64,
    /// 0 means no deadline.
    pub expires_at: i64,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "clock::ser_opt_rfc3339"
    )]
    pub resolved_at: Option<i64>,
    /// The surface that answered (`None`: pending, expired, closed by a stop, or
    /// answered before answers were attributed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_surface: Option<String>,
    /// The paired device a web answer came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_device: Option<String>,
    /// How long the ask waited for its resolution, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<i64>,
    /// The form a form ask carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<form::Form>,
    /// A gated call whose agent offered an "allow always": what an operator's
    /// allow-always would cover in this mission, as the envelope classifies the
    /// call ([`allowances`]). `None`: only once-verdicts are offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub always_scope: Option<String>,
}

impl Ask {
    /// "web (phone)", "cli": who answered, when the row records it.
    pub fn answered_via(&self) -> Option<String> {
        let surface = self.answered_surface.as_deref()?;
        Some(answered_by_label(surface, self.answered_device.as_deref()))
    }

    pub fn kind(&self) -> AskKind {
        AskKind::of(&self.tools_name, &self.tool_name)
    }

    /// A question (it takes words), not a permission gate (it takes a verdict).
    pub fn is_question(&self) -> bool {
        self.kind() == AskKind::Question
    }

    /// A form to fill (an elicitation in form mode).
    pub fn is_form(&self) -> bool {
        self.kind() == AskKind::Form
    }

    /// A compute-bound question (the runtime's, not the unit's).
    pub fn is_budget(&self) -> bool {
        self.kind() == AskKind::Compute
    }

    /// Answered in words (a question of either kind), not with a verdict.
    pub fn takes_words(&self) -> bool {
        self.kind().takes_words()
    }

    /// The answer text, if a question was answered.
    pub fn answer(&self) -> Option<&str> {
        self.resolution.as_ref()?.get("answer")?.as_str()
    }

    /// Which agent answered (`None` for a human answer, a pending row or a permission).
    pub fn answered_by(&self) -> Option<&str> {
        self.resolution.as_ref()?.get("answeredBy")?.as_str()
    }

    /// The verdict of a resolved permission (expired and abandoned rows read as false).
    pub fn approved(&self) -> Option<bool> {
        if self.state == AskState::Pending {
            return None;
        }
        Some(
            self.resolution
                .as_ref()
                .and_then(|r| r.get("approved"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
        )
    }

    /// Approved with an allowance for the rest of its mission.
    pub fn approved_always(&self) -> bool {
        self.state == AskState::Approved
            && self
                .resolution
                .as_ref()
                .and_then(|r| r.get("always"))
                .and_then(Value::as_bool)
                .unwrap_or(false)
    }

    pub fn is_pending(&self) -> bool {
        self.state == AskState::Pending
    }

    /// Pending past its deadline: its on-timeout verdict is due.
    pub fn is_overdue(&self, now_ms: i64) -> bool {
        self.is_pending() && self.expires_at > 0 && self.expires_at <= now_ms
    }
}

/// What a raiser supplies.
#[derive(Debug, Clone, Default)]
pub struct NewAsk {
    /// Caller-chosen id (e.g. a tool-call id); blank mints one.
    pub id: String,
    pub tools_name: String,
    pub tool_name: String,
    pub args_summary: String,
    pub diff: Option<String>,
    pub envelope_name: String,
    pub matched_rule: Option<i64>,
    /// Stored `deny` when blank.
    pub on_timeout: String,
    pub instance_id: String,
    pub session_id: String,
    pub agent_name: String,
    pub mission_id: Option<String>,
    /// `None`: no deadline.
    pub wait: Option<Duration>,
    /// The form, for a form ask.
    pub form: Option<form::Form>,
    /// The scope an operator's allow-always would cover (the agent offered one).
    pub always_scope: Option<String>,
    /// `Some(cwd)`: a run waits on this ask — the mission's unit, in `cwd` — and is
    /// checkpointed with the row itself, in the same write, so a host that dies at
    /// any moment after the ask exists leaves a run another process can resume.
    pub checkpoint_cwd: Option<String>,
}

/// Why a resolution did not land.
#[derive(Debug)]
pub enum AskError {
    NotFound(String),
    /// Resolved before this answer; `by` names who answered when the row says.
    AlreadyResolved {
        id: String,
        by: Option<String>,
    },
    Expired {
        id: String,
        on_timeout: String,
    },
    Invalid(String),
    Store(StoreError),
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::NotFound(id) => write!(
                f,
                "no ask {id:?} exists — 'missionboard approvals list' shows what is pending"
            ),
            AskError::AlreadyResolved { id, by: None } => write!(
                f,
                "ask {id} was already answered — a verdict is recorded exactly once"
            ),
            AskError::AlreadyResolved { id, by: Some(by) } => write!(
                f,
                "ask {id} was already answered by {by} — a verdict is recorded exactly once"
            ),
            AskError::Expired { id, on_timeout } => write!(
                f,
                "ask {id} expired before this answer; its on-timeout verdict ({on_timeout}) already applied"
            ),
            AskError::Invalid(m) => f.write_str(m),
            AskError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AskError {}

impl From<StoreError> for AskError {
    fn from(e: StoreError) -> Self {
        AskError::Store(e)
    }
}

/// An operator's verdict, from `approvals respond` or the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorVerdict {
    Approve,
    /// Approve, and allow calls of its scope without asking for the rest of its
    /// mission ([`allowances`]); only where its agent offered an allow-always.
    ApproveAlways,
    Deny,
    Answer(String),
    /// A form's `key=value` pairs (`--field`).
    Fields(Vec<(String, String)>),
}

/// The ask service. Clones share the in-process waiter table.
#[derive(Clone)]
pub struct Asks {
    pub(crate) store: Store,
    waiters: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
}

const COLUMNS: &str = "id, tools_name, tool_name, args_summary, diff, policy_name, matched_rule, on_timeout, state, resolution, instance_id, session_id, agent_name, mission_id, created_at, expires_at, resolved_at, answered_surface, answered_device, form, always_scope";

fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Ask> {
    let resolution: Option<String> = r.get(9)?;
    Ok(Ask {
        id: r.get(0)?,
        tools_name: r.get(1)?,
        tool_name: r.get(2)?,
        args_summary: r.get(3)?,
        diff: r.get(4)?,
        envelope_name: r.get(5)?,
        matched_rule: r.get(6)?,
        on_timeout: r.get(7)?,
        state: AskState::parse(&r.get::<String>(8)?),
        resolution: resolution.and_then(|s| serde_json::from_str(&s).ok()),
        instance_id: r.get(10)?,
        session_id: r.get(11)?,
        agent_name: r.get(12)?,
        mission_id: r.get(13)?,
        created_at: r.get(14)?,
        expires_at: r.get(15)?,
        resolved_at: r.get(16)?,
        answered_surface: r.get(17)?,
        answered_device: r.get(18)?,
        always_scope: r.get(20)?,
        waited_ms: r
            .get::<Option<i64>>(16)?
            .map(|at| at - r.get::<i64>(14).unwrap_or(at)),
        form: r
            .get::<Option<String>>(19)?
            .and_then(|f| form::Form::from_json(&f)),
    })
}

/// One line, at most 96 characters (and the ellipsis): what the table and the board
/// show of a call.
pub fn one_line_summary(text: &str) -> String {
    crate::text::excerpt(text, 96)
}

impl Asks {
    pub fn new(store: Store) -> Self {
        Asks {
            store,
            waiters: Arc::default(),
        }
    }

    /// Write a pending ask. Nothing waits on or announces an ask before this returns.
    pub fn raise(&self, new: NewAsk) -> Result<Ask, AskError> {
        let id = if new.id.trim().is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            new.id.trim().to_string()
        };
        let now = clock::now_ms();
        let expires_at = new.wait.map_or(0, |w| now + w.as_millis() as i64);
        let on_timeout = if new.on_timeout.trim().is_empty() {
            "deny".to_string()
        } else {
            new.on_timeout.trim().to_string()
        };
        let checkpoint = new.checkpoint_cwd.map(|cwd| checkpoint::Checkpoint {
            ask_id: id.clone(),
            mission_id: new.mission_id.clone().unwrap_or_default(),
            session_id: new.session_id.clone(),
            agent_name: new.agent_name.clone(),
            cwd,
            host: checkpoint::HostId::current(),
            claimed_at: None,
            parked_at: None,
            failure: None,
        });
        self.store.write(|tx| {
            tx.execute(
                &format!("INSERT INTO asks ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', NULL, ?9, ?10, ?11, ?12, ?13, ?14, NULL, NULL, NULL, ?15, ?16)"),
                params![
                    id, new.tools_name, new.tool_name, new.args_summary,
                    new.diff.clone().filter(|d| !d.trim().is_empty()),
                    new.envelope_name, new.matched_rule, on_timeout, new.instance_id,
                    new.session_id, new.agent_name, new.mission_id, now, expires_at,
                    new.form.as_ref().map(form::Form::to_json),
                    new.always_scope
                ],
            )?;
            if let Some(cp) = &checkpoint {
                checkpoint::insert(tx, cp, now)?;
            }
            Ok(())
        })?;
        self.require(&id)
    }

    pub fn get(&self, id: &str) -> Result<Option<Ask>, AskError> {
        Ok(self.store.with(|c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM asks WHERE id = ?1"),
                params![id],
                from_row,
            )
            .optional()
        })?)
    }

    /// An ask by id or by an unambiguous prefix, the way mission ids abbreviate.
    pub fn find(&self, id_or_prefix: &str) -> Result<Ask, AskError> {
        use crate::mission::id_prefix::{IdKind, Resolved, resolve};
        const ASK_IDS: IdKind = IdKind {
            noun: "ask",
            table: "asks",
            list_command: "missionboard approvals list",
        };
        match resolve(&self.store, &ASK_IDS, id_or_prefix)? {
            Resolved::Id(id) => self.require(&id),
            Resolved::NotFound => Err(AskError::NotFound(id_or_prefix.trim().to_string())),
            Resolved::Refused(why) => Err(AskError::Invalid(why)),
        }
    }

    pub fn require(&self, id: &str) -> Result<Ask, AskError> {
        self.get(id)?
            .ok_or_else(|| AskError::NotFound(id.to_string()))
    }

    /// Pending asks, newest first.
    pub fn pending(&self, limit: usize) -> Result<Vec<Ask>, AskError> {
        self.query(
            "WHERE state = 'pending' ORDER BY created_at DESC, id DESC LIMIT ?1",
            params![limit as i64],
        )
    }

    /// Pending asks, the longest-waiting first: what the web page lists.
    pub fn pending_longest_waiting(&self, limit: usize) -> Result<Vec<Ask>, AskError> {
        self.query(
            "WHERE state = 'pending' ORDER BY created_at, id LIMIT ?1",
            params![limit as i64],
        )
    }

    /// How many asks are pending.
    pub fn pending_count(&self) -> Result<i64, AskError> {
        Ok(self.store.with(|c| {
            c.query_row(
                "SELECT COALESCE((SELECT n FROM ask_state_counts WHERE state = 'pending'), 0)",
                [],
                |r| r.get(0),
            )
        })?)
    }

    /// Pending questions (asks that take words), newest first: one mission's, or
    /// every open mission's — what `mission asks` lists.
    pub fn pending_questions(
        &self,
        mission_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Ask>, AskError> {
        self.query(
            &format!("{PENDING_QUESTIONS} ORDER BY created_at DESC, id DESC LIMIT ?5"),
            params![
                QUESTION_TOOLS,
                QUESTION_TOOL,
                BUDGET_TOOL,
                mission_id,
                limit as i64
            ],
        )
    }

    /// How many [`pending_questions`](Self::pending_questions) there are in all.
    pub fn pending_questions_count(&self, mission_id: Option<&str>) -> Result<i64, AskError> {
        Ok(self.store.with(|c| {
            c.query_row(
                &format!("SELECT COUNT(*) FROM asks {PENDING_QUESTIONS}"),
                params![QUESTION_TOOLS, QUESTION_TOOL, BUDGET_TOOL, mission_id],
                |r| r.get(0),
            )
        })?)
    }

    /// A mission's asks, newest first, any state.
    pub fn for_mission(&self, mission_id: &str, limit: usize) -> Result<Vec<Ask>, AskError> {
        self.query(
            "WHERE mission_id = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
            params![mission_id, limit as i64],
        )
    }

    /// Resolved asks (answered, denied, expired, closed), the most recently
    /// resolved first: `approvals history`.
    pub fn history(&self, limit: usize) -> Result<Vec<Ask>, AskError> {
        self.query(
            "WHERE resolved_at IS NOT NULL ORDER BY resolved_at DESC, id DESC LIMIT ?1",
            params![limit as i64],
        )
    }

    /// How many asks are resolved in all.
    pub fn history_count(&self) -> Result<i64, AskError> {
        Ok(self.store.with(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM asks WHERE resolved_at IS NOT NULL",
                [],
                |r| r.get(0),
            )
        })?)
    }

    /// How many asks of each of `mission_ids` are pending (the board's column). Only
    /// the missions asked about are read, so the cost follows the visible rows, not
    /// the number of pending asks.
    pub fn pending_counts(&self, mission_ids: &[&str]) -> Result<HashMap<String, i64>, AskError> {
        if mission_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let marks = vec!["?"; mission_ids.len()].join(", ");
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(&format!(
                "SELECT mission_id, COUNT(*) FROM asks WHERE mission_id IN ({marks}) AND state = 'pending' GROUP BY mission_id"
            ))?;
            s.query_map(crate::store::sql::params_from_iter(mission_ids), |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect()
        })?)
    }

    fn query(&self, tail: &str, p: impl crate::store::sql::Params) -> Result<Vec<Ask>, AskError> {
        let values = p.values();
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(&format!("SELECT {COLUMNS} FROM asks {tail}"))?;
            s.query_map(values.as_slice(), from_row)?.collect()
        })?)
    }

    /// Record an operator's verdict: words for a question, approve/deny for a
    /// permission gate. The one path every surface uses, so the checks and the
    /// exactly-once write are the same everywhere.
    pub fn operator_verdict(
        &self,
        id: &str,
        verdict: &OperatorVerdict,
        via: &Surface,
    ) -> Result<Ask, AskError> {
        let ask = self.require(id)?;
        if ask.is_budget() {
            return match verdict {
                OperatorVerdict::Answer(text) => {
                    // Refused here, before the one-shot write: an answer the
                    // runtime cannot act on must not close the question.
                    BudgetAnswer::parse(text).map_err(AskError::Invalid)?;
                    self.answer(id, text, via)
                }
                _ => Err(AskError::Invalid(format!(
                    "ask {id} is a compute-bound question ({}) — {BUDGET_ANSWER_GRAMMAR}, with --answer",
                    ask.args_summary
                ))),
            };
        }
        // Only a gated call whose agent offered one takes an allow-always; the
        // allowance refuses every other ask, naming it.
        if *verdict == OperatorVerdict::ApproveAlways {
            return self
                .approve_always(id, via, &|_| Vec::new())
                .map(|(ask, _)| ask);
        }
        if ask.is_form() {
            return match verdict {
                OperatorVerdict::Fields(pairs) => self.fill_form(&ask, pairs, via),
                OperatorVerdict::Answer(text) => {
                    let pairs = form::parse_pairs(text).map_err(AskError::Invalid)?;
                    self.fill_form(&ask, &pairs, via)
                }
                // Submitted as shown: every field left to its default.
                OperatorVerdict::Approve | OperatorVerdict::ApproveAlways => {
                    self.fill_form(&ask, &[], via)
                }
                OperatorVerdict::Deny => self.resolve(
                    id,
                    AskState::Denied,
                    json!({ "action": "decline", "approved": false }),
                    via,
                ),
            };
        }
        if let OperatorVerdict::Fields(_) = verdict {
            return Err(AskError::Invalid(format!(
                "ask {id} is a {} ask, not a form — --field fills only a form the unit sent",
                ask.kind()
            )));
        }
        if ask.kind() == AskKind::Url {
            return match verdict {
                OperatorVerdict::Answer(_) => Err(AskError::Invalid(format!(
                    "ask {id} asks you to visit a page ({}) — answer --approve once done there, or --deny to decline",
                    ask.args_summary
                ))),
                v => self.respond(id, *v == OperatorVerdict::Approve, via),
            };
        }
        match (ask.is_question(), verdict) {
            (true, OperatorVerdict::Answer(text)) => self.answer(id, text, via),
            (true, _) => Err(AskError::Invalid(format!(
                "ask {id} is a QUESTION ({}) — answer it with --answer \"your words\", not a yes/no verdict",
                ask.args_summary
            ))),
            (false, OperatorVerdict::Answer(_)) => Err(AskError::Invalid(format!(
                "ask {id} is a permission ask ({}.{}) — it takes --approve or --deny, not text",
                ask.tools_name, ask.tool_name
            ))),
            (false, v) => self.respond(id, *v == OperatorVerdict::Approve, via),
        }
    }

    /// A form filled: the values checked against its fields before the one guarded
    /// write, and recorded as the agent receives them (`content`) and as one line
    /// (`answer`) for the surfaces that show answers.
    pub fn fill_form(
        &self,
        ask: &Ask,
        pairs: &[(String, String)],
        via: &Surface,
    ) -> Result<Ask, AskError> {
        let Some(form) = &ask.form else {
            return Err(AskError::Invalid(format!(
                "ask {} carries no form to fill",
                ask.id
            )));
        };
        let values = form.fill(pairs).map_err(|e| {
            AskError::Invalid(format!(
                "{e} — ask {} is a form ({})",
                ask.id,
                form.lines().join("; ")
            ))
        })?;
        let line = form::values_line(&values);
        self.resolve(
            &ask.id,
            AskState::Approved,
            json!({ "action": "accept", "content": values, "answer": line }),
            via,
        )
    }

    /// A human's words for a question.
    pub fn answer(&self, id: &str, text: &str, via: &Surface) -> Result<Ask, AskError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(AskError::Invalid("an answer needs words".into()));
        }
        self.resolve(id, AskState::Approved, json!({ "answer": text }), via)
    }

    /// A verdict on a permission gate.
    pub fn respond(&self, id: &str, approved: bool, via: &Surface) -> Result<Ask, AskError> {
        let state = if approved {
            AskState::Approved
        } else {
            AskState::Denied
        };
        self.resolve(id, state, json!({ "approved": approved }), via)
    }

    /// The guarded resolution: lands only on a pending, unexpired row. A miss is told
    /// apart by re-reading the row; a loser learns who answered first.
    pub fn resolve(
        &self,
        id: &str,
        state: AskState,
        resolution: Value,
        via: &Surface,
    ) -> Result<Ask, AskError> {
        let now = clock::now_ms();
        // The row as resolved comes back from the guarded write itself.
        let resolved = self.store.with(|c| {
            c.query_row(
                &format!(
                    "UPDATE asks SET state = ?2, resolution = ?3, resolved_at = ?4,
                         answered_surface = ?5, answered_device = ?6
                     WHERE id = ?1 AND state = 'pending' AND (expires_at = 0 OR expires_at > ?4)
                     RETURNING {COLUMNS}"
                ),
                params![
                    id,
                    state.as_str(),
                    resolution.to_string(),
                    now,
                    via.as_str(),
                    via.device()
                ],
                from_row,
            )
            .optional()
        })?;
        if let Some(ask) = resolved {
            self.wake(id);
            return Ok(ask);
        }
        Err(self.missed(id)?)
    }

    /// Why a guarded resolution of `id` found no pending, unexpired row: expired
    /// (its on-timeout verdict applied now if it was still pending), or answered
    /// first by someone the row names.
    fn missed(&self, id: &str) -> Result<AskError, AskError> {
        let row = self.require(id)?;
        Ok(match row.state {
            // Pending but past its deadline: apply its on-timeout verdict now.
            AskState::Pending => {
                self.sweep_expired()?;
                AskError::Expired {
                    id: id.to_string(),
                    on_timeout: row.on_timeout,
                }
            }
            AskState::Expired => AskError::Expired {
                id: id.to_string(),
                on_timeout: row.on_timeout,
            },
            _ => AskError::AlreadyResolved {
                by: row.answered_via(),
                id: id.to_string(),
            },
        })
    }

    /// Resolve every pending ask past its deadline to its on-timeout verdict (always a
    /// denial: `allow` is refused at load), at most 200 per call. Returns the rows.
    pub fn sweep_expired(&self) -> Result<Vec<Ask>, AskError> {
        let now = clock::now_ms();
        let due = self.query(
            "WHERE state = 'pending' AND expires_at > 0 AND expires_at <= ?1 ORDER BY expires_at LIMIT 200",
            params![now],
        )?;
        let mut swept = Vec::new();
        for a in due {
            let changed = self.store.with(|c| {
                c.execute(
                    "UPDATE asks SET state = 'expired', resolution = ?2, resolved_at = ?3
                     WHERE id = ?1 AND state = 'pending'",
                    params![
                        a.id,
                        json!({"approved": a.on_timeout == "allow"}).to_string(),
                        now
                    ],
                )
            })?;
            if changed == 1 {
                self.wake(&a.id);
                swept.push(self.require(&a.id)?);
            }
        }
        Ok(swept)
    }

    /// The ask as it stands once its deadline is honoured: an overdue row is
    /// settled (with every other overdue one) before it is returned. Whoever watches
    /// a pending ask — the host waiting on it, a sweep — settles it through here, so
    /// a deadline acts on time without anyone reading the approvals.
    pub fn settle_if_overdue(&self, ask: Ask) -> Result<Ask, AskError> {
        if !ask.is_overdue(clock::now_ms()) {
            return Ok(ask);
        }
        self.sweep_expired()?;
        self.require(&ask.id)
    }

    /// Deny every pending ask of a mission (`mission stop`); returns the closed ids.
    /// Rows resolved concurrently are skipped, never overwritten.
    pub fn abandon_mission(&self, mission_id: &str) -> Result<Vec<String>, AskError> {
        let pending = self.query(
            "WHERE mission_id = ?1 AND state = 'pending' LIMIT 1000",
            params![mission_id],
        )?;
        let mut closed = Vec::new();
        for a in pending {
            let changed = self.store.with(|c| {
                c.execute(
                    "UPDATE asks SET state = 'denied', resolution = ?2, resolved_at = ?3
                     WHERE id = ?1 AND state = 'pending'",
                    params![
                        a.id,
                        json!({"approved": false}).to_string(),
                        clock::now_ms()
                    ],
                )
            })?;
            if changed == 1 {
                self.wake(&a.id);
                closed.push(a.id);
            }
        }
        Ok(closed)
    }

    /// Wait until the ask is resolved or `deadline` passes. Returns the row as last
    /// read: resolved, or still pending at the deadline.
    pub async fn wait(&self, id: &str, deadline: Option<Instant>) -> Result<Ask, AskError> {
        let notify = self.waiter(id);
        // Subscribed before the first look, so a commit from another process between
        // a look and the wait is never missed.
        let mut changes = self.store.changes().subscribe();
        let result = loop {
            let notified = notify.notified();
            // Each look at the row crosses the blocking boundary: a foreign lock
            // must not stall the worker this waiter shares with other missions.
            let (asks, key) = (self.clone(), id.to_string());
            let row = match crate::store::blocking(move || asks.require(&key)).await {
                Ok(row) => row,
                Err(e) => break Err(e),
            };
            if !row.is_pending() {
                break Ok(row);
            }
            if row.is_overdue(clock::now_ms()) {
                let asks = self.clone();
                if let Err(e) = crate::store::blocking(move || asks.settle_if_overdue(row)).await {
                    break Err(e);
                }
                continue;
            }
            let mut sleep = POLL_INTERVAL;
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break Ok(row);
                }
                sleep = sleep.min(left);
            }
            tokio::select! {
                _ = notified => {}
                _ = changes.next(sleep) => {}
            }
        };
        self.drop_waiter(id, &notify);
        result
    }

    /// Is a waiter for this ask parked in this process?
    pub fn has_waiter(&self, id: &str) -> bool {
        self.waiters.lock_unpoisoned().contains_key(id)
    }

    fn waiter(&self, id: &str) -> Arc<Notify> {
        self.waiters
            .lock_unpoisoned()
            .entry(id.to_string())
            .or_default()
            .clone()
    }

    fn drop_waiter(&self, id: &str, notify: &Arc<Notify>) {
        let mut w = self.waiters.lock_unpoisoned();
        // Only the last waiter of this ask removes the entry.
        if w.get(id).is_some_and(|n| Arc::ptr_eq(n, notify)) && Arc::strong_count(notify) <= 2 {
            w.remove(id);
        }
    }

    pub(crate) fn wake(&self, id: &str) {
        if let Some(n) = self.waiters.lock_unpoisoned().get(id) {
            n.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asks() -> (tempfile::TempDir, Asks) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("board.db")).unwrap();
        (dir, Asks::new(store))
    }

    fn question(a: &Asks, wait: Option<Duration>) -> Ask {
        a.raise(NewAsk {
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: "Rename the env var too?".into(),
            mission_id: Some("m1".into()),
            wait,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn json_spells_the_envelope_policy_name() {
        let (_d, a) = asks();
        let ask = a
            .raise(NewAsk {
                tools_name: "fs".into(),
                tool_name: "write".into(),
                envelope_name: "strict".into(),
                ..Default::default()
            })
            .unwrap();
        let v = serde_json::to_value(ask).unwrap();
        assert_eq!(v["policyName"], "strict", "{v:#}");
        assert!(v.get("envelopeName").is_none(), "{v:#}");
    }

    #[test]
    fn a_row_is_terminal_exactly_once() {
        let (_d, a) = asks();
        let q = question(&a, None);
        assert!(q.is_question() && q.is_pending() && q.expires_at == 0);
        let done = a.answer(&q.id, "yes", &Surface::Cli).unwrap();
        assert_eq!(done.answer(), Some("yes"));
        assert_eq!(done.answered_by(), None);
        assert_eq!(done.answered_via().as_deref(), Some("cli"));
        let lost = a
            .answer(&q.id, "no", &Surface::Web("phone".into()))
            .unwrap_err();
        assert_eq!(
            lost.to_string(),
            format!(
                "ask {} was already answered by cli — a verdict is recorded exactly once",
                q.id
            )
        );
        assert!(matches!(
            a.respond("missing", true, &Surface::Cli).unwrap_err(),
            AskError::NotFound(_)
        ));
        assert_eq!(a.require(&q.id).unwrap().answer(), Some("yes"));
    }

    #[test]
    fn concurrent_answers_land_once() {
        let (_d, a) = asks();
        let q = question(&a, None);
        let results: Vec<_> = (0..8)
            .map(|i| {
                let a = a.clone();
                let id = q.id.clone();
                std::thread::spawn(move || {
                    a.answer(&id, &format!("answer {i}"), &Surface::Board)
                        .is_ok()
                })
            })
            .map(|h| h.join().unwrap())
            .collect();
        assert_eq!(results.iter().filter(|ok| **ok).count(), 1);
    }

    #[test]
    fn expiry_applies_the_on_timeout_verdict_and_refuses_late_answers() {
        let (_d, a) = asks();
        let q = question(&a, Some(Duration::from_millis(1)));
        std::thread::sleep(Duration::from_millis(5));
        let err = a.answer(&q.id, "late", &Surface::Cli).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "ask {} expired before this answer; its on-timeout verdict (deny) already applied",
                q.id
            )
        );
        let row = a.require(&q.id).unwrap();
        assert_eq!(row.state, AskState::Expired);
        assert_eq!(row.approved(), Some(false));
    }

    #[tokio::test]
    async fn a_waiter_wakes_on_an_answer_from_another_handle() {
        let (dir, a) = asks();
        let q = question(&a, None);
        // A second store on the same file stands in for another process.
        let other = Asks::new(Store::open(&dir.path().join("board.db")).unwrap());
        let (id, waiting) = (q.id.clone(), a.clone());
        // The answer comes only once the waiter is parked, so the wake is what ends
        // the wait, not a row already answered when it began.
        let t = tokio::spawn(async move {
            crate::clock::poll_until(Duration::from_secs(10), Duration::from_millis(1), || {
                waiting.has_waiter(&id).then_some(())
            })
            .await
            .expect("the waiter parks");
            other.answer(&id, "go ahead", &Surface::Cli).unwrap();
        });
        let got = a
            .wait(&q.id, Some(Instant::now() + Duration::from_secs(10)))
            .await
            .unwrap();
        t.await.unwrap();
        assert_eq!(got.answer(), Some("go ahead"));
        assert!(!a.has_waiter(&q.id));
    }

    #[tokio::test]
    async fn a_wait_with_a_deadline_returns_the_pending_row() {
        let (_d, a) = asks();
        let q = question(&a, None);
        let got = a
            .wait(&q.id, Some(Instant::now() + Duration::from_millis(30)))
            .await
            .unwrap();
        assert!(got.is_pending());
    }

    #[test]
    fn abandoning_a_mission_denies_only_its_pending_asks() {
        let (_d, a) = asks();
        let q1 = question(&a, None);
        let q2 = question(&a, None);
        a.answer(&q2.id, "done", &Surface::Cli).unwrap();
        let closed = a.abandon_mission("m1").unwrap();
        assert_eq!(closed, vec![q1.id.clone()]);
        assert_eq!(a.require(&q1.id).unwrap().state, AskState::Denied);
        assert_eq!(a.require(&q2.id).unwrap().answer(), Some("done"));
        assert!(a.pending(50).unwrap().is_empty());
    }

    #[test]
    fn summaries_are_one_line_and_bounded() {
        assert_eq!(one_line_summary("a\nb"), "a b");
        let long = "x".repeat(100);
        let s = one_line_summary(&long);
        assert_eq!(s.chars().count(), 97);
        assert!(s.ends_with('…'));
    }

    #[test]
    fn a_compute_bound_question_takes_only_the_budget_grammar() {
        let (_d, a) = asks();
        let q = a
            .raise(NewAsk {
                tools_name: QUESTION_TOOLS.into(),
                tool_name: BUDGET_TOOL.into(),
                args_summary:
                    "mission m1 hit its compute bound maxToolCalls=3 — extend it or let it stop?"
                        .into(),
                mission_id: Some("m1".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(q.is_budget() && q.takes_words() && !q.is_question());
        assert_eq!(q.kind(), AskKind::Compute);
        let err = a
            .operator_verdict(
                &q.id,
                &OperatorVerdict::Answer("sure".into()),
                &Surface::Cli,
            )
            .unwrap_err();
        assert!(
            err.to_string().starts_with(
                "\"sure\" is not an answer to a compute-bound question: answer \"extend N%\""
            ),
            "{err}"
        );
        assert!(
            a.require(&q.id).unwrap().is_pending(),
            "nothing was written"
        );
        assert!(
            a.operator_verdict(&q.id, &OperatorVerdict::Approve, &Surface::Cli)
                .is_err()
        );
        let done = a
            .operator_verdict(
                &q.id,
                &OperatorVerdict::Answer("extend 50%".into()),
                &Surface::Cli,
            )
            .unwrap();
        assert_eq!(done.answer(), Some("extend 50%"));
    }
}
