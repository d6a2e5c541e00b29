//! What the read views (`mission show`, the board's detail and oracle panes)
//! gather from the roles' own records: the compute a mission spent under its
//! bounds, and what the oracle did about its questions.

use crate::fleet::budget::price::{self, Cost, CostSource, PriceTable};
use crate::fleet::budget::{ComputeLedger, ComputeRecord};
use crate::oracle::trace::Trace;
use crate::store::{Store, StoreError};

/// One line of what the oracle did about a question, with its ask and time.
use crate::oracle::trace::TraceLine;

/// The compute record of a mission: its bounds as raised, what it spent, the model
/// it runs on. `None` for a mission that never started a unit.
pub fn compute_record(
    store: &Store,
    mission_id: &str,
) -> Result<Option<ComputeRecord>, StoreError> {
    ComputeLedger::new(store.clone()).get(mission_id)
}

/// What a mission cost, from its compute record: the agent's own figure, else its
/// tokens at the price of its model in the home's price table (shipped prices with
/// the home's `prices.toml` over them). A price table that cannot be read is said
/// in the note, not turned into a zero.
pub fn mission_cost(home: &std::path::Path, record: Option<&ComputeRecord>) -> Cost {
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
    home: &std::path::Path,
    store: &Store,
    ids: &[String],
) -> Result<std::collections::HashMap<String, Cost>, StoreError> {
    let records = ComputeLedger::new(store.clone()).get_many(ids)?;
    let prices = PriceTable::load(home);
    Ok(records
        .into_iter()
        .map(|(id, record)| {
            let cost = match &prices {
                Ok(prices) => price::cost_of(prices, record.model.as_deref(), &record.spent)
                    .with_oracle(&record.oracle),
                Err(_) => mission_cost(home, Some(&record)),
            };
            (id, cost)
        })
        .collect())
}

/// What the fleet has spent today (UTC), in US dollars, as the budgets count it:
/// every mission admitted since midnight at its priced cost and its oracle's,
/// or its hold while it runs; and the daily budget when one is set.
pub fn fleet_today(store: &Store) -> Result<(f64, Option<f64>), StoreError> {
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

/// What the oracle did about one mission's questions, its newest `limit` lines.
pub fn oracle_trace(
    store: &Store,
    mission_id: &str,
    limit: usize,
) -> Result<Vec<TraceLine>, StoreError> {
    Trace::new(store.clone(), false).for_mission(mission_id, limit)
}

/// The oracle's newest `limit` lines across every mission, oldest first.
pub fn recent_oracle_trace(store: &Store, limit: usize) -> Result<Vec<String>, StoreError> {
    Trace::new(store.clone(), false).recent(limit)
}
