//! Teardown: the units of missions that came to rest anywhere are reaped, and a
//! host's shutdown reaps every unit it holds.

use super::*;

impl Fleet {
    /// Ask the unit of `mission_id` to wind down, if this host holds it. Returns at
    /// once; the unit is cancelled, given a grace period, and reaped.
    pub fn release(&self, mission_id: &str) -> bool {
        match self.inner.units.lock_unpoisoned().hosted.get(mission_id) {
            Some(h) => {
                let _ = h.stop.send(true);
                true
            }
            None => false,
        }
    }

    /// Reap every unit this host holds and wait for them (host shutdown).
    pub async fn shutdown(&self) {
        let hosted: Vec<(String, Hosted)> =
            self.inner.units.lock_unpoisoned().hosted.drain().collect();
        for (_, h) in &hosted {
            let _ = h.stop.send(true);
        }
        for (id, h) in hosted {
            if let Err(e) = h.done.await {
                tracing::warn!(mission = %id, "unit task ended abnormally: {e}");
            }
        }
    }

    /// Follow the bus and reap units whose mission came to rest anywhere — this
    /// host's unit finishing, an operator's stop from another terminal, a sweep.
    /// Runs until the fleet is dropped.
    pub fn spawn_teardown(&self) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let Some(missions) = weak.upgrade().map(|i| i.missions.clone()) else {
                return;
            };
            let feed = missions.store().changes();
            // Pushed commits wake it for every rest; the poll is for a store whose
            // commits are not pushed. Woken only to look, a host with units spent
            // ten store reads a second here for nothing.
            let every = if feed.pushed() {
                TEARDOWN_SAFETY_NET
            } else {
                TEARDOWN_POLL
            };
            let mut changes = feed.subscribe();
            let mut after = blocking(move || missions.bus().head()).await.unwrap_or(0);
            let mut safety_net = Instant::now();
            loop {
                changes.next(every).await;
                let Some(inner) = weak.upgrade() else { return };
                let fleet = Fleet { inner };
                let missions = fleet.inner.missions.clone();
                match blocking(move || missions.bus().since(after, 500)).await {
                    Ok(events) => {
                        for ev in events {
                            after = ev.id;
                            if ev.subject == subjects::STATUS_CHANGED
                                && let Some(id) = ev.data.get("missionId").and_then(Value::as_str)
                            {
                                fleet.release(id);
                            }
                        }
                    }
                    Err(e) => tracing::warn!("teardown: bus poll failed: {e}"),
                }
                // A safety net for events pruned before we read them: every few
                // seconds, check the records of the units we hold.
                if safety_net.elapsed() >= TEARDOWN_SAFETY_NET {
                    safety_net = Instant::now();
                    fleet.release_resting().await;
                }
            }
        })
    }

    pub(super) async fn release_resting(&self) {
        let ids: Vec<String> = self
            .inner
            .units
            .lock_unpoisoned()
            .hosted
            .keys()
            .cloned()
            .collect();
        let missions = self.inner.missions.clone();
        // One read for every unit held, not one per unit.
        let resting = blocking(move || match missions.get_many(&ids) {
            Ok(rows) => rows
                .into_iter()
                .filter(|m| m.status.is_terminal())
                .map(|m| m.id)
                .collect(),
            Err(e) => {
                tracing::warn!("teardown: reading the held missions failed: {e}");
                Vec::new()
            }
        })
        .await;
        for id in resting {
            self.release(&id);
        }
    }
}

/// How often a host looks at the bus for missions that came to rest when no commit
/// wakes it (commits are pushed: `store::changes`).
const TEARDOWN_POLL: Duration = Duration::from_millis(100);
/// How often it checks the records of the units it holds anyway.
const TEARDOWN_SAFETY_NET: Duration = Duration::from_secs(2);
