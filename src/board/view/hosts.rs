//! The hosts fact of the status line: each live `missionboard host` sharing the
//! store, by machine, with its load against its width (`vm 2/4`), and its labels.
//! Nothing when none runs, so a board without hosts reads as before.

use crate::board::model::Model;
use crate::text::sanitize;

/// `hosts vm 2/4 · gpu-box 0/∞ [gpu]`, or `None` with no host running.
pub fn fact(m: &Model, sep: &str) -> Option<String> {
    let hosts = &m.snap.hosts;
    if hosts.is_empty() {
        return None;
    }
    let unlimited = if m.symbols.ascii { "inf" } else { "∞" };
    let each: Vec<String> = hosts
        .iter()
        .map(|h| {
            let width = match h.width {
                Some(w) if w > 0 => w.to_string(),
                _ => unlimited.to_string(),
            };
            let labels = if h.labels.is_empty() {
                String::new()
            } else {
                format!(" [{}]", h.labels.join(","))
            };
            // Written by whichever process shares the store: inert before it is drawn.
            sanitize(&format!(
                "{} {}/{width}{labels}",
                h.machine,
                h.load.unwrap_or(0)
            ))
        })
        .collect();
    Some(format!("hosts {}", each.join(sep)))
}

/// `next triage in 3m (last: queued mission …)`: the schedule that ticks soonest
/// (`schedule list` shows them all), or `None` with no live schedule.
pub fn schedule_fact(m: &Model) -> Option<String> {
    let (name, at, last) = m.snap.next_schedule.as_ref()?;
    let within = crate::duration::age((at - crate::clock::now_ms()).div_euclid(1000));
    let last = last
        .as_deref()
        .map(|l| format!(" (last: {})", crate::text::excerpt(l, 40)))
        .unwrap_or_default();
    Some(sanitize(&format!("next {name} in {within}{last}")))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::board::view::tests::{frame, model};
    use crate::mission::hosts::HostRow;

    fn host(machine: &str, width: i64, load: i64, labels: &[&str]) -> HostRow {
        HostRow {
            id: format!("{machine}-id"),
            machine: machine.into(),
            pid: 1,
            started_at: 0,
            heartbeat_at: 0,
            skew_ms: None,
            width: Some(width),
            load: Some(load),
            labels: labels.iter().map(|l| l.to_string()).collect(),
        }
    }

    #[test]
    fn the_status_line_shows_each_host_s_load_against_its_width() {
        let mut m = model(200, 40, false);
        let status = |m: &crate::board::model::Model| frame(m).lines().last().unwrap().to_string();
        assert!(!status(&m).contains("hosts"), "no host, no fact");
        let mut snap = (*m.snap).clone();
        snap.hosts = vec![
            host("vm", 4, 2, &[]),
            host("gpu\u{1b}[31mbox", 0, 1, &["gpu"]),
        ];
        m.snap = Arc::new(snap);
        let line = status(&m);
        assert!(line.contains("hosts vm 2/4 · gpubox 1/∞ [gpu]"), "{line}");
    }

    #[test]
    fn the_status_line_names_the_schedule_that_ticks_next() {
        let mut m = model(220, 40, false);
        let status = |m: &crate::board::model::Model| frame(m).lines().last().unwrap().to_string();
        assert!(!status(&m).contains("next "), "no schedule, no fact");
        let mut snap = (*m.snap).clone();
        snap.next_schedule = Some((
            "triage".into(),
            crate::clock::now_ms() + 3 * 60_000 + 30_000,
            Some("queued mission 1234".into()),
        ));
        m.snap = Arc::new(snap);
        let line = status(&m);
        assert!(
            line.contains("next triage in 3m (last: queued mission 1234)"),
            "{line}"
        );
    }
}
