//! The fleet's money budgets (`budget-daily`, `budget-monthly`): what every host on
//! the store may spend in a UTC day and a UTC month, together.
//!
//! A mission is admitted against them by one guarded read-and-admit: inside one
//! write transaction (which both backends serialise: SQLite's `BEGIN IMMEDIATE`,
//! PostgreSQL's write lock) the period's spend is read and the admission written
//! — the mission's compute row, stamped with when it was admitted and what it sets
//! aside (its envelope's `maxCostUsd`, held while it runs). So two hosts admitting
//! at once are one after the other: the second reads the first's hold, and no race
//! lets them pass the budget together.
//!
//! The period's spend is every mission admitted in it: what it cost as its host
//! priced it (and the oracle's calls about it), or — while it runs — its hold when
//! that is more.

use crate::config::Config;
use crate::store::sql::{OptionalExtension, params};

/// How long a hold may stand with no mission written for it: the longest a unit's
/// start may take. A host that died between its admission and its mission's
/// record leaves a hold that stops counting after this.
pub const UNSTARTED_HOLD_MS: i64 = 10 * 60 * 1000;

/// What a running mission does when the fleet's spend crosses a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnExceeded {
    /// It finishes its work; nothing new starts until the next period.
    #[default]
    Finish,
    /// Its turn is cancelled and it waits on a question: extend its own money
    /// bound to go on, or stop.
    Pause,
}

/// The fleet's budgets as configured, in micro-dollars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FleetBudgets {
    pub daily: Option<u64>,
    pub monthly: Option<u64>,
    pub on_exceeded: OnExceeded,
}

/// One budget period in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    /// The config key that sets it.
    pub key: &'static str,
    /// `today` / `this month` (UTC).
    pub name: &'static str,
    pub since_ms: i64,
    /// When the next period begins.
    pub until_ms: i64,
    pub budget: u64,
}

/// A budget a mission may not pass: the fleet's spend, what the mission would set
/// aside, and the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Over {
    pub period: Period,
    pub spent: u64,
    pub hold: u64,
}

impl Over {
    /// The refusal, naming the figures and the fixes.
    pub fn refusal(&self) -> String {
        let usd = crate::envelope::bounds::usd;
        let p = &self.period;
        let hold = if self.hold > 0 && self.spent < p.budget {
            format!(
                ", and this mission's maxCostUsd {} would take it past",
                usd(self.hold)
            )
        } else {
            String::new()
        };
        format!(
            "fleet budget refused: the fleet has spent {} {} (UTC) against {} {}{hold}. Fire it with --queue to start when the next period begins ({}), or raise the budget: `missionboard config set {} <USD>`.",
            usd(self.spent),
            p.name,
            p.key,
            usd(p.budget),
            crate::clock::rfc3339(p.until_ms),
            p.key
        )
    }

    /// The stuck or pause reason of a running mission that crossed it.
    pub fn crossed(&self) -> String {
        let usd = crate::envelope::bounds::usd;
        let p = &self.period;
        format!(
            "fleet budget exceeded: the fleet has spent {} {} (UTC) against {} {} — nothing new starts until {}.",
            usd(self.spent),
            p.name,
            p.key,
            usd(p.budget),
            crate::clock::rfc3339(p.until_ms)
        )
    }
}

/// A configured amount of US dollars as micro-dollars (`None`: unset or 0).
fn amount(config: &Config, key: &str) -> anyhow::Result<Option<u64>> {
    Ok(config
        .get(key)?
        .and_then(|v| crate::config::parse_usd(&v).ok())
        .map(crate::envelope::format::micro_usd)
        .filter(|m| *m > 0))
}

impl FleetBudgets {
    pub fn read(config: &Config) -> anyhow::Result<FleetBudgets> {
        Ok(FleetBudgets {
            daily: amount(config, crate::config::BUDGET_DAILY)?,
            monthly: amount(config, crate::config::BUDGET_MONTHLY)?,
            on_exceeded: match config.get(crate::config::BUDGET_ON_EXCEEDED)?.as_deref() {
                Some("pause") => OnExceeded::Pause,
                _ => OnExceeded::Finish,
            },
        })
    }

    pub fn is_set(&self) -> bool {
        self.daily.is_some() || self.monthly.is_some()
    }

