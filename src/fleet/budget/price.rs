//! What a mission cost: the agent's own figure when it reports one, else its
//! tokens at the list prices of the model it ran on (`presets/prices.toml`, which a
//! home's `prices.toml` overrides entry by entry), else a plain "no price" — never
//! a silent zero.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::mission::compute::{OracleSpend, Spend};

/// The shipped table: dated list prices of a few common models.
pub const SHIPPED: &str = crate::presets::PRICES;

/// The home's own table, beside `board.db`.
pub const HOME_FILE: &str = "prices.toml";

/// One model's prices, US dollars per million tokens, and the day they were taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Cached prompt tokens; `None`: priced as input.
    pub cached: Option<f64>,
    pub as_of: String,
}

/// Prices by model name, the home's entries over the shipped ones.
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    models: BTreeMap<String, Price>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    #[serde(default)]
    as_of: Option<String>,
    #[serde(default)]
    models: BTreeMap<String, PriceEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceEntry {
    input: f64,
    output: f64,
    #[serde(default)]
    cached: Option<f64>,
    #[serde(default)]
    as_of: Option<String>,
}

impl PriceTable {
    /// The shipped table with `home`'s `prices.toml` over it. A home file that
    /// does not parse is an error naming the file and the fix.
    pub fn load(home: &Path) -> anyhow::Result<PriceTable> {
        let mut table = PriceTable::default();
        table.add(SHIPPED, "the shipped presets/prices.toml")?;
        let path = home.join(HOME_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => table.add(&text, &path.display().to_string())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        }
        Ok(table)
    }

    /// Add (or replace) the entries of one file's text.
    pub fn add(&mut self, text: &str, origin: &str) -> anyhow::Result<()> {
        let file: PriceFile = toml::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "{origin} is not a price table: {} — each model is a [models.\"<name>\"] table with input, output (US dollars per million tokens) and optional cached and as_of",
                e.to_string().trim_end()
            )
        })?;
        for (name, e) in file.models {
            let as_of = e.as_of.or_else(|| file.as_of.clone()).ok_or_else(|| {
                anyhow::anyhow!(
                    "{origin}: model {name:?} has no as_of date — give the file an as_of = \"YYYY-MM-DD\" line or the entry its own"
                )
            })?;
            let prices = [Some(e.input), Some(e.output), e.cached];
            if prices.iter().flatten().any(|p| !p.is_finite() || *p < 0.0) {
                anyhow::bail!(
                    "{origin}: model {name:?} has a price that is not a non-negative number"
                );
            }
            self.models.insert(
                name,
                Price {
                    input: e.input,
                    output: e.output,
                    cached: e.cached,
                    as_of,
                },
            );
        }
        Ok(())
    }

    /// The price of `model`: its exact name, else the same name in another case.
    pub fn get(&self, model: &str) -> Option<&Price> {
        self.models.get(model).or_else(|| {
            self.models
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(model))
                .map(|(_, p)| p)
        })
    }
}

/// The list price of the model a unit runs on, from `home`'s price table (`None`:
/// no model named, no price for it, or a table that does not load — said in the
/// log; the mission's cost then says why on every surface).
pub fn unit_price(home: &Path, model: &str) -> Option<Price> {
    if model.trim().is_empty() {
        return None;
    }
    match PriceTable::load(home) {
        Ok(table) => table.get(model).cloned(),
        Err(e) => {
            tracing::warn!("the price table does not load, so no cost is estimated: {e}");
            None
        }
    }
}

/// Where a cost came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CostSource {
    /// The agent reported its own cumulative cost.
    Reported,
    /// Tokens × the price table.
    Estimated,
    /// Neither: no price for the model (the note says which).
    None,
}

/// A mission's cost as every surface shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cost {
    /// US dollars; `None` when there is no figure (never a silent zero).
    pub usd: Option<f64>,
    pub source: CostSource,
    pub note: String,
    /// What the oracle's model calls about the mission's questions cost, when
    /// it reviewed any (included in `usd`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<OracleCost>,
}

/// The oracle's share of a mission's cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OracleCost {
    /// US dollars; `None`: no price for its model.
    pub usd: Option<f64>,
    pub note: String,
}

impl Cost {
    /// Add what the oracle's reviews of the mission spent: into the figure when
    /// both are known; a figure that is not known stays unknown, never a zero.
    pub fn with_oracle(mut self, oracle: &OracleSpend) -> Cost {
        if oracle.calls == 0 {
            return self;
        }
        let model = crate::text::sanitize(oracle.model.as_deref().unwrap_or("(no model named)"));
        let usd = oracle.cost_micro_usd.map(|m| m as f64 / 1_000_000.0);
        let tokens = format!(
            "{} review(s), {} input + {} output tokens on {model}",
            oracle.calls,
            crate::text::count(oracle.input_tokens),
            crate::text::count(oracle.output_tokens)
        );
        let note = match usd {
            Some(usd) => format!("oracle {} estimated: {tokens}", usd_text(usd)),
            None => format!("oracle: no price for {model} ({tokens})"),
        };
        self.usd = match (self.usd, usd) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.oracle = Some(OracleCost { usd, note });
        self
    }
}

