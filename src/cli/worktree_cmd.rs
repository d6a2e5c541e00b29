//! `mission diff|merge|discard <id>`: the operator's side of mission worktrees.

use super::Ctx;
use super::out::outln;
use crate::mission::{Mission, Missions};
use crate::ops;
use crate::ops::host::Host;
use crate::worktree;

/// The mission an operator's id (or prefix) names, and this command's host.
fn mission(ctx: &Ctx, id: &str) -> anyhow::Result<(Mission, Host)> {
    let store = ctx.store()?;
    let mission = Missions::new(store.clone()).resolve(id)?;
    Ok((mission, ctx.host(&store)?))
}

pub(super) fn diff(ctx: &Ctx, id: &str, stat: bool) -> anyhow::Result<i32> {
    let (m, host) = mission(ctx, id)?;
    let (wt, text) = ops::worktree::diff(&host, &m, stat)?;
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

pub(super) fn merge(ctx: &Ctx, id: &str, force: bool) -> anyhow::Result<i32> {
    let (m, host) = mission(ctx, id)?;
    let (wt, merged, forced) = ops::worktree::merge(&host, &m, force)?;
    if let Some(c) = forced {
        outln!(
            "Merged past the check ({}: `{}`), as --force asked; recorded on mission {}.",
            c.state_words(),
            crate::text::one_line(&c.command),
            m.id
        )?;
    }
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
    let (m, host) = mission(ctx, id)?;
    let wt = ops::worktree::discard(&host, &m)?;
    outln!(
        "Discarded mission {}'s worktree {} and its branch {}.",
        m.id,
        wt.path.display(),
        wt.branch
    )?;
    Ok(0)
}
