//! The worktree verbs: see a mission's worktree as a diff, land it (merge), or
//! drop it (discard). Merge and discard refuse a mission that is still open.

use crate::mission::check::{CheckRecord, CheckState};
use crate::mission::{Mission, Missions};
use crate::ops::host::Host;
use crate::worktree::{self, Merged, Worktree, Worktrees};

/// `m`'s worktree and its diff against the base (`stat`: the file summary only).
/// The text is the unit's: a surface sanitizes it before showing it.
pub fn diff(host: &Host, m: &Mission, stat: bool) -> anyhow::Result<(Worktree, String)> {
    let wt = Worktrees::new(host.store().clone()).of(m)?;
    let text = worktree::diff(&wt, stat)?;
    Ok((wt, text))
}

/// Merge `m`'s worktree into the branch it was made from, then remove it. A
/// mission fired with a check merges only once the check passed, unless `force`:
/// then the merge is recorded on the mission, naming who forced it. The third value
/// is the check that did not pass, when it was forced past.
pub fn merge(
    host: &Host,
    m: &Mission,
    force: bool,
) -> anyhow::Result<(Worktree, Merged, Option<CheckRecord>)> {
    let store = host.store();
    let worktrees = Worktrees::new(store.clone());
    let wt = worktrees.of_resting(m, "merge")?;
    let missions = Missions::new(store.clone());
    let unpassed = missions
        .check(&m.id)?
        .filter(|c| c.state != CheckState::Passed);
    if let Some(c) = &unpassed
        && !force
    {
        anyhow::bail!(
            "merge refused: mission {}'s check did not pass ({}: `{}`{}) — nothing was merged. Fix the work and fire it again, or merge it anyway with `missionboard mission merge {} --force` (recorded on the mission)",
            m.id,
            c.state_words(),
            crate::text::one_line(&c.command),
            c.last_outcome
                .as_deref()
                .map(|o| format!(", last try: {o}"))
                .unwrap_or_default(),
            crate::worktree::short_id(&m.id)
        );
    }
    let merged = worktrees.merge(&wt, &crate::text::one_line(&m.intent))?;
    if let Some(c) = &unpassed {
        let who = operator();
        missions.add_report(
            &m.id,
            crate::mission::ReportInput {
                kind: crate::mission::report::CHECK_KIND.into(),
                summary: format!(
                    "merged without a passing check: forced by {who} (check {})",
                    c.state_words()
                ),
                detail: format!(
                    "`missionboard mission merge --force` merged {} into {} although the check `{}` had not passed.",
                    wt.branch,
                    merged.into,
                    crate::text::one_line(&c.command)
                ),
                ..Default::default()
            },
        )?;
    }
    Ok((wt, merged, unpassed))
}

/// Who runs this command, as a forced merge records it: the login name and machine.
fn operator() -> String {
    let user = ["USER", "LOGNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        // SAFETY: getuid has no preconditions.
        .unwrap_or_else(|| format!("uid {}", unsafe { libc::getuid() }));
    format!(
        "{} on {}",
        crate::text::one_line(&user),
        crate::host::HostId::current().machine_label()
    )
}

/// Remove `m`'s worktree and its branch, unmerged.
pub fn discard(host: &Host, m: &Mission) -> anyhow::Result<Worktree> {
    let worktrees = Worktrees::new(host.store().clone());
    let wt = worktrees.of_resting(m, "discard")?;
    worktrees.discard(&wt)?;
    Ok(wt)
}