impl Cost {
    /// The text form: `$0.0123 (estimated: …)`, `no price for <model>`, with the
    /// oracle's share after a `+`.
    pub fn line(&self) -> String {
        let oracle = self
            .oracle
            .as_ref()
            .map_or(String::new(), |o| format!(" + {}", o.note));
        match self.usd {
            Some(usd) => format!("{} ({}{oracle})", usd_text(usd), self.note),
            None => format!("{}{oracle}", self.note),
        }
    }

    /// The short form a row or a status line has room for: `$0.0123 reported`,
    /// `$0.0123 est.`, `no price` — never a zero standing for "unknown".
    pub fn short(&self) -> String {
        match (self.usd, self.source) {
            (Some(usd), CostSource::Reported) if self.oracle.is_none() => {
                format!("{} reported", usd_text(usd))
            }
            (Some(usd), _) => format!("{} est.", usd_text(usd)),
            (None, _) => "no price".to_string(),
        }
    }
}

/// Dollars with enough places to tell small missions apart: cents, and four places
/// under ten cents.
pub fn usd_text(usd: f64) -> String {
    if usd != 0.0 && usd.abs() < 0.1 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// What `tokens` cost at `price`. Input tokens include the cached ones (as the
/// providers count prompt tokens); those are charged at the cached price.
pub fn tokens_usd(price: &Price, spent: &Spend) -> f64 {
    let cached = spent.cached_tokens.min(spent.input_tokens);
    let fresh = spent.input_tokens - cached;
    (fresh as f64 * price.input
        + cached as f64 * price.cached.unwrap_or(price.input)
        + spent.output_tokens as f64 * price.output)
        / 1_000_000.0
}

/// A mission's cost from its spend and the model it ran on.
pub fn cost_of(prices: &PriceTable, model: Option<&str>, spent: &Spend) -> Cost {
    if let Some(micros) = spent.reported_cost_micro_usd {
        return Cost {
            usd: Some(micros as f64 / 1_000_000.0),
            source: CostSource::Reported,
            note: "reported by the agent".into(),
            oracle: None,
        };
    }
    let Some(model) = model.filter(|m| !m.trim().is_empty()) else {
        return Cost {
            usd: None,
            source: CostSource::None,
            note: "no price: the agent named no model".into(),
            oracle: None,
        };
    };
    let model = crate::text::sanitize(model);
    match prices.get(&model) {
        Some(price) => Cost {
            usd: Some(tokens_usd(price, spent)),
            source: CostSource::Estimated,
            note: format!(
                "estimated: {} input ({} cached) + {} output tokens at {model}'s list prices of {}",
                crate::text::count(spent.input_tokens),
                crate::text::count(spent.cached_tokens.min(spent.input_tokens)),
                crate::text::count(spent.output_tokens),
                price.as_of
            ),
            oracle: None,
        },
        None => Cost {
            usd: None,
            source: CostSource::None,
            note: format!("no price for {model}"),
            oracle: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses_and_a_home_entry_wins() {
        let dir = tempfile::tempdir().unwrap();
        let shipped = PriceTable::load(dir.path()).unwrap();
        assert!(shipped.get("gpt-4o").is_some());
        std::fs::write(
            dir.path().join(HOME_FILE),
            "as_of = \"2030-01-01\"\n[models.\"gpt-4o\"]\ninput = 1.0\noutput = 2.0\n",
        )
        .unwrap();
        let table = PriceTable::load(dir.path()).unwrap();
        let p = table.get("GPT-4o").unwrap();
        assert_eq!((p.input, p.output, p.cached), (1.0, 2.0, None));
        assert_eq!(p.as_of, "2030-01-01");
    }

    #[test]
    fn a_cost_is_reported_estimated_or_says_there_is_no_price() {
        let mut table = PriceTable::default();
        table
            .add(
                "as_of = \"2030-01-01\"\n[models.m]\ninput = 2.0\noutput = 10.0\ncached = 0.5\n",
                "test",
            )
            .unwrap();
        let spent = Spend {
            input_tokens: 1_000_000,
            cached_tokens: 400_000,
            output_tokens: 100_000,
            ..Spend::default()
        };
        let c = cost_of(&table, Some("m"), &spent);
        assert_eq!(c.source, CostSource::Estimated);
        assert!((c.usd.unwrap() - (0.6 * 2.0 + 0.4 * 0.5 + 0.1 * 10.0)).abs() < 1e-9);
        let none = cost_of(&table, Some("other"), &spent);
        assert_eq!((none.usd, none.note.as_str()), (None, "no price for other"));
        let reported = Spend {
            reported_cost_micro_usd: Some(1_250_000),
            ..spent
        };
        let c = cost_of(&table, Some("other"), &reported);
        assert_eq!((c.usd, c.source), (Some(1.25), CostSource::Reported));
    }

    #[test]
    fn a_bad_home_table_names_the_fix() {
        let mut table = PriceTable::default();
        let e = table
            .add("[models.m]\ninput = 1.0\noutput = 1.0\n", "home")
            .unwrap_err()
            .to_string();
        assert!(e.contains("as_of"), "{e}");
    }
}
