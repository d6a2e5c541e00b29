//! `mission diff|merge|discard <id>`: the operator's side of mission worktrees.

use super::Ctx;
use super::out::outln;
use crate::mission::{Mission, Missions, Status};
use crate::worktree::{self, Worktree, Worktrees};

/// The mission and its worktree; an error naming the fix when it has none.
fn mission_worktree(ctx: &Ctx, id: &str) -> anyhow::Result<(Mission, Worktrees, Worktree)> {
    let store = ctx.store()?;
    let mission = Missions::new(store.clone()).resolve(id)?;
    let worktrees = Worktrees::new(store);
    let wt = worktrees.get(&mission.id)?.ok_or_else(|| {
        anyhow::anyhow!(
            "mission {} has no worktree: it worked in {} (fire with --worktree to give a mission its own)",
            mission.id,
            mission.cwd
        )
    })?;
    Ok((mission, worktrees, wt))
}

/// Merging or discarding the tree a live unit is still writing would race it.
fn require_at_rest(m: &Mission, verb: &str) -> anyhow::Result<()> {
    if m.status == Status::Open {
        anyhow::bail!(
            "mission {} is still open: its unit may still be writing the worktree — wait for it to rest, or `missionboard mission stop {}`, then {verb} it",
            m.id,
            m.id
        );
    }
    Ok(())
}

pub(super) fn diff(ctx: &Ctx, id: &str, stat: bool) -> anyhow::Result<i32> {
    let (_, _, wt) = mission_worktree(ctx, id)?;
    let text = worktree::diff(&wt, stat)?;
    if text.is_empty() {
        outln!(
            "No changes on {} against {}.",
            wt.branch,
            worktree::short_id(&wt.base)
        )?;
    } else {
        // The unit wrote this text; the output layer keeps it from driving the terminal.
        outln!("{text}")?;
    }
    Ok(0)
}

pub(super) fn merge(ctx: &Ctx, id: &str) -> anyhow::Result<i32> {
    let (m, worktrees, wt) = mission_worktree(ctx, id)?;
    require_at_rest(&m, "merge")?;
    let merged = worktrees.merge(&wt, &crate::text::one_line(&m.intent))?;
    if merged.committed_leftovers {
        outln!(
            "Committed the worktree's uncommitted work on {} as \"mission {}: …\".",
            wt.branch,
            worktree::short_id(&m.id)
        )?;
    }
    outln!(
        "Merged {} into {} in {}; the worktree and its branch are removed.",
        wt.branch,
        merged.into,
        wt.repo.display()
    )?;
    Ok(0)
}

pub(super) fn discard(ctx: &Ctx, id: &str) -> anyhow::Result<i32> {
    let (m, worktrees, wt) = mission_worktree(ctx, id)?;
    require_at_rest(&m, "discard")?;
    worktrees.discard(&wt)?;
    outln!(
        "Discarded mission {}'s worktree {} and its branch {}.",
        m.id,
        wt.path.display(),
        wt.branch
    )?;
    Ok(0)
}
