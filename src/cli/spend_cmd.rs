//! `missionboard spend`: the cost rollup, formatted. The figures are `ops::spend`'s.

use super::Ctx;
use super::out::{self, out, outln};
use crate::ops::spend::{SpendLine, SpendReport, nothing_yet, parse_since, spend};
use crate::row;

pub(super) fn run(ctx: &Ctx, by: &str, since: &str, json: bool) -> anyhow::Result<i32> {
    let since_text = since.trim().to_string();
    let since = parse_since(since).map_err(anyhow::Error::msg)?;
    let report = match ctx.existing_store()? {
        Some(store) => spend(&ctx.host(&store)?, by, since)?,
        None => nothing_yet(by, since)?,
    };
    if json {
        out::json(&report)?;
        return Ok(0);
    }
    text(&report, &since_text)?;
    Ok(0)
}

fn text(report: &SpendReport, since: &str) -> anyhow::Result<()> {
    if report.groups.is_empty() {
        outln!("No missions fired in the last {since}.")?;
        return Ok(());
    }
    let mut rows = vec![row![
        report.by.to_uppercase(),
        "MISSIONS",
        "COST",
        "REPORTED",
        "ESTIMATED",
        "NO PRICE",
        "TOKENS",
        "TOOL CALLS",
        "CPU",
        "PEAK MEM"
    ]];
    for line in report.groups.iter().chain([&report.total]) {
        rows.push(cells(line));
    }
    out!("{}", crate::table::render(&rows))?;
    outln!(
        "\nMissions fired in the last {since}. REPORTED is what agents said they cost; ESTIMATED is their tokens at the list prices of the price table (presets/prices.toml, overridden by the home's prices.toml)."
    )?;
    if report.total.oracle_usd > 0.0 {
        outln!(
            "COST includes {} the oracle's model calls spent reviewing these missions' questions.",
            crate::ops::spend::usd_text(report.total.oracle_usd)
        )?;
    }
    if report.total.oracle_unpriced > 0 {
        outln!(
            "{} mission(s) had oracle reviews on a model with no price: not in COST — add it to the home's prices.toml.",
            report.total.oracle_unpriced
        )?;
    }
    outln!(
        "CPU is the user and system time of the missions' units (their whole process trees); PEAK MEM is the largest peak resident memory of one unit among them."
    )?;
    if report.total.unpriced > 0 {
        outln!(
            "{} mission(s) are not in COST: no price for {} — add the model to the home's prices.toml.",
            report.total.unpriced,
            report.total.unpriced_models.join(", ")
        )?;
    }
    Ok(())
}

fn cells(line: &SpendLine) -> Vec<String> {
    use crate::ops::spend::usd_text as usd;
    row![
        line.key,
        line.missions,
        usd(line.cost_usd),
        format!("{} ({})", usd(line.reported_usd), line.reported),
        format!("{} ({})", usd(line.estimated_usd), line.estimated),
        line.unpriced,
        crate::text::count(line.tokens),
        crate::text::count(line.tool_calls),
        crate::ops::show::cpu_text(line.cpu_ms),
        line.peak_rss_bytes
            .map_or_else(|| "-".to_string(), crate::size::text)
    ]
}
