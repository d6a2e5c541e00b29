//! A unit's compute spend against its envelope's bounds, shared by its drive loop
//! (which sees every ACP update) and its permission answerer (which sees every gated
//! call). Tool calls are counted once per ACP tool-call id, whichever side saw them
//! first; tokens come from the usage the agent reports, and when it reports none,
//! from a meter over the text crossing the ACP boundary — so the bound is never inert.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::acp::UnitEvent;
use crate::envelope::policy::ComputeBounds;

/// The meter's estimate: a token per four bytes of text, the usual rough figure for
/// English prose and code.
pub const BYTES_PER_TOKEN: u64 = 4;

#[derive(Default)]
struct Spent {
    tool_calls: HashSet<String>,
    /// The largest `usage_update.used` seen (context occupancy).
    max_used: Option<u64>,
    /// The sum of end-of-turn totals, when the agent reports them.
    turn_totals: Option<u64>,
    metered_bytes: u64,
    /// Set once a bound is crossed, so the crossing is reported exactly once.
    exhausted: bool,
}

pub(super) struct Budget {
    bounds: ComputeBounds,
    spent: Mutex<Spent>,
}

impl Budget {
    pub fn new(bounds: ComputeBounds) -> Budget {
        Budget {
            bounds,
            spent: Mutex::default(),
        }
    }

    /// Count a tool call by id. Returns the stuck reason when this call crosses
    /// `maxToolCalls` (reported once; later calls return `None` but are refused by
    /// [`Budget::is_exhausted`]).
    pub fn tool_call(&self, id: &str, title: &str) -> Option<String> {
        if crate::tools::MISSION_TOOL_NAMES
            .iter()
            .any(|t| title.contains(t))
        {
            return None;
        }
        let max = self.bounds.max_tool_calls;
        let mut s = self.spent.lock().unwrap();
        let key = if id.is_empty() {
            format!("untitled-{}", s.tool_calls.len())
        } else {
            id.to_string()
        };
        s.tool_calls.insert(key);
        if max > 0 && s.tool_calls.len() as u64 > max && !s.exhausted {
            s.exhausted = true;
            return Some(format!(
                "compute bound exhausted: maxToolCalls={max} — the mission reached its envelope-gated action budget; this call and any after it are refused."
            ));
        }
        None
    }

    /// Has a bound been crossed already?
    pub fn is_exhausted(&self) -> bool {
        self.spent.lock().unwrap().exhausted
    }

    /// The text the host sends counts towards the meter.
    pub fn sent(&self, blocks: &[String]) {
        let bytes: usize = blocks.iter().map(String::len).sum();
        self.spent.lock().unwrap().metered_bytes += bytes as u64;
    }

    /// Account for one update from the unit. Returns a stuck reason when it crosses
    /// a bound.
    pub fn record(&self, ev: &UnitEvent) -> Option<String> {
        match ev {
            UnitEvent::ToolCall { id, title, .. } => {
                self.meter(title.len());
                self.tool_call(id, title)
            }
            UnitEvent::AgentText(t) | UnitEvent::Thought(t) => {
                self.meter(t.len());
                self.tokens_exhausted()
            }
            UnitEvent::ToolCallUpdate { title, .. } => {
                self.meter(title.as_deref().map_or(0, str::len));
                None
            }
            UnitEvent::Usage { used, .. } => {
                let mut s = self.spent.lock().unwrap();
                s.max_used = Some(s.max_used.unwrap_or(0).max(*used));
                drop(s);
                self.tokens_exhausted()
            }
            UnitEvent::TurnUsage(u) => {
                let mut s = self.spent.lock().unwrap();
                s.turn_totals = Some(s.turn_totals.unwrap_or(0) + u.total_tokens);
                drop(s);
                self.tokens_exhausted()
            }
            _ => None,
        }
    }

    fn meter(&self, bytes: usize) {
        self.spent.lock().unwrap().metered_bytes += bytes as u64;
    }

    /// The stuck reason when the token bound is crossed (reported once).
    pub fn tokens_exhausted(&self) -> Option<String> {
        let max = self.bounds.max_tokens;
        if max == 0 {
            return None;
        }
        let mut s = self.spent.lock().unwrap();
        if s.exhausted {
            return None;
        }
        let reported = match (s.turn_totals, s.max_used) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).max(b.unwrap_or(0))),
        };
        let (used, measure) = match reported {
            Some(u) => (u, format!("reported usage {u}")),
            None => {
                let u = s.metered_bytes / BYTES_PER_TOKEN;
                (
                    u,
                    format!(
                        "metered usage {u}, counted as bytes/4 of the text crossing the ACP boundary because the agent reports none"
                    ),
                )
            }
        };
        if used <= max {
            return None;
        }
        s.exhausted = true;
        Some(format!(
            "compute bound exhausted: maxTokens={max} ({measure}) — the mission spent its token budget."
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(calls: u64, tokens: u64) -> Budget {
        Budget::new(ComputeBounds {
            max_tool_calls: calls,
            max_tokens: tokens,
            ..Default::default()
        })
    }

    #[test]
    fn tool_calls_count_once_per_id_and_never_our_own() {
        let b = budget(2, 0);
        assert_eq!(b.tool_call("a", "read x"), None);
        assert_eq!(
            b.tool_call("a", "read x"),
            None,
            "the same id twice is one call"
        );
        assert_eq!(b.tool_call("m", "mcp__mission__mission_report"), None);
        assert_eq!(b.tool_call("b", "edit y"), None);
        let reason = b.tool_call("c", "run z").unwrap();
        assert!(
            reason.starts_with("compute bound exhausted: maxToolCalls=2 — "),
            "{reason}"
        );
        assert!(b.is_exhausted());
        assert_eq!(
            b.tool_call("d", "again"),
            None,
            "the crossing is reported once"
        );
    }

    #[test]
    fn reported_usage_wins_over_the_meter() {
        let b = budget(0, 100);
        assert_eq!(b.record(&UnitEvent::AgentText("x".repeat(100))), None);
        let r = b
            .record(&UnitEvent::Usage {
                used: 150,
                size: 1000,
                cost: None,
            })
            .unwrap();
        assert_eq!(
            r,
            "compute bound exhausted: maxTokens=100 (reported usage 150) — the mission spent its token budget."
        );
    }

    #[test]
    fn with_no_usage_the_meter_holds_the_bound() {
        let b = budget(0, 100);
        b.sent(&["p".repeat(200)]);
        let r = b.record(&UnitEvent::AgentText("y".repeat(300))).unwrap();
        assert!(
            r.starts_with(
                "compute bound exhausted: maxTokens=100 (metered usage 125, counted as bytes/4 "
            ),
            "{r}"
        );
    }
}
