//! What a host's units use, and memory-aware admission.
//!
//! One sampler per fleet (a task, not a thread per unit) reads `/proc` every
//! [`SAMPLE_EVERY`] while the fleet holds units: one pass over `/proc/*/stat` gives
//! every process's parent, CPU time and resident set, and each unit's tree is walked
//! from its root — the unit's supervisor, a child subreaper, so every descendant of
//! the agent (a double fork, a `setsid`) stays below it. A unit's figures are the
//! sum over its tree: its resident memory now (its peak kept), and the CPU time
//! (user + system) of its processes, those they reaped included. They reach the
//! mission's compute record every [`RECORD_EVERY`] and when the unit ends, every unit
//! in one transaction.
//!
//! Admission (`fleet-max-memory`): a unit starts only while what the host's units
//! hold — each unit's measured RSS, or its agent's expected peak while it is below
//! it (a unit still starting has measured nothing) — plus the new unit's expected
//! peak fits the bound. The expected peak is the p90 of the agent's recorded peaks,
//! else its declared `expected_rss`, else [`DEFAULT_EXPECTED_RSS`]. One rule,
//! [`Gauge::hold`], for a direct fire (refused naming the figures) and for a
//! `missionboard host` claiming from the queue (the mission waits there).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::mission::compute::{ComputeLedger, ResourceSample};
use crate::store::{Store, blocking};
use crate::sync::LockUnpoisoned;

/// How often the sampler reads `/proc` while units run.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// How often sampled figures are written to the record while units run.
pub const RECORD_EVERY: Duration = Duration::from_secs(10);
/// The expected peak of an agent that declares none and has no recorded peak.
pub const DEFAULT_EXPECTED_RSS: u64 = 256 << 20;
/// How many of an agent's newest recorded peaks its expected peak is learned from.
const LEARN_FROM: usize = 50;

// ---- /proc ----

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcStat {
    pub ppid: i32,
    /// utime + stime + cutime + cstime, in clock ticks: its own CPU time and that of
    /// the children it reaped.
    pub cpu_ticks: u64,
    /// Resident pages.
    pub rss_pages: u64,
}

/// Parse one `/proc/<pid>/stat` line: `pid (comm) state ppid … utime stime cutime
/// cstime … rss …`. The command name may hold anything (spaces, parentheses), so the
/// fields are read after its last parenthesis.
pub fn parse_stat(text: &str) -> Option<(i32, ProcStat)> {
    let (head, tail) = text.rsplit_once(')')?;
    let pid = head.split_once('(')?.0.trim().parse().ok()?;
    // Field 3 (state) is the first after the name: field N is the (N - 3)th.
    let mut fields = tail.split_ascii_whitespace();
    let mut next = |skip: usize| fields.nth(skip)?.parse::<u64>().ok();
    let ppid = i32::try_from(next(1)?).ok()?;
    // utime, stime, cutime, cstime: fields 14 to 17, after ppid (field 4).
    let cpu_ticks = next(9)? + next(0)? + next(0)? + next(0)?;
    // rss: field 24.
    let rss_pages = next(6)?;
    Some((
        pid,
        ProcStat {
            ppid,
            cpu_ticks,
            rss_pages,
        },
    ))
}

/// Every process on the machine, by pid: one read of `/proc/<pid>/stat` each, into
/// one buffer (the sampler runs this every second).
pub fn scan_proc() -> HashMap<i32, ProcStat> {
    use std::fmt::Write as _;
    use std::io::Read as _;
    let mut table = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return table;
    };
    let (mut path, mut text) = (String::with_capacity(24), String::with_capacity(512));
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        path.clear();
        let _ = write!(path, "/proc/{pid}/stat");
        text.clear();
        // A process that ended since the listing is simply not in the table.
        if std::fs::File::open(&path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .is_ok()
            && let Some((pid, stat)) = parse_stat(&text)
        {
            table.insert(pid, stat);
        }
    }
    table
}

/// What one process tree uses right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeUsage {
    pub rss_bytes: u64,
    pub cpu_ms: u64,
}

