//! The worktree verbs: see a mission's worktree as a diff, land it (merge), or
//! drop it (discard). Merge and discard refuse a mission that is still open.

use crate::mission::Mission;
use crate::store::Store;
use crate::worktree::{self, Merged, Worktree, Worktrees};

/// `m`'s worktree and its diff against the base (`stat`: the file summary only).
/// The text is the unit's: a surface sanitizes it before showing it.
pub fn diff(store: &Store, m: &Mission, stat: bool) -> anyhow::Result<(Worktree, String)> {
    let wt = Worktrees::new(store.clone()).of(m)?;
    let text = worktree::diff(&wt, stat)?;
    Ok((wt, text))
}

/// Merge `m`'s worktree into the branch it was made from, then remove it.
pub fn merge(store: &Store, m: &Mission) -> anyhow::Result<(Worktree, Merged)> {
    let worktrees = Worktrees::new(store.clone());
    let wt = worktrees.of_resting(m, "merge")?;
    let merged = worktrees.merge(&wt, &crate::text::one_line(&m.intent))?;
    Ok((wt, merged))
}

/// Remove `m`'s worktree and its branch, unmerged.
pub fn discard(store: &Store, m: &Mission) -> anyhow::Result<Worktree> {
    let worktrees = Worktrees::new(store.clone());
    let wt = worktrees.of_resting(m, "discard")?;
    worktrees.discard(&wt)?;
    Ok(wt)
}
