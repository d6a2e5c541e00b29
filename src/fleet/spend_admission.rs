//! A fire's admission against the fleet's money budgets (`budget-daily`,
//! `budget-monthly`): a direct fire is refused naming the spend and the budget; a
//! host's queue claim passes over a mission the budget cannot take, which waits
//! for the next period. Both are the one guarded read-and-admit of
//! [`budget::fleet::admit_in`].

use super::*;
use budget::fleet::{FleetBudgets, admit_in};

/// What a host's queue claim asks of each candidate: whether the fleet's budgets
/// admit it (read once per claim round).
pub struct QueueGate {
    budgets: FleetBudgets,
    paths: Paths,
}

impl QueueGate {
    /// Inside the claim's write transaction: admit the queued mission `id` (fired
    /// under envelope `envelope`), setting aside its `maxCostUsd`, or pass over it.
    pub fn admit(
        &self,
        c: &crate::store::Conn<'_>,
        id: &str,
        envelope: &str,
    ) -> crate::store::sql::Result<bool> {
        if !self.budgets.is_set() {
            return Ok(true);
        }
        // An envelope that does not load sets nothing aside: its start refuses it.
        let hold = search::load(&self.paths, envelope)
            .map(|e| e.declared.compute.max_cost_micro_usd)
            .unwrap_or(0);
        match admit_in(c, &self.budgets, id, hold, crate::clock::now_ms())? {
            Ok(()) => Ok(true),
            Err(over) => {
                tracing::info!(mission = %id, "host: the queued mission waits: {}", over.refusal());
                Ok(false)
            }
        }
    }
}

impl Fleet {
    /// The gate this host's next queue claim runs each candidate through.
    pub fn queue_gate(&self) -> anyhow::Result<QueueGate> {
        Ok(QueueGate {
            budgets: FleetBudgets::read(&Config::new(self.inner.missions.store().clone()))?,
            paths: self.inner.paths.clone(),
        })
    }

    /// Admit a direct fire against the fleet's budgets, setting its `maxCostUsd`
    /// aside; refused naming the spend and the budget. Returns whether an
    /// admission was written (to take back if the start fails).
    pub(super) async fn admit_spend(
        &self,
        mission_id: &str,
        envelope: &search::Loaded,
    ) -> anyhow::Result<bool> {
        let store = self.inner.missions.store().clone();
        let (id, hold) = (
            mission_id.to_string(),
            envelope.declared.compute.max_cost_micro_usd,
        );
        blocking(move || -> anyhow::Result<bool> {
            let budgets = FleetBudgets::read(&Config::new(store.clone()))?;
            if !budgets.is_set() {
                return Ok(false);
            }
            let now = crate::clock::now_ms();
            match store.write(|c| admit_in(c, &budgets, &id, hold, now))? {
                Ok(()) => Ok(true),
                Err(over) => anyhow::bail!("{}", over.refusal()),
            }
        })
        .await
    }

    /// Take back a fire's admission when its start failed before its mission was
    /// written.
    pub(super) async fn withdraw_spend(&self, mission_id: &str) {
        let (store, id) = (self.inner.missions.store().clone(), mission_id.to_string());
        if let Err(e) = blocking(move || budget::fleet::withdraw(&store, &id)).await {
            tracing::warn!(mission = %mission_id, "could not take back the budget admission of a failed start: {e}");
        }
    }
}