/// The tree of each root in `roots`, summed from one scan (`None`: the root is gone).
pub fn tree_usage(roots: &[i32], table: &HashMap<i32, ProcStat>) -> Vec<Option<TreeUsage>> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, stat) in table {
        children.entry(stat.ppid).or_default().push(pid);
    }
    let (page, tick) = machine_units();
    roots
        .iter()
        .map(|&root| {
            table.get(&root)?;
            let (mut pages, mut ticks) = (0u64, 0u64);
            let mut stack = vec![root];
            // A pid seen twice would be a cycle in a table read while it changed.
            let mut seen = std::collections::HashSet::new();
            while let Some(pid) = stack.pop() {
                if !seen.insert(pid) {
                    continue;
                }
                if let Some(stat) = table.get(&pid) {
                    pages += stat.rss_pages;
                    ticks += stat.cpu_ticks;
                }
                if let Some(kids) = children.get(&pid) {
                    stack.extend(kids.iter().copied().filter(|k| *k != pid));
                }
            }
            Some(TreeUsage {
                rss_bytes: pages * page,
                cpu_ms: ticks * 1000 / tick,
            })
        })
        .collect()
}

/// The page size in bytes and the clock ticks per second `/proc` counts in.
fn machine_units() -> (u64, u64) {
    // SAFETY: sysconf reads a constant of the running system.
    let (page, tick) = unsafe {
        (
            libc::sysconf(libc::_SC_PAGESIZE),
            libc::sysconf(libc::_SC_CLK_TCK),
        )
    };
    (
        u64::try_from(page).ok().filter(|p| *p > 0).unwrap_or(4096),
        u64::try_from(tick).ok().filter(|t| *t > 0).unwrap_or(100),
    )
}

/// The 90th percentile of `values` (nearest rank), `None` for none.
pub fn p90(values: &[u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = (sorted.len() * 9).div_ceil(10).max(1);
    Some(sorted[rank - 1])
}

// ---- expected peaks ----

/// Where an agent's expected peak comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectedFrom {
    /// The p90 of this many recorded peaks of its missions.
    Learned(usize),
    /// Its declaration's (or its catalogue entry's) `expected_rss`.
    Declared,
    /// Neither: [`DEFAULT_EXPECTED_RSS`].
    Default,
}

/// The peak a unit of an agent is expected to reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    pub bytes: u64,
    pub from: ExpectedFrom,
}

impl Expected {
    /// `400M (the p90 of its 12 recorded peaks)`.
    pub fn describe(&self) -> String {
        let from = match self.from {
            ExpectedFrom::Learned(n) => format!(
                "the p90 of its {}",
                crate::text::counted(n as u64, "recorded peak", "recorded peaks")
            ),
            ExpectedFrom::Declared => "its declared expected_rss".to_string(),
            ExpectedFrom::Default => "the default for an agent with no expected_rss".to_string(),
        };
        format!("{} ({from})", crate::size::text(self.bytes))
    }
}

/// What a unit of `agent` is expected to reach: learned from its missions' recorded
/// peaks, else declared, else the default. Blocking: a store read.
pub fn expected_rss(store: &Store, agent: &crate::agents::Agent) -> Expected {
    let peaks = ComputeLedger::new(store.clone())
        .recorded_peaks(&agent.name, LEARN_FROM)
        .unwrap_or_else(|e| {
            tracing::warn!(agent = %agent.name, "could not read the agent's recorded peaks: {e}");
            Vec::new()
        });
    if let Some(bytes) = p90(&peaks) {
        return Expected {
            bytes,
            from: ExpectedFrom::Learned(peaks.len()),
        };
    }
    // An agents.toml seeded before the catalogue knew the figure: its entry's.
    let declared = agent.expected_rss.or_else(|| {
        crate::agents::catalogue::get(&agent.name)
            .filter(|c| c.command == agent.command)
            .and_then(|c| c.expected_rss)
    });
    match declared {
        Some(bytes) => Expected {
            bytes,
            from: ExpectedFrom::Declared,
        },
        None => Expected {
            bytes: DEFAULT_EXPECTED_RSS,
            from: ExpectedFrom::Default,
        },
    }
}

