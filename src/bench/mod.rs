//! `missionboard bench`: the figures operators trust us for, each beside the floor
//! it is measured against, from real parts — real stub children over real ACP and
//! MCP, a real SQLite file in a scratch home, the real board render path.
//!
//! Every figure group runs in its own child process (`bench --only <group>`), so one
//! group's allocations never flatter or inflate another's resident-memory figures.
//! The parent collects their rows and prints one table. Figures are reported, never
//! asserted: a missed target prints `no` and the measured value.

mod answer;
mod board;
mod fire;
mod fleet;
mod scratch;

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The figure groups, in the order they run and print.
pub const GROUPS: &[&str] = &["answer", "fire", "board", "fleet", "fleet-rss"];

/// How hard to push.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub quick: bool,
    /// Samples per latency figure.
    pub samples: usize,
    /// Missions and asks seeded for the board frame.
    pub missions: usize,
    pub asks: usize,
    /// Concurrent units in the fleet figures.
    pub units: usize,
}

impl Scale {
    pub fn new(quick: bool) -> Scale {
        if quick {
            Scale {
                quick,
                samples: 3,
                missions: 5_000,
                asks: 500,
                units: 8,
            }
        } else {
            Scale {
                quick,
                samples: 20,
                missions: 100_000,
                asks: 10_000,
                units: 64,
            }
        }
    }
}

/// One line of the table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub figure: String,
    pub measured: f64,
    pub unit: String,
    /// What the figure is measured against, in the same unit.
    pub floor: f64,
    pub floor_is: String,
    /// Cost relative to the floor (for rates: floor rate ÷ measured rate).
    pub ratio: f64,
    pub target: String,
    /// `None` when the figure has no target (reported for information).
    pub met: Option<bool>,
}

impl Row {
    /// A cost (time, bytes): ratio is measured ÷ floor.
    fn cost(figure: &str, measured: f64, unit: &str, floor: f64, floor_is: &str) -> Row {
        Row {
            figure: figure.into(),
            measured,
            unit: unit.into(),
            floor,
            floor_is: floor_is.into(),
            ratio: measured / floor.max(f64::MIN_POSITIVE),
            target: "—".into(),
            met: None,
        }
    }

    /// A rate (higher is better): ratio is floor ÷ measured, so > 1 is still "slower".
    fn rate(figure: &str, measured: f64, unit: &str, floor: f64, floor_is: &str) -> Row {
        Row {
            ratio: floor / measured.max(f64::MIN_POSITIVE),
            ..Row::cost(figure, measured, unit, floor, floor_is)
        }
    }

    fn target(mut self, text: impl Into<String>, met: bool) -> Row {
        self.target = text.into();
        self.met = Some(met);
        self
    }
}

/// The median of `samples` in milliseconds.
fn median_ms(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples
        .get(samples.len() / 2)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Run one group in this process, printing its rows as JSON lines.
pub fn run_group(group: &str, scale: Scale) -> anyhow::Result<i32> {
    let runtime = crate::runtime::multi_thread()?;
    let rows = runtime.block_on(async {
        match group {
            "answer" => answer::run(scale).await,
            "fire" => fire::run(scale).await,
            "board" => board::run(scale),
            "fleet" => fleet::run(scale).await,
            "fleet-rss" => fleet::rss(scale).await,
            // The floor of fleet-rss, run by it in a process of its own.
            "bare-rss" => fleet::bare_rss(scale).await,
            other => anyhow::bail!(
                "unknown bench group {other:?} — pick one of: {}",
                GROUPS.join(", ")
            ),
        }
    })?;
    // Units may still be winding down in the background; don't wait for them.
    runtime.shutdown_background();
    for row in rows {
        println!("{}", serde_json::to_string(&row)?);
    }
    Ok(0)
}

/// Run `group` in a child process (`bench --only <group>`) and read back its rows.
fn child_rows(group: &str, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot locate the missionboard binary: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["bench", "--only", group]);
    if scale.quick {
        cmd.arg("--quick");
    }
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run the {group} bench: {e}"))?;
    anyhow::ensure!(
        out.status.success(),
        "the {group} bench failed ({}); its error is above",
        out.status
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str::<Row>(line).map_err(|e| {
                anyhow::anyhow!("the {group} bench printed a line that is not a row ({e}): {line}")
            })
        })
        .collect()
}

/// Run every group (each in a child process) and print the table.
pub fn run_all(quick: bool, groups: &[String]) -> anyhow::Result<i32> {
    let scale = Scale::new(quick);
    println!(
        "missionboard bench{} — {} samples per latency, {} missions + {} asks on the board, {} units in the fleet, {} cores",
        if quick { " --quick" } else { "" },
        scale.samples,
        scale.missions,
        scale.asks,
        scale.units,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let chosen: Vec<&str> = if groups.is_empty() {
        GROUPS.to_vec()
    } else {
        groups.iter().map(String::as_str).collect()
    };
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for group in chosen {
        match child_rows(group, scale) {
            Ok(mut r) => rows.append(&mut r),
            Err(e) => {
                eprintln!("bench: {e:#}");
                failed.push(group.to_string());
            }
        }
    }
    print!("{}", render(&rows));
    if !failed.is_empty() {
        anyhow::bail!(
            "the {} bench group(s) failed (their errors are above); the table shows the rest",
            failed.join(", ")
        );
    }
    Ok(0)
}

fn fmt(v: f64, unit: &str) -> String {
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.digits$} {unit}")
}

/// The table: figure | measured | floor | ratio | target | met?, then what each floor is.
pub fn render(rows: &[Row]) -> String {
    let mut table = vec![crate::row![
        "FIGURE", "MEASURED", "FLOOR", "RATIO", "TARGET", "MET"
    ]];
    for r in rows {
        table.push(crate::row![
            r.figure,
            fmt(r.measured, &r.unit),
            fmt(r.floor, &r.unit),
            format!("{:.2}x", r.ratio),
            r.target,
            match r.met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "n/a",
            }
        ]);
    }
    let mut out = crate::table::render(&table);
    out.push_str("\nFloors:\n");
    for r in rows {
        out.push_str(&format!("  {}: {}\n", r.figure, r.floor_is));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_figure_floor_ratio_and_verdict() {
        let rows = vec![
            Row::cost("answer round-trip", 52.0, "ms", 0.25, "one WAL commit")
                .target("≤ 100.75 ms (3x commit + 100 ms poll)", true),
            Row::rate("fleet throughput", 10.0, "missions/s", 20.0, "bare units"),
        ];
        let text = render(&rows);
        assert_eq!(
            text,
            [
                "FIGURE             MEASURED         FLOOR            RATIO    TARGET                                 MET",
                "answer round-trip  52.0 ms          0.250 ms         208.00x  ≤ 100.75 ms (3x commit + 100 ms poll)  yes",
                "fleet throughput   10.0 missions/s  20.0 missions/s  2.00x    —                                      n/a",
                "",
                "Floors:",
                "  answer round-trip: one WAL commit",
                "  fleet throughput: bare units",
                "",
            ]
            .join("\n")
        );
    }

    #[test]
    fn the_median_is_the_middle_sample() {
        let mut s = [5, 1, 3].map(Duration::from_millis);
        assert_eq!(median_ms(&mut s), 3.0);
    }
}
