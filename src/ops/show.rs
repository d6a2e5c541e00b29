//! What the read views (`mission show`, the board's detail pane, the web page) work
//! out from a mission's records with the fleet's rules: what it cost at the home's
//! prices, what the fleet spent today against its budget, what its units used, and
//! what fired it. Each reads through the host it is handed (the board's snapshot
//! thread hands the host it reads on, over a connection of its own). The records
//! themselves — the compute record (`mission::compute`) and the oracle's trace
//! (`asks::trace`) — are read from their owners directly.

use crate::fleet::budget::price::{self, Cost, CostSource, PriceTable};
use crate::mission::compute::{ComputeLedger, ComputeRecord};
use crate::ops::host::Host;
use crate::store::StoreError;

/// What a mission cost, from its compute record: the agent's own figure, else its
/// tokens at the price of its model in the home's price table (shipped prices with
/// the home's `prices.toml` over them). A price table that cannot be read is said
/// in the note, not turned into a zero.
pub fn mission_cost(host: &Host, record: Option<&ComputeRecord>) -> Cost {
    let home = &host.paths().home;
    let Some(record) = record else {
        return Cost {
            usd: None,
            source: CostSource::None,
            note: "nothing spent: the mission never started a unit".into(),
            oracle: None,
        };
    };
    let prices = match PriceTable::load(home) {
        Ok(prices) => prices,
        // A reported cost needs no price.
        Err(_) if record.spent.reported_cost_micro_usd.is_some() => PriceTable::default(),
        Err(e) => {
            return Cost {
                usd: None,
                source: CostSource::None,
                note: format!("no price: {e}"),
                oracle: None,
            };
        }
    };
    price::cost_of(&prices, record.model.as_deref(), &record.spent).with_oracle(&record.oracle)
}

/// What each of `ids` cost (a listing's rows), the price table read once. A
/// mission with no compute record started no unit and has no cost to show.
pub fn mission_costs(
    host: &Host,
    ids: &[String],
) -> Result<std::collections::HashMap<String, Cost>, StoreError> {
    let records = ComputeLedger::new(host.store().clone()).get_many(ids)?;
    let prices = PriceTable::load(&host.paths().home);
    Ok(records
        .into_iter()
        .map(|(id, record)| {
            let cost = match &prices {
                Ok(prices) => price::cost_of(prices, record.model.as_deref(), &record.spent)
                    .with_oracle(&record.oracle),
                Err(_) => mission_cost(host, Some(&record)),
            };
            (id, cost)
        })
        .collect())
}

/// What the fleet has spent today (UTC), in US dollars, as the budgets count it:
/// every mission admitted since midnight at its priced cost and its oracle's,
/// or its hold while it runs; and the daily budget when one is set.
pub fn fleet_today(host: &Host) -> Result<(f64, Option<f64>), StoreError> {
    let store = host.store();
    let now = crate::clock::now_ms();
    let since = now - now.rem_euclid(86_400_000);
    let spent = store.with(|c| crate::fleet::budget::fleet::period_spend(c, since, now))?;
    let budget = crate::config::Config::new(store.clone())
        .get(crate::config::BUDGET_DAILY)
        .ok()
        .flatten()
        .and_then(|v| crate::config::parse_usd(&v).ok())
        .filter(|b| *b > 0.0);
    Ok((spent as f64 / 1_000_000.0, budget))
}

/// What a mission's units used, as every surface shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    /// The peak resident memory of one of its units' process trees, in bytes
    /// (`null`: no unit of it was sampled).
    pub peak_rss_bytes: Option<u64>,
    /// The CPU time (user + system) its units' trees spent, in milliseconds.
    pub cpu_ms: u64,
}

impl Resources {
    /// `peak memory 310M · CPU 12.3s`, or what is not known.
    pub fn line(&self) -> String {
        match self.peak_rss_bytes {
            Some(peak) => format!(
                "peak memory {} · CPU {}",
                crate::size::text(peak),
                cpu_text(self.cpu_ms)
            ),
            None => "not sampled: no unit of it ran for a sampling round".to_string(),
        }
    }
}

/// `12.3s`, `4m05s`: CPU time as every surface prints it.
pub fn cpu_text(ms: u64) -> String {
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// What the units of `mission_id` used (`None`: it never started a unit).
pub fn resources(host: &Host, mission_id: &str) -> Result<Option<Resources>, StoreError> {
    Ok(ComputeLedger::new(host.store().clone())
        .resources(mission_id)?
        .map(|r| Resources {
            peak_rss_bytes: r.peak_rss_bytes,
            cpu_ms: r.cpu_ms,
        }))
}

/// What fired a mission when the operator did not type it: its firing editor
/// session (`session mb-…`), or the schedule tick or webhook delivery that queued
/// it (`schedule nightly (tick …)`); `None` for an operator's own fire. The words
/// the board's detail and the web page show.
pub fn fired_by(
    host: &Host,
    mission: &crate::mission::Mission,
) -> Result<Option<String>, StoreError> {
    if let Some(session) = mission.parent_session_id.as_deref() {
        return Ok(Some(format!("session {}", crate::text::one_line(session))));
    }
    Ok(
        crate::sched::schedules::Schedules::new(host.store().clone())
            .fired_by(&mission.id)?
            .map(|f| crate::text::one_line(&f.describe())),
    )
}