// ---- the gauge ----

/// A fire refused, or a queued mission held back, by `fleet-max-memory`: the figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRefused {
    /// What the host's units hold (measured, or expected while below it).
    pub in_use: u64,
    pub units: usize,
    pub agent: String,
    pub expected: Expected,
    pub budget: u64,
}

impl MemoryRefused {
    /// `1.2G in use by 3 units + 400M expected for "qwen" (…) exceeds fleet-max-memory=1.5G`.
    pub fn figures(&self) -> String {
        format!(
            "{} in use by {} + {} expected for {:?} ({}) exceeds fleet-max-memory={}",
            crate::size::text(self.in_use),
            crate::text::counted(self.units as u64, "unit", "units"),
            crate::size::text(self.expected.bytes),
            crate::text::sanitize(&self.agent),
            self.expected.describe(),
            crate::size::text(self.budget)
        )
    }
}

impl std::fmt::Display for MemoryRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "conflict: fleet admission refused: {}. Wait for a unit to conclude or stop one, fire it with --queue to wait for room on a `missionboard host`, or raise the bound: `missionboard config set fleet-max-memory <size>` (off = no bound).",
            self.figures()
        )
    }
}

impl std::error::Error for MemoryRefused {}

/// One unit (or a unit about to start) as the gauge counts it.
#[derive(Debug, Clone, Default)]
struct Tracked {
    expected: u64,
    /// Its supervisor, once started.
    root: Option<i32>,
    rss: u64,
    peak: u64,
    cpu_ms: u64,
    /// What the record last heard: the peak, and the CPU time so far.
    recorded_peak: u64,
    recorded_cpu_ms: u64,
}

impl Tracked {
    fn held(&self) -> u64 {
        self.rss.max(self.expected)
    }

    /// Its figures since the record last heard, if they moved.
    fn unrecorded(&mut self, mission_id: &str) -> Option<ResourceSample> {
        if self.root.is_none()
            || (self.peak <= self.recorded_peak && self.cpu_ms <= self.recorded_cpu_ms)
        {
            return None;
        }
        let sample = ResourceSample {
            mission_id: mission_id.to_string(),
            peak_rss_bytes: self.peak,
            cpu_ms_since: self.cpu_ms.saturating_sub(self.recorded_cpu_ms),
        };
        self.recorded_peak = self.peak;
        self.recorded_cpu_ms = self.recorded_cpu_ms.max(self.cpu_ms);
        Some(sample)
    }
}

/// A host's units as memory sees them: each one's tree, sampled, and the bound.
pub(super) struct Gauge {
    /// `fleet-max-memory`, read when the fleet was built.
    pub budget: Option<u64>,
    units: Mutex<HashMap<String, Tracked>>,
    sampling: std::sync::atomic::AtomicBool,
    /// Wakes the sampler for a round at once: a unit just started is sampled before
    /// it can end, however short its run.
    wake: Arc<tokio::sync::Notify>,
}

/// What a host's memory looks like right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryLoad {
    /// The units' measured resident memory.
    pub in_use: u64,
    /// `fleet-max-memory`, when set.
    pub budget: Option<u64>,
}

impl Gauge {
    pub fn new(budget: Option<u64>) -> Gauge {
        Gauge {
            budget,
            units: Mutex::default(),
            sampling: std::sync::atomic::AtomicBool::new(false),
            wake: Arc::new(tokio::sync::Notify::new()),
        }
    }

    pub fn load(&self) -> MemoryLoad {
        MemoryLoad {
            in_use: self.units.lock_unpoisoned().values().map(|t| t.rss).sum(),
            budget: self.budget,
        }
    }

