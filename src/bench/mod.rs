//! `missionboard bench`: the figures operators trust us for, each beside the floor
//! it is measured against, from real parts — real stub children over real ACP and
//! MCP, a real SQLite file in a scratch home, the real board render path.
//!
//! Every figure group runs in its own child process (`bench --only <group>`), so one
//! group's allocations never flatter or inflate another's resident-memory figures.
//! The parent collects their rows and prints one table, then judges it: every floor
//! is the measured path minus our machinery, so a ratio below [`BROKEN_BELOW`] says
//! the floor is not the same work, and the run exits non-zero on one, or on a missed
//! target. A `--quick` run has too few samples to judge a ratio near 1.0 or a
//! target, so it fails only on a ratio below [`QUICK_BROKEN_BELOW`], a margin no
//! noise on a loaded machine crosses.

mod answer;
mod bare;
mod board;
mod fire;
mod fleet;
mod queue;
mod scratch;
mod spend;
mod web;

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The figure groups, in the order they run and print.
pub const GROUPS: &[&str] = &[
    "answer",
    "fire",
    "queue",
    "queue-fleet",
    "board",
    "fleet",
    "fleet-rss",
    "web",
    "spend",
];
/// How a figure measured on PostgreSQL ends (its floor is the same work, there).
const ON_POSTGRES: &str = " on PostgreSQL";
/// The groups whose cost runs through the store, run again on PostgreSQL under
/// `bench --postgres` (resident memory is the host's, whatever the store).
const STORE_GROUPS: &[&str] = &[
    "answer",
    "fire",
    "queue",
    "queue-fleet",
    "board",
    "fleet",
    "web",
    "spend",
];

/// A ratio below this is a broken floor: the floor is the same work as the figure
/// minus ours, so only noise can put the figure under it, and not by more than this.
pub const BROKEN_BELOW: f64 = 0.95;
/// What a `--quick` run (a handful of samples, on a loaded CI machine) judges
/// instead: only a floor that costs ten times its figure. A quick run on two cores
/// shared with a compiler has read one floor at 0.17x and another at 0.44x by noise
/// alone, so a finer margin would fail CI at random.
pub const QUICK_BROKEN_BELOW: f64 = 0.1;

/// The store sizes and fleet widths `bench --scale` walks.
const SCALE_MISSIONS: [usize; 3] = [10_000, 100_000, 1_000_000];
const SCALE_UNITS: [usize; 3] = [16, 64, 256];

/// How hard to push one group.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Scale {
    pub quick: bool,
    /// Samples per latency figure.
    pub samples: usize,
    /// Missions seeded in the store (and the asks pending among them, on the board).
    pub missions: usize,
    pub asks: usize,
    /// Concurrent units in the fleet figures.
    pub units: usize,
    /// The store is a throwaway database on the PostgreSQL server `bench --postgres`
    /// names, not a scratch `board.db`.
    #[serde(default)]
    pub postgres: bool,
}

impl Scale {
    pub fn new(quick: bool) -> Scale {
        if quick {
            Scale {
                quick,
                samples: 10,
                missions: 5_000,
                asks: 500,
                units: 8,
                postgres: false,
            }
        } else {
            Scale {
                quick,
                samples: 200,
                missions: 100_000,
                asks: 10_000,
                units: 64,
                postgres: false,
            }
        }
    }

    fn with_missions(self, missions: usize) -> Scale {
        Scale {
            missions,
            asks: missions / 10,
            ..self
        }
    }

    fn with_units(self, units: usize) -> Scale {
        Scale { units, ..self }
    }

    fn on_postgres(self) -> Scale {
        Scale {
            postgres: true,
            ..self
        }
    }
}

/// Median, 99th percentile and slowest of a set of samples, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub median: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    pub fn of(samples: &mut [Duration]) -> Latency {
        samples.sort();
        let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1e3);
        let n = samples.len();
        Latency {
            median: ms(samples.get(n / 2)),
            // The nearest-rank 99th percentile: with fewer than 100 samples, the slowest.
            p99: ms(samples.get((n * 99).div_ceil(100).saturating_sub(1))),
            max: ms(samples.last()),
        }
    }
}