    /// The periods in force at `now_ms`: the UTC day and the UTC month.
    pub fn periods(&self, now_ms: i64) -> Vec<Period> {
        use chrono::{Datelike, TimeZone, Utc};
        let mut out = Vec::new();
        if let Some(budget) = self.daily {
            let since_ms = now_ms - now_ms.rem_euclid(86_400_000);
            out.push(Period {
                key: crate::config::BUDGET_DAILY,
                name: "today",
                since_ms,
                until_ms: since_ms + 86_400_000,
                budget,
            });
        }
        if let Some(budget) = self.monthly {
            let now = Utc
                .timestamp_millis_opt(now_ms)
                .single()
                .unwrap_or_else(Utc::now);
            let first = |y: i32, m: u32| {
                Utc.with_ymd_and_hms(y, m, 1, 0, 0, 0)
                    .single()
                    .map_or(0, |t| t.timestamp_millis())
            };
            let (y, m) = (now.year(), now.month());
            let next = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
            out.push(Period {
                key: crate::config::BUDGET_MONTHLY,
                name: "this month",
                since_ms: first(y, m),
                until_ms: first(next.0, next.1),
                budget,
            });
        }
        out
    }
}

/// The fleet's spend since `since_ms`, in micro-dollars: each mission admitted
/// since, at its priced cost plus its oracle's, or its hold while it runs when
/// that is more. A hold whose mission was never written counts only while its
/// start may still be under way.
const PERIOD_SPEND: &str = "
SELECT CAST(COALESCE(SUM(CASE
           WHEN m.status IS NULL OR m.status IN ('open', 'queued')
           THEN MAX(COALESCE(c.cost_micro_usd, 0) + COALESCE(c.oracle_cost_micro_usd, 0), c.hold_micro_usd)
           ELSE COALESCE(c.cost_micro_usd, 0) + COALESCE(c.oracle_cost_micro_usd, 0) END), 0) AS BIGINT)
FROM mission_compute c LEFT JOIN missions m ON m.id = c.mission_id
WHERE c.admitted_at >= ?1 AND (m.id IS NOT NULL OR c.admitted_at >= ?2)";

/// The fleet's spend since `since_ms` (see [`PERIOD_SPEND`]), on a connection.
pub fn period_spend(
    c: &crate::store::Conn<'_>,
    since_ms: i64,
    now_ms: i64,
) -> crate::store::sql::Result<u64> {
    let spent: Option<i64> = c
        .query_row(
            PERIOD_SPEND,
            params![since_ms, now_ms - UNSTARTED_HOLD_MS],
            |r| r.get(0),
        )
        .optional()?;
    Ok(spent.unwrap_or(0).max(0) as u64)
}

/// The first period in force whose budget the fleet's spend has reached.
pub fn first_over(
    c: &crate::store::Conn<'_>,
    budgets: &FleetBudgets,
    now_ms: i64,
) -> crate::store::sql::Result<Option<Over>> {
    for period in budgets.periods(now_ms) {
        let spent = period_spend(c, period.since_ms, now_ms)?;
        if spent >= period.budget {
            return Ok(Some(Over {
                period,
                spent,
                hold: 0,
            }));
        }
    }
    Ok(None)
}

/// Admit mission `mission_id`, setting `hold` micro-dollars aside, inside the
/// caller's write transaction: refused (nothing written) when the fleet's spend
/// of a period has reached its budget, or the hold would take it past.
pub fn admit_in(
    c: &crate::store::Conn<'_>,
    budgets: &FleetBudgets,
    mission_id: &str,
    hold: u64,
    now_ms: i64,
) -> crate::store::sql::Result<Result<(), Over>> {
    for period in budgets.periods(now_ms) {
        let spent = period_spend(c, period.since_ms, now_ms)?;
        if spent >= period.budget || spent.saturating_add(hold) > period.budget {
            return Ok(Err(Over {
                period,
                spent,
                hold,
            }));
        }
    }
    c.execute(
        "INSERT INTO mission_compute (mission_id, hold_micro_usd, admitted_at, updated_at) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (mission_id) DO UPDATE SET hold_micro_usd = ?2, admitted_at = ?3, updated_at = ?3",
        params![mission_id, hold as i64, now_ms],
    )?;
    Ok(Ok(()))
}

/// Take back the admission of a fire whose start failed before its mission was
/// written (a mission that exists keeps its record).
pub fn withdraw(
    store: &crate::store::Store,
    mission_id: &str,
) -> Result<(), crate::store::StoreError> {
    store.with(|c| {
        c.execute(
            "DELETE FROM mission_compute WHERE mission_id = ?1
             AND NOT EXISTS (SELECT 1 FROM missions WHERE id = ?1)",
            params![mission_id],
        )
    })?;
    Ok(())
}