    /// Admit a unit of `agent` for `mission_id` under the bound: its expected peak is
    /// held for it until it starts (and counted while its tree stays below it). A
    /// mission already held (claimed from the queue, then started) is admitted again.
    pub fn hold(
        &self,
        mission_id: &str,
        agent: &str,
        expected: Expected,
    ) -> Result<(), MemoryRefused> {
        let mut units = self.units.lock_unpoisoned();
        if units.contains_key(mission_id) {
            return Ok(());
        }
        if let Some(budget) = self.budget {
            let in_use: u64 = units.values().map(Tracked::held).sum();
            if in_use.saturating_add(expected.bytes) > budget {
                return Err(MemoryRefused {
                    in_use,
                    units: units.len(),
                    agent: agent.to_string(),
                    expected,
                    budget,
                });
            }
        }
        units.insert(
            mission_id.to_string(),
            Tracked {
                expected: expected.bytes,
                ..Tracked::default()
            },
        );
        Ok(())
    }

    /// A held mission whose unit never started: its hold is given back.
    pub fn release_unstarted(&self, mission_id: &str) {
        let mut units = self.units.lock_unpoisoned();
        if units.get(mission_id).is_some_and(|t| t.root.is_none()) {
            units.remove(mission_id);
        }
    }

    /// The unit of `mission_id` runs under the supervisor `root` (a resumed run, never
    /// held, is counted from here by its measured memory alone).
    fn started(&self, mission_id: &str, root: i32) {
        self.units
            .lock_unpoisoned()
            .entry(mission_id.to_string())
            .or_default()
            .root = Some(root);
    }

    fn roots(&self) -> Vec<(String, i32)> {
        self.units
            .lock_unpoisoned()
            .iter()
            .filter_map(|(id, t)| Some((id.clone(), t.root?)))
            .collect()
    }

    fn update(&self, sampled: Vec<(String, TreeUsage)>) {
        let mut units = self.units.lock_unpoisoned();
        for (id, usage) in sampled {
            if let Some(t) = units.get_mut(&id) {
                t.rss = usage.rss_bytes;
                t.peak = t.peak.max(usage.rss_bytes);
                t.cpu_ms = t.cpu_ms.max(usage.cpu_ms);
            }
        }
    }

    fn unrecorded(&self) -> Vec<ResourceSample> {
        self.units
            .lock_unpoisoned()
            .iter_mut()
            .filter_map(|(id, t)| t.unrecorded(id))
            .collect()
    }

    /// The unit of `mission_id` ended: its last figures, and its entry gone.
    fn ended(&self, mission_id: &str) -> Option<ResourceSample> {
        self.units
            .lock_unpoisoned()
            .remove(mission_id)
            .and_then(|mut t| t.unrecorded(mission_id))
    }
}

/// Sample every unit's tree once, from one scan of `/proc`.
fn sample(roots: &[(String, i32)]) -> Vec<(String, TreeUsage)> {
    let table = scan_proc();
    let pids: Vec<i32> = roots.iter().map(|(_, pid)| *pid).collect();
    roots
        .iter()
        .zip(tree_usage(&pids, &table))
        .filter_map(|((id, _), usage)| Some((id.clone(), usage?)))
        .collect()
}

impl super::Fleet {
    /// The memory the units of this host use now, and the bound.
    pub fn memory_load(&self) -> MemoryLoad {
        self.inner.gauge.load()
    }

    /// `fleet-max-memory` as this fleet read it.
    pub fn memory_budget(&self) -> Option<u64> {
        self.inner.gauge.budget
    }

    /// What a unit of the agent named `agent` is expected to reach here (an agent
    /// this host cannot resolve is expected at the default). Blocking: store reads.
    pub fn expected_rss_of(&self, agent: &str) -> Expected {
        match self.resolve_agent(agent) {
            Ok(a) => expected_rss(self.inner.missions.store(), &a),
            Err(_) => Expected {
                bytes: DEFAULT_EXPECTED_RSS,
                from: ExpectedFrom::Default,
            },
        }
    }

