//! Hosting: a started unit is held by this fleet, its permission requests answered
//! and its turns driven, until its mission rests.

use super::elicitations;
use super::*;

impl Fleet {
    /// Does this host hold the unit of `mission_id` (it dispatched or resumed it)?
    pub fn holds(&self, mission_id: &str) -> bool {
        self.inner
            .units
            .lock_unpoisoned()
            .hosted
            .contains_key(mission_id)
    }

    /// The missions whose units this host holds (dispatched or resumed here).
    pub fn hosted_missions(&self) -> Vec<String> {
        let units = self.inner.units.lock_unpoisoned();
        units.hosted.keys().cloned().collect()
    }

    /// Wait until this host no longer holds a unit for `mission_id`.
    pub async fn wait_unit(&self, mission_id: &str) {
        self.until_units(|f| !f.holds(mission_id)).await;
    }

    /// Wait until this host holds no unit and starts none: every one it hosted has
    /// been reaped.
    pub async fn wait_all_units(&self) {
        self.until_units(|f| f.open_units() == 0).await;
    }

    /// Wait until `done` holds, looking again each time a unit leaves.
    async fn until_units(&self, done: impl Fn(&Fleet) -> bool) {
        loop {
            // Registered before the look, so a unit leaving in between still wakes it.
            let left = self.inner.units_left.notified();
            tokio::pin!(left);
            left.as_mut().enable();
            if done(self) {
                return;
            }
            left.await;
        }
    }