/// One line of the table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub figure: String,
    /// The median (or the one value, for rates and sizes).
    pub measured: f64,
    /// The tail, for latencies.
    pub tail: Option<(f64, f64)>,
    pub unit: String,
    /// What the figure is measured against, in the same unit, taken in the same run.
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
            tail: None,
            unit: unit.into(),
            floor,
            floor_is: floor_is.into(),
            ratio: measured / floor.max(f64::MIN_POSITIVE),
            target: "—".into(),
            met: None,
        }
    }

    /// A latency in ms against the floor's median: the ratio is of the medians.
    fn latency(figure: &str, measured: Latency, floor: Latency, floor_is: &str) -> Row {
        Row {
            tail: Some((measured.p99, measured.max)),
            ..Row::cost(figure, measured.median, "ms", floor.median, floor_is)
        }
    }

    /// A rate (higher is better): ratio is floor ÷ measured, so > 1 is still "slower".
    fn rate(figure: &str, measured: f64, unit: &str, floor: f64, floor_is: &str) -> Row {
        Row {
            ratio: floor / measured.max(f64::MIN_POSITIVE),
            ..Row::cost(figure, measured, unit, floor, floor_is)
        }
    }

    /// A figure cheaper than its floor beyond the noise: the floor is not the
    /// measured path minus our machinery (it does work the path does not, or its
    /// clock runs elsewhere), so the figure cannot be judged against it.
    pub fn broken_floor(&self) -> bool {
        self.ratio < BROKEN_BELOW
    }

    /// A target, never met over a broken floor.
    fn target(mut self, text: impl Into<String>, met: bool) -> Row {
        self.target = text.into();
        self.met = Some(met && !self.broken_floor());
        self
    }

    /// A latency figure's target: bounds on its ratio to the floor, its median and
    /// its p99 (any of them).
    fn within(self, ratio: Option<f64>, median_ms: Option<f64>, p99_ms: Option<f64>) -> Row {
        let p99 = self.tail.map_or(self.measured, |(p99, _)| p99);
        let mut text = Vec::new();
        let mut met = true;
        if let Some(r) = ratio {
            text.push(format!("≤ {r}x floor"));
            met &= self.ratio <= r;
        }
        if let Some(m) = median_ms {
            text.push(format!("median ≤ {m} ms"));
            met &= self.measured <= m;
        }
        if let Some(p) = p99_ms {
            text.push(format!("p99 ≤ {p} ms"));
            met &= p99 <= p;
        }
        let text = text.join(", ");
        self.target(text, met)
    }
}

/// What fails a run: in a full run, a broken floor or a missed target; in a
/// `--quick` run, only a ratio below [`QUICK_BROKEN_BELOW`]. Each as the line the
/// run ends with.
pub fn verdicts(rows: &[Row], quick: bool) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            if quick {
                (r.ratio < QUICK_BROKEN_BELOW).then(|| {
                    format!(
                        "bench: broken floor: {} is {:.2}x its floor (a --quick run fails below {QUICK_BROKEN_BELOW}x)",
                        r.figure, r.ratio
                    )
                })
            } else if r.broken_floor() {
                Some(format!(
                    "bench: broken floor: {} is {:.2}x its floor (below {BROKEN_BELOW}x)",
                    r.figure, r.ratio
                ))
            } else if r.met == Some(false) {
                Some(format!(
                    "bench: target missed: {} ({}, {:.2}x floor)",
                    r.figure, r.target, r.ratio
                ))
            } else {
                None
            }
        })
        .collect()
}