    /// Hold memory for a queued mission this host is about to claim (see
    /// [`Gauge::hold`]); its start takes the hold over.
    pub fn hold_memory(
        &self,
        mission_id: &str,
        agent: &str,
        expected: Expected,
    ) -> Result<(), MemoryRefused> {
        self.inner.gauge.hold(mission_id, agent, expected)
    }

    /// Give back the hold of a mission whose unit did not start.
    pub fn release_memory(&self, mission_id: &str) {
        self.inner.gauge.release_unstarted(mission_id);
    }

    /// A hosted unit's tree is sampled from here on (the sampler starts with the
    /// first unit).
    pub(super) fn track_unit(&self, mission_id: &str, root: u32) {
        let Ok(root) = i32::try_from(root) else {
            return;
        };
        self.inner.gauge.started(mission_id, root);
        if !self
            .inner
            .gauge
            .sampling
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            tokio::spawn(run_sampler(
                Arc::downgrade(&self.inner),
                self.inner.gauge.wake.clone(),
            ));
        }
        self.inner.gauge.wake.notify_one();
    }

    /// A hosted unit ended: its last figures go to its record.
    pub(super) async fn untrack_unit(&self, mission_id: &str) {
        let Some(last) = self.inner.gauge.ended(mission_id) else {
            return;
        };
        let ledger = ComputeLedger::new(self.inner.missions.store().clone());
        if let Err(e) = blocking(move || ledger.record_resources(&[last])).await {
            tracing::warn!(mission = %mission_id, "could not record the unit's resources: {e}");
        }
    }
}