    /// Hold a started unit: answer its permission requests and drive it. A dispatch's
    /// `slot` becomes the hosted unit's width.
    pub(super) async fn host(
        &self,
        mut started: Started,
        mission: crate::mission::Mission,
        envelope: search::Loaded,
        opening: drive::Opening,
        slot: Option<Reservation>,
        recorded: Option<crate::mission::compute::ComputeRecord>,
    ) {
        let inner = &self.inner;
        let mission_id = mission.id.clone();
        let unit_root = started.unit.pid();
        let (stop_tx, stop_rx) = watch::channel(false);
        let (idle_tx, idle_rx) = watch::channel(None);
        let ledger = crate::mission::compute::ComputeLedger::new(inner.missions.store().clone());
        let declared = envelope.declared.compute.clone();
        let recorded = match recorded {
            Some(record) => record,
            None => {
                let (models, model) = started.models();
                let (recorder, id) = (ledger.clone(), mission_id.clone());
                blocking(move || {
                    // The record the write returns holds the envelope's bounds as an
                    // operator raised them on an earlier pause, and what earlier
                    // sessions of the mission spent against them.
                    recorder
                        .record_unit(&id, models.as_deref(), model.as_deref())
                        .or_else(|e| {
                            tracing::warn!(mission = %id, "could not record the unit's session model: {e}");
                            recorder.get(&id).map(Option::unwrap_or_default)
                        })
                        .unwrap_or_default()
                })
                .await
            }
        };
        let (compute, spent) = (recorded.apply(&declared), recorded.spent);
        let (budget, crossings) = budget::Budget::new(compute);
        let model = recorded.model.clone().unwrap_or_default();
        let price = budget::price::unit_price(&inner.paths.home, &model);
        let budgets = {
            let store = inner.missions.store().clone();
            blocking(move || budget::fleet::FleetBudgets::read(&crate::config::Config::new(store)))
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(mission = %mission_id, "could not read the fleet's budgets: {e}");
                    budget::fleet::FleetBudgets::default()
                })
        };
        let mut budget = budget
            .continuing(ledger.clone(), &mission_id, spent)
            .priced(&model, price)
            // An operator who already extended this mission's money bound
            // decided it past the fleet's budget.
            .watching_fleet(
                inner.missions.store().clone(),
                if recorded.max_cost_micro_usd.is_some() {
                    budget::fleet::FleetBudgets::default()
                } else {
                    budgets
                },
            );
        // A revised mission whose envelope counts per run counts from its revise.
        if declared.count_bounds == crate::envelope::format::CountBounds::PerRun {
            let (missions, id) = (inner.missions.clone(), mission_id.clone());
            if let Ok(Some(run)) = blocking(move || missions.latest_run(&id)).await {
                budget = budget.counting_from((run.base_tool_calls, run.base_tokens));
            }
        }
        let budget = Arc::new(budget);
        // Updates are counted as the unit's stdout is read, so its verdicts (on the
        // mission socket) can be judged with everything it said before them.
        let stdout = started.unit.stdout_mark();
        let counting = budget.clone();
        stdout.set_tap(Box::new(move |ev| counting.observe(ev)));
        let _ = started.link.verdicts.set(mission_tools::VerdictGate {
            stdout,
            budget: budget.clone(),
        });
        let _ = started.link.mission.set(mission.clone());
        let events = started
            .unit
            .take_events()
            .expect("fresh unit has its event channel");
        let perms = started
            .unit
            .take_permissions()
            .expect("fresh unit has its permission channel");
        let elicitations = started
            .unit
            .take_elicitations()
            .expect("fresh unit has its elicitation channel");
        elicitations::spawn_answerer(
            elicitations,
            elicitations::Desk {
                mission_id: mission_id.clone(),
                missions: inner.missions.clone(),
                asks: inner.asks.clone(),
                agent_name: mission.agent_name.clone(),
                session_id: started.session_id.clone(),
                instance_id: started.instance_id.clone(),
                envelope_name: envelope.name.clone(),
                ask_ceiling: inner.ask_ceiling,
                cwd: started.cwd.clone(),
            },
        );
        // A resume after an approved gated call: that approval stands once more.
        let resumed_approval = match &opening {
            drive::Opening::Resumed { ask_id, .. } => {
                let (asks, id) = (inner.asks.clone(), ask_id.clone());
                blocking(move || asks.get(&id))
                    .await
                    .ok()
                    .flatten()
                    .filter(|a| !a.takes_words() && a.approved() == Some(true))
            }
            drive::Opening::Fresh | drive::Opening::Revised { .. } => None,
        };
        let refusals = permissions::spawn_answerer(
            perms,
            permissions::Gate {
                mission_id: mission_id.clone(),
                missions: inner.missions.clone(),
                agent_name: mission.agent_name.clone(),
                session_id: started.session_id.clone(),
                instance_id: started.instance_id.clone(),
                cwd: started.cwd.clone(),
                envelope: envelope.clone(),
                asks: inner.asks.clone(),
                ask_ceiling: inner.ask_ceiling,
                budget: budget.clone(),
                resumed_approval: Mutex::new(resumed_approval),
                link: started.link.clone(),
            },
        );
        let revised = match &opening {
            drive::Opening::Revised { since, .. } => Some((*since, mission.plan_revision)),
            _ => None,
        };
        let drive = drive::Drive {
            missions: inner.missions.clone(),
            asks: inner.asks.clone(),
            mission,
            unit: started.unit,
            events,
            stop: stop_rx,
            socket: started.socket,
            resumer: matches!(opening, drive::Opening::Resumed { .. }),
            revised,
            opening,
            budget,
            crossings,
            refusals,
            ledger,
            ask_ceiling: inner.ask_ceiling,
            park_window: inner.park_window,
            idle: idle_tx,
            link: started.link.clone(),
        };
        let fleet = self.clone();
        let key = mission_id.clone();
        // Sampled from before its task can end and take it off the gauge.
        self.track_unit(&mission_id, unit_root);
        // Registered under the lock before the task can finish and deregister itself.
        let mut units = inner.units.lock_unpoisoned();
        let tmp = started.tmp;
        let done = tokio::spawn(async move {
            drive.run().await;
            // `{tmp}` goes with the unit (removing it is blocking work).
            blocking(move || drop(tmp)).await;
            fleet.untrack_unit(&key).await;
            fleet.inner.units.lock_unpoisoned().hosted.remove(&key);
            fleet.inner.units_left.notify_waiters();
        });
        units.hosted.insert(
            mission_id,
            Hosted {
                stop: stop_tx,
                idle: idle_rx,
                done,
            },
        );
        if let Some(slot) = slot {
            slot.fulfil(&mut units);
        }
    }

    /// When this host's unit of `mission_id` ended its turns and the mission is still
    /// open with nothing pending, the runtime blocker's summary saying so.
    pub fn idle_reason(&self, mission_id: &str) -> Option<String> {
        let units = self.inner.units.lock_unpoisoned();
        units.hosted.get(mission_id)?.idle.borrow().clone()
    }
}