/// Run one group in this process at `scale`, printing its rows as JSON lines.
pub fn run_group(group: &str, scale: Scale) -> anyhow::Result<i32> {
    let runtime = crate::runtime::multi_thread()?;
    let rows = runtime.block_on(async {
        match group {
            "answer" => answer::run(scale).await,
            "fire" => fire::run(scale).await,
            "queue" => queue::run(scale).await,
            "queue-fleet" => queue::throughput(scale).await,
            "board" => board::run(scale).await,
            "fleet" => fleet::run(scale).await,
            "fleet-rss" => fleet::rss(scale).await,
            "web" => web::run(scale).await,
            "spend" => spend::run(scale).await,
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
    for mut row in rows {
        if scale.postgres {
            row.figure.push_str(ON_POSTGRES);
        }
        println!("{}", serde_json::to_string(&row)?);
    }
    Ok(0)
}

/// The scale a child group runs at, as `bench --only <group> --at <json>` passes it.
pub fn parse_scale(quick: bool, at: Option<&str>) -> anyhow::Result<Scale> {
    match at {
        None => Ok(Scale::new(quick)),
        Some(json) => serde_json::from_str(json)
            .map_err(|e| anyhow::anyhow!("bench --at takes the scale a parent bench passes ({e})")),
    }
}

/// Run `group` in a child process (`bench --only <group> --at <scale>`) and read back
/// its rows. `postgres` is the admin URL a PostgreSQL group makes its database through
/// (the child's own children inherit it).
fn child_rows(group: &str, scale: Scale, postgres: Option<&str>) -> anyhow::Result<Vec<Row>> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot locate the missionboard binary: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "bench",
        "--only",
        group,
        "--at",
        &serde_json::to_string(&scale)?,
    ]);
    if let Some(url) = postgres {
        cmd.env(scratch::POSTGRES_ENV, url);
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

/// The groups of one run and the scale each runs at: one pass, or (`--scale`) the
/// store-size figures at each of [`SCALE_MISSIONS`] and the fleet figures at each of
/// [`SCALE_UNITS`]; with `postgres`, each store-bound group's steps again on it,
/// right after SQLite's.
fn plan(scale: Scale, curves: bool, postgres: bool, chosen: &[&str]) -> Vec<(String, Scale)> {
    let mut runs = Vec::new();
    for &group in chosen {
        let steps: Vec<Scale> = match group {
            _ if !curves => vec![scale],
            "answer" | "board" | "spend" => SCALE_MISSIONS.map(|m| scale.with_missions(m)).to_vec(),
            "fleet" | "fleet-rss" | "queue-fleet" => {
                SCALE_UNITS.map(|u| scale.with_units(u)).to_vec()
            }
            _ => vec![scale],
        };
        let on_postgres: Vec<Scale> = if postgres && STORE_GROUPS.contains(&group) {
            steps.iter().map(|s| s.on_postgres()).collect()
        } else {
            Vec::new()
        };
        runs.extend(
            steps
                .into_iter()
                .chain(on_postgres)
                .map(|s| (group.to_string(), s)),
        );
    }
    runs
}

/// Run every group (each in a child process) and print the table; with `postgres`
/// (an admin URL: it must be allowed to CREATE DATABASE), the store-bound groups
/// again on that server, each in a throwaway database of its own.
pub fn run_all(
    quick: bool,
    curves: bool,
    groups: &[String],
    postgres: Option<&str>,
) -> anyhow::Result<i32> {
    let scale = Scale::new(quick);
    if let Some(url) = postgres {
        check_postgres(url)?;
    }
    println!(
        "missionboard bench{}{}{} — {} samples per latency, {} missions + {} asks in the store, {} units in the fleet{}, {} cores",
        if quick { " --quick" } else { "" },
        if curves { " --scale" } else { "" },
        postgres.map_or(String::new(), |url| format!(
            " --postgres {}",
            crate::store::pg_connect::redact(url)
        )),
        scale.samples,
        if curves {
            "10k/100k/1M".to_string()
        } else {
            scale.missions.to_string()
        },
        if curves {
            "a tenth".to_string()
        } else {
            scale.asks.to_string()
        },
        if curves {
            "16/64/256".to_string()
        } else {
            scale.units.to_string()
        },
        if crate::store::Changes::of(&crate::store::Location::File(
            std::env::temp_dir().join("board.db")
        ))
        .pushed()
        {
            ", commits pushed (inotify)"
        } else {
            ", commits polled (no inotify)"
        },
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let chosen: Vec<&str> = if groups.is_empty() {
        GROUPS.to_vec()
    } else {
        groups.iter().map(String::as_str).collect()
    };
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for (group, at) in plan(scale, curves, postgres.is_some(), &chosen) {
        match child_rows(&group, at, postgres) {
            Ok(mut r) => rows.append(&mut r),
            Err(e) => {
                eprintln!("bench: {e:#}");
                failed.push(group);
            }
        }
    }
    print!("{}", render(&rows));
    if !failed.is_empty() {
        failed.dedup();
        anyhow::bail!(
            "the {} bench group(s) failed (their errors are above); the table shows the rest",
            failed.join(", ")
        );
    }
    let verdicts = verdicts(&rows, quick);
    if quick {
        println!(
            "--quick judges only broken floors below {QUICK_BROKEN_BELOW}x: its samples are too few to judge a ratio near 1 or a target"
        );
    }
    for v in &verdicts {
        eprintln!("{v}");
    }
    Ok(if verdicts.is_empty() { 0 } else { 1 })
}

/// Refuse a `--postgres` URL that is not one, or names a server that cannot be reached,
/// before any group runs.
fn check_postgres(url: &str) -> anyhow::Result<()> {
    let shown = crate::store::pg_connect::redact(url);
    match crate::store::Location::parse(url, std::path::Path::new("board.db")) {
        Ok(crate::store::Location::Postgres(_)) => {}
        _ => anyhow::bail!(
            "bench --postgres takes a PostgreSQL admin URL (postgres://user@host:port/postgres), not {shown:?}"
        ),
    }
    crate::store::postgres::PgSession::connect(url).map_err(|e| {
        anyhow::anyhow!(
            "bench --postgres: cannot reach {shown} ({e}) — check that the server is up and the URL's host, port, user and password"
        )
    })?;
    Ok(())
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

/// The table: figure | median | p99 | max | floor | ratio | target | met?, then what
/// each floor is (once per distinct floor).
pub fn render(rows: &[Row]) -> String {
    let mut table = vec![crate::row![
        "FIGURE", "MEDIAN", "P99", "MAX", "FLOOR", "RATIO", "TARGET", "MET"
    ]];
    for r in rows {
        let (p99, max) = match r.tail {
            Some((p99, max)) => (fmt(p99, &r.unit), fmt(max, &r.unit)),
            None => ("—".to_string(), "—".to_string()),
        };
        table.push(crate::row![
            r.figure,
            fmt(r.measured, &r.unit),
            p99,
            max,
            fmt(r.floor, &r.unit),
            if r.broken_floor() {
                format!("{:.2}x (broken floor)", r.ratio)
            } else {
                format!("{:.2}x", r.ratio)
            },
            r.target,
            match r.met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "n/a",
            }
        ]);
    }
    let mut out = crate::table::render(&table);
    out.push_str("\nFloors (each measured in the same run):\n");
    let mut told: Vec<&str> = Vec::new();
    for r in rows {
        if !told.contains(&r.floor_is.as_str()) {
            told.push(&r.floor_is);
            out.push_str(&format!("  {}: {}\n", r.figure, r.floor_is));
        }
    }
    if rows.iter().any(|r| r.figure.ends_with(ON_POSTGRES)) {
        out.push_str(&format!(
            "  each figure{ON_POSTGRES}: its floor above, measured on the same PostgreSQL server (the bare commit and reads there)\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_below_its_floor_is_printed_as_a_broken_floor_and_not_met() {
        let fast = Latency {
            median: 0.6,
            p99: 0.9,
            max: 1.0,
        };
        let floor = Latency {
            median: 1.0,
            p99: 1.0,
            max: 1.0,
        };
        let row = Row::latency("answer", fast, floor, "bare server").within(Some(1.5), None, None);
        assert!(row.broken_floor());
        assert_eq!(row.met, Some(false));
        let text = render(&[row]);
        assert_eq!(
            text.lines().nth(1),
            Some(
                "answer  0.600 ms  0.900 ms  1.00 ms  1.00 ms  0.60x (broken floor)  ≤ 1.5x floor  NO"
            )
        );
        // Every floor is its figure's work minus ours: a rate faster than its floor
        // breaks it too, and noise inside the margin does not.
        assert!(Row::rate("fleet", 30.0, "missions/s", 20.0, "bare units").broken_floor());
        assert!(!Row::rate("fleet", 20.5, "missions/s", 20.0, "bare units").broken_floor());
    }

    #[test]
    fn a_full_run_fails_on_a_broken_floor_or_a_missed_target_and_a_quick_one_only_past_its_margin()
    {
        let l = |median| Latency {
            median,
            p99: median,
            max: median,
        };
        let rows = vec![
            Row::latency("fine", l(1.2), l(1.0), "f").within(Some(1.5), None, None),
            Row::latency("noisy", l(0.97), l(1.0), "f").within(Some(1.5), None, None),
            Row::latency("below", l(0.7), l(1.0), "f").within(Some(1.5), None, None),
            Row::latency("slow", l(2.0), l(1.0), "f").within(Some(1.5), None, None),
            Row::latency("no target", l(5.0), l(1.0), "f"),
            Row::rate("far below", 250.0, "missions/s", 20.0, "f"),
            Row::rate("noise", 50.0, "missions/s", 20.0, "f"),
        ];
        assert_eq!(
            verdicts(&rows, false),
            [
                "bench: broken floor: below is 0.70x its floor (below 0.95x)",
                "bench: target missed: slow (≤ 1.5x floor, 2.00x floor)",
                "bench: broken floor: far below is 0.08x its floor (below 0.95x)",
                "bench: broken floor: noise is 0.40x its floor (below 0.95x)",
            ]
        );
        assert_eq!(
            verdicts(&rows, true),
            ["bench: broken floor: far below is 0.08x its floor (a --quick run fails below 0.1x)"]
        );
    }

    #[test]
    fn the_table_names_every_figure_its_tail_floor_ratio_and_verdict() {
        let answer = Latency {
            median: 1.0,
            p99: 4.0,
            max: 5.0,
        };
        let floor = Latency {
            median: 0.8,
            p99: 1.0,
            max: 1.0,
        };
        let rows = vec![
            Row::latency("answer", answer, floor, "bare server").within(
                Some(1.5),
                Some(2.0),
                Some(10.0),
            ),
            Row::latency("answer again", answer, floor, "bare server").within(
                Some(1.2),
                None,
                None,
            ),
            Row::rate("fleet", 10.0, "missions/s", 20.0, "bare units"),
        ];
        let text = render(&rows);
        assert_eq!(
            text,
            [
                "FIGURE        MEDIAN           P99      MAX      FLOOR            RATIO  TARGET                                    MET",
                "answer        1.00 ms          4.00 ms  5.00 ms  0.800 ms         1.25x  ≤ 1.5x floor, median ≤ 2 ms, p99 ≤ 10 ms  yes",
                "answer again  1.00 ms          4.00 ms  5.00 ms  0.800 ms         1.25x  ≤ 1.2x floor                              NO",
                "fleet         10.0 missions/s  —        —        20.0 missions/s  2.00x  —                                         n/a",
                "",
                "Floors (each measured in the same run):",
                "  answer: bare server",
                "  fleet: bare units",
                "",
            ]
            .join("\n")
        );
    }

    #[test]
    fn figures_on_postgres_share_their_floors_text_and_say_where_it_was_measured() {
        let l = Latency {
            median: 1.0,
            p99: 1.0,
            max: 1.0,
        };
        let rows = vec![
            Row::latency("answer", l, l, "bare server"),
            Row::latency(&format!("answer{ON_POSTGRES}"), l, l, "bare server"),
        ];
        let text = render(&rows);
        let floors: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("Floors"))
            .skip(1)
            .collect();
        assert_eq!(
            floors,
            [
                "  answer: bare server",
                "  each figure on PostgreSQL: its floor above, measured on the same PostgreSQL server (the bare commit and reads there)",
            ]
        );
    }

    #[test]
    fn a_latency_is_its_median_nearest_rank_p99_and_slowest() {
        let mut few = [5, 1, 3].map(Duration::from_millis);
        assert_eq!(
            Latency::of(&mut few),
            Latency {
                median: 3.0,
                p99: 5.0,
                max: 5.0
            }
        );
        let mut many: Vec<Duration> = (1..=200).map(Duration::from_millis).collect();
        let l = Latency::of(&mut many);
        assert_eq!((l.median, l.p99, l.max), (101.0, 198.0, 200.0));
    }

    #[test]
    fn scale_curves_walk_store_sizes_and_fleet_widths() {
        let runs = plan(Scale::new(false), true, false, &["board", "fire", "fleet"]);
        let seen: Vec<(String, usize, usize)> = runs
            .iter()
            .map(|(g, s)| (g.clone(), s.missions, s.units))
            .collect();
        assert_eq!(
            seen,
            [
                ("board".into(), 10_000, 64),
                ("board".into(), 100_000, 64),
                ("board".into(), 1_000_000, 64),
                ("fire".into(), 100_000, 64),
                ("fleet".into(), 100_000, 16),
                ("fleet".into(), 100_000, 64),
                ("fleet".into(), 100_000, 256),
            ]
        );
    }

    #[test]
    fn postgres_runs_each_store_bound_group_again_right_after_sqlite() {
        let runs = plan(
            Scale::new(true),
            false,
            true,
            &["answer", "fleet-rss", "board"],
        );
        let seen: Vec<(&str, bool)> = runs.iter().map(|(g, s)| (g.as_str(), s.postgres)).collect();
        assert_eq!(
            seen,
            [
                ("answer", false),
                ("answer", true),
                ("fleet-rss", false),
                ("board", false),
                ("board", true),
            ]
        );
    }
}