/// The fleet's one sampler: while the fleet lives, each round (every
/// [`SAMPLE_EVERY`], and at once when a unit starts) scans `/proc` once for every
/// unit it holds (nothing when it holds none) and, every [`RECORD_EVERY`],
/// records what moved in one transaction.
async fn run_sampler(fleet: Weak<super::Inner>, wake: Arc<tokio::sync::Notify>) {
    let mut recorded = Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(SAMPLE_EVERY) => {}
            _ = wake.notified() => {}
        }
        let Some(inner) = fleet.upgrade() else {
            return;
        };
        let roots = inner.gauge.roots();
        if roots.is_empty() {
            continue;
        }
        let sampled = tokio::task::spawn_blocking(move || sample(&roots))
            .await
            .unwrap_or_default();
        inner.gauge.update(sampled);
        if recorded.elapsed() >= RECORD_EVERY {
            recorded = Instant::now();
            let moved = inner.gauge.unrecorded();
            let ledger = ComputeLedger::new(inner.missions.store().clone());
            drop(inner);
            if let Err(e) = blocking(move || ledger.record_resources(&moved)).await {
                tracing::warn!("could not record the units' resources: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_after_the_command_name_whatever_it_holds() {
        let line = "4242 (node (worker) 1) S 4200 4242 4242 0 -1 4194560 1200 0 0 0 150 30 7 3 20 0 11 0 123456 987654321 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(
            parse_stat(line),
            Some((
                4242,
                ProcStat {
                    ppid: 4200,
                    cpu_ticks: 150 + 30 + 7 + 3,
                    rss_pages: 2560
                }
            ))
        );
        assert_eq!(parse_stat("4242 (cut short) S 1 2"), None);
        assert_eq!(parse_stat("no parenthesis at all"), None);
    }

    #[test]
    fn this_process_reads_from_proc() {
        let me = std::process::id() as i32;
        let table = scan_proc();
        let stat = table.get(&me).expect("this process is in /proc");
        assert!(stat.rss_pages > 0);
        let usage = tree_usage(&[me], &table)[0].unwrap();
        assert!(usage.rss_bytes >= stat.rss_pages * 4096 / 16);
    }

    #[test]
    fn a_tree_sums_its_descendants_only() {
        let p = |ppid, cpu_ticks, rss_pages| ProcStat {
            ppid,
            cpu_ticks,
            rss_pages,
        };
        // 10 ─ 11 ─ 12, 10 ─ 13; 20 is another tree; 30 has gone.
        let table: HashMap<i32, ProcStat> = [
            (1, p(0, 0, 1)),
            (10, p(1, 100, 10)),
            (11, p(10, 200, 20)),
            (12, p(11, 300, 30)),
            (13, p(10, 400, 40)),
            (20, p(1, 1000, 1000)),
        ]
        .into();
        let (page, tick) = machine_units();
        let usage = tree_usage(&[10, 11, 30], &table);
        assert_eq!(
            usage[0],
            Some(TreeUsage {
                rss_bytes: 100 * page,
                cpu_ms: 1000 * 1000 / tick
            })
        );
        assert_eq!(usage[1].unwrap().rss_bytes, 50 * page);
        assert_eq!(usage[2], None, "a gone root has no tree");
    }

    #[test]
    fn p90_is_the_nearest_rank() {
        assert_eq!(p90(&[]), None);
        assert_eq!(p90(&[7]), Some(7));
        assert_eq!(p90(&[1, 2]), Some(2));
        let ten: Vec<u64> = (1..=10).rev().collect();
        assert_eq!(p90(&ten), Some(9));
        let twenty: Vec<u64> = (1..=20).collect();
        assert_eq!(p90(&twenty), Some(18));
        assert_eq!(p90(&[5, 5, 5, 100]), Some(100));
    }

    fn expected(bytes: u64) -> Expected {
        Expected {
            bytes,
            from: ExpectedFrom::Declared,
        }
    }

    #[test]
    fn the_gauge_admits_while_measured_or_expected_memory_fits() {
        let gauge = Gauge::new(Some(1000));
        gauge.hold("a", "qwen", expected(400)).unwrap();
        gauge.hold("b", "qwen", expected(400)).unwrap();
        let refused = gauge.hold("c", "qwen", expected(400)).unwrap_err();
        assert_eq!((refused.in_use, refused.units), (800, 2));
        assert_eq!(
            refused.figures(),
            "800B in use by 2 units + 400B expected for \"qwen\" (400B (its declared expected_rss)) exceeds fleet-max-memory=1000B"
        );
        assert!(
            gauge.hold("a", "qwen", expected(400)).is_ok(),
            "held already"
        );
        // Started and measured below its expectation: it still holds the expectation.
        gauge.started("a", 10);
        gauge.update(vec![(
            "a".into(),
            TreeUsage {
                rss_bytes: 100,
                cpu_ms: 5,
            },
        )]);
        assert!(gauge.hold("c", "stub", expected(300)).is_err());
        // Measured above it: the measure counts.
        gauge.update(vec![(
            "a".into(),
            TreeUsage {
                rss_bytes: 700,
                cpu_ms: 9,
            },
        )]);
        assert_eq!(gauge.load().in_use, 700);
        assert!(gauge.hold("c", "stub", expected(1)).is_err());
        gauge.release_unstarted("b");
        gauge.release_unstarted("a");
        assert!(
            gauge.hold("c", "stub", expected(300)).is_ok(),
            "b gave its hold back"
        );
        assert_eq!(
            gauge.ended("a"),
            Some(ResourceSample {
                mission_id: "a".into(),
                peak_rss_bytes: 700,
                cpu_ms_since: 9
            }),
            "a started unit keeps its hold until it ends"
        );
        assert!(Gauge::new(None).hold("x", "y", expected(u64::MAX)).is_ok());
    }

    #[test]
    fn the_record_hears_the_peak_and_the_cpu_time_added_since_it_last_heard() {
        let gauge = Gauge::new(None);
        gauge.started("a", 10);
        let at = |rss_bytes, cpu_ms| vec![("a".to_string(), TreeUsage { rss_bytes, cpu_ms })];
        gauge.update(at(500, 100));
        assert_eq!(gauge.unrecorded()[0].cpu_ms_since, 100);
        assert!(gauge.unrecorded().is_empty(), "nothing moved");
        gauge.update(at(300, 250));
        let moved = gauge.unrecorded();
        assert_eq!((moved[0].peak_rss_bytes, moved[0].cpu_ms_since), (500, 150));
    }
}
