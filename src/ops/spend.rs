//! `spend`: what missions cost, rolled up by agent, envelope, label, host or day —
//! the one ledger query, priced here with the home's price table, so every surface
//! shows the same figures.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::fleet::budget::price::{self, PriceTable};
use crate::mission::compute::{ComputeLedger, SpendGroup};
use crate::ops::host::Host;

/// `--by`'s words.
pub const GROUPS: &[(&str, SpendGroup)] = &[
    ("agent", SpendGroup::Agent),
    ("envelope", SpendGroup::Envelope),
    ("label", SpendGroup::Label),
    ("host", SpendGroup::Host),
    ("day", SpendGroup::Day),
];

/// `--since`: `7d`, `12h`, `30m` (a day is 24 hours).
pub fn parse_since(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if let Some(days) = t.strip_suffix('d')
        && let Ok(n) = days.parse::<u64>()
    {
        return Ok(Duration::from_secs(n.saturating_mul(86_400)));
    }
    crate::duration::parse(t).map_err(|_| {
        format!("invalid --since {t:?}: write a number of days or a duration, e.g. 7d, 12h, 30m")
    })
}

/// Dollars as every surface prints them.
pub fn usd_text(usd: f64) -> String {
    price::usd_text(usd)
}

/// One group's rollup.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendLine {
    /// The group (`-` for missions with none; a day as `YYYY-MM-DD`).
    pub key: String,
    pub missions: u64,
    /// Reported plus estimated, in US dollars.
    pub cost_usd: f64,
    pub reported_usd: f64,
    pub estimated_usd: f64,
    /// Missions whose cost the agent reported / that were priced from the table.
    pub reported: u64,
    pub estimated: u64,
    /// Missions that spent tokens on a model with no price (not in the cost).
    pub unpriced: u64,
    pub unpriced_models: Vec<String>,
    pub tokens: u64,
    pub tool_calls: u64,
    /// What the oracle's reviews of these missions cost (in `cost_usd`), and how
    /// many missions it reviewed on a model with no price (not in it).
    pub oracle_usd: f64,
    pub oracle_unpriced: u64,
    /// The CPU time (user + system) of the missions' units, in milliseconds.
    pub cpu_ms: u64,
    /// The largest peak memory of one unit's process tree among them, in bytes
    /// (`null`: no unit of them was sampled).
    pub peak_rss_bytes: Option<u64>,
}

/// The rollup: a line per group, and their total.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendReport {
    pub by: String,
    pub since_ms: i64,
    pub groups: Vec<SpendLine>,
    pub total: SpendLine,
}

/// `--by`'s word, checked: its spelling and its grouping.
fn group(by: &str) -> anyhow::Result<(&'static str, SpendGroup)> {
    match GROUPS.iter().find(|(w, _)| *w == by) {
        Some(&(word, group)) => Ok((word, group)),
        None => {
            let words: Vec<&str> = GROUPS.iter().map(|(w, _)| *w).collect();
            anyhow::bail!(
                "cannot group spend by {:?}: --by takes one of {}",
                crate::text::sanitize(by),
                words.join(", ")
            );
        }
    }
}

fn since_ms(since: Duration) -> i64 {
    crate::clock::now_ms().saturating_sub(since.as_millis() as i64)
}

/// The rollup of a home with no store yet: nothing was spent (`--by` is still
/// checked).
pub fn nothing_yet(by: &str, since: Duration) -> anyhow::Result<SpendReport> {
    let (word, _) = group(by)?;
    Ok(SpendReport {
        by: word.to_string(),
        since_ms: since_ms(since),
        groups: Vec::new(),
        total: SpendLine {
            key: "total".into(),
            ..SpendLine::default()
        },
    })
}

/// What the missions fired in the last `since` spent, grouped by `by` (one of
/// [`GROUPS`]' words).
pub fn spend(host: &Host, by: &str, since: Duration) -> anyhow::Result<SpendReport> {
    let (word, by) = group(by)?;
    let prices = PriceTable::load(&host.paths().home)?;
    let since_ms = since_ms(since);
    let rows = ComputeLedger::new(host.store().clone()).spend_by(by, since_ms)?;
    let mut groups: BTreeMap<String, SpendLine> = BTreeMap::new();
    for row in rows {
        let key = match by {
            SpendGroup::Day => row
                .key
                .parse::<i64>()
                .map(|day| crate::clock::rfc3339(day * 86_400_000)[..10].to_string())
                .unwrap_or(row.key.clone()),
            _ if row.key.is_empty() => "-".to_string(),
            _ => crate::text::sanitize(&row.key),
        };
        let line = groups.entry(key.clone()).or_insert_with(|| SpendLine {
            key,
            ..SpendLine::default()
        });
        line.missions += row.missions;
        line.tokens += row.tokens;
        line.tool_calls += row.tool_calls;
        line.cpu_ms += row.cpu_ms;
        line.peak_rss_bytes = line.peak_rss_bytes.max(row.peak_rss_bytes);
        line.reported += row.reported;
        line.reported_usd += row.reported_micro_usd as f64 / 1_000_000.0;
        line.oracle_usd += row.oracle_micro_usd as f64 / 1_000_000.0;
        line.oracle_unpriced += row.oracle_unpriced;
        match row.model.as_deref().and_then(|m| prices.get(m)) {
            Some(p) => {
                line.estimated += row.unreported_with_tokens;
                line.estimated_usd += price::tokens_usd(p, &row.unreported);
            }
            None if row.unreported_with_tokens > 0 => {
                line.unpriced += row.unreported_with_tokens;
                let model = row
                    .model
                    .as_deref()
                    .map_or_else(|| "(no model named)".to_string(), crate::text::sanitize);
                if !line.unpriced_models.contains(&model) {
                    line.unpriced_models.push(model);
                }
            }
            None => {}
        }
    }
    let mut total = SpendLine {
        key: "total".into(),
        ..SpendLine::default()
    };
    let mut groups: Vec<SpendLine> = groups.into_values().collect();
    for g in &mut groups {
        g.cost_usd = g.reported_usd + g.estimated_usd + g.oracle_usd;
        total.oracle_usd += g.oracle_usd;
        total.oracle_unpriced += g.oracle_unpriced;
        total.missions += g.missions;
        total.cost_usd += g.cost_usd;
        total.reported_usd += g.reported_usd;
        total.estimated_usd += g.estimated_usd;
        total.reported += g.reported;
        total.estimated += g.estimated;
        total.unpriced += g.unpriced;
        for m in &g.unpriced_models {
            if !total.unpriced_models.contains(m) {
                total.unpriced_models.push(m.clone());
            }
        }
        total.tokens += g.tokens;
        total.tool_calls += g.tool_calls;
        total.cpu_ms += g.cpu_ms;
        total.peak_rss_bytes = total.peak_rss_bytes.max(g.peak_rss_bytes);
    }
    Ok(SpendReport {
        by: word.to_string(),
        since_ms,
        groups,
        total,
    })
}
