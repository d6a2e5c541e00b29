//! Mission worktrees: a git worktree per mission, so parallel missions in one
//! checkout never trample each other (or the operator's tree).
//!
//! A worktree is made with `git worktree add` on a new branch `mission/<id8>` from
//! the checkout's HEAD, under `<git common dir>/missionboard-worktrees/<id8>` (inside
//! the repository's own `.git`, so it never shows in `git status` and goes with the
//! repository). The unit works there: it is its cwd and its `{workspace}`. It stays
//! until the operator merges it into their current branch or discards it. Everything
//! goes through the `git` CLI; the `mission_worktrees` table records which mission
//! owns which worktree and the commit it started from.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::mission::{Mission, Status};
use crate::store::sql::params;
use crate::store::{Store, StoreError};

pub(crate) const SCHEMA_V8: &str = "
CREATE TABLE mission_worktrees (
    mission_id TEXT PRIMARY KEY,
    repo TEXT NOT NULL,
    path TEXT NOT NULL,
    branch TEXT NOT NULL,
    base TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'active'
        CHECK (state IN ('active', 'merging', 'merged', 'discarded'))
);";

/// The PostgreSQL spelling of this module's tables as of schema v11 (see `crate::schema`):
/// the SQLite text, which uses no type or clause the two spell apart.
pub(crate) const PG_SCHEMA_V11: &str = SCHEMA_V8;

/// What became of a mission's worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Active,
    /// A `mission merge` holds it (the claim that makes two merges end in one).
    Merging,
    Merged,
    Discarded,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Merging => "merging",
            State::Merged => "merged",
            State::Discarded => "discarded",
        }
    }

    fn parse(s: &str) -> State {
        match s {
            "merging" => State::Merging,
            "merged" => State::Merged,
            "discarded" => State::Discarded,
            _ => State::Active,
        }
    }
}

/// One mission's worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    pub mission_id: String,
    /// The operator's checkout it was made from (its top level).
    pub repo: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    /// The commit it started from: what `mission diff` compares against.
    pub base: String,
    pub state: State,
}

/// What `mission merge` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The branch of the operator's checkout it went into.
    pub into: String,
    /// Whether leftovers (uncommitted work) were committed first.
    pub committed_leftovers: bool,
}

/// Where a mission worked, for listings: `cwd`, or its worktree and what became of it.
pub fn workspace_label(worktree: Option<State>) -> String {
    match worktree {
        None => "cwd".to_string(),
        Some(State::Active | State::Merging) => "worktree".to_string(),
        Some(state) => format!("worktree ({})", state.as_str()),
    }
}

/// The first 8 characters of a mission id: the branch and directory name.
pub fn short_id(mission_id: &str) -> String {
    mission_id.chars().take(8).collect()
}

fn row(r: &crate::store::sql::Row<'_>) -> crate::store::sql::Result<Worktree> {
    Ok(Worktree {
        mission_id: r.get(0)?,
        repo: PathBuf::from(r.get::<String>(1)?),
        path: PathBuf::from(r.get::<String>(2)?),
        branch: r.get(3)?,
        base: r.get(4)?,
        state: State::parse(&r.get::<String>(5)?),
    })
}

/// The mission worktrees service.
#[derive(Clone)]
pub struct Worktrees {
    store: Store,
}

impl Worktrees {
    pub fn new(store: Store) -> Worktrees {
        Worktrees { store }
    }

    /// Make the worktree for `mission_id` from the checkout `cwd` is in. Refused,
    /// naming the fix, outside a git repository or in one with no commit yet.
    pub fn create(&self, cwd: &Path, mission_id: &str) -> anyhow::Result<Worktree> {
        let repo = match git(cwd, &["rev-parse", "--show-toplevel"]) {
            Ok(top) => PathBuf::from(top),
            Err(_) => anyhow::bail!(
                "a mission worktree needs a git repository: {} is not inside one — run `git init` and commit, or fire without --worktree",
                cwd.display()
            ),
        };
        let base = git(&repo, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).map_err(|_| {
            anyhow::anyhow!(
                "a mission worktree branches from HEAD, but {} has no commit yet — commit something first, or fire without --worktree",
                repo.display()
            )
        })?;
        let common = git(
            &repo,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        let id8 = short_id(mission_id);
        let path = PathBuf::from(common)
            .join("missionboard-worktrees")
            .join(&id8);
        let branch = format!("mission/{id8}");
        let path_arg = path.display().to_string();
        git(
            &repo,
            &[
                "worktree", "add", "--quiet", "-b", &branch, &path_arg, &base,
            ],
        )?;
        let wt = Worktree {
            mission_id: mission_id.to_string(),
            repo,
            path,
            branch,
            base,
            state: State::Active,
        };
        let recorded = self.store.with(|c| {
            c.execute(
                "INSERT INTO mission_worktrees (mission_id, repo, path, branch, base) VALUES (?1, ?2, ?3, ?4, ?5)",
                crate::store::sql::params![
                    wt.mission_id,
                    wt.repo.display().to_string(),
                    wt.path.display().to_string(),
                    wt.branch,
                    wt.base
                ],
            )
        });
        if let Err(e) = recorded {
            let _ = remove_worktree(&wt);
            return Err(e.into());
        }
        Ok(wt)
    }

    /// Undo [`Worktrees::create`] for a fire that was refused after it: the worktree,
    /// its branch and its row go, as if it had never been made.
    pub fn abandon(&self, wt: &Worktree) {
        if let Err(e) = remove_worktree(wt) {
            tracing::warn!(path = %wt.path.display(), "could not remove a refused mission's worktree: {e}");
        }
        let _ = self.store.with(|c| {
            c.execute(
                "DELETE FROM mission_worktrees WHERE mission_id = ?1",
                params![wt.mission_id],
            )
        });
    }

    /// The worktree of `mission_id`, if it was fired with one.
    pub fn get(&self, mission_id: &str) -> Result<Option<Worktree>, StoreError> {
        self.store.with(|c| {
            let mut stmt = c.prepare(
                "SELECT mission_id, repo, path, branch, base, state FROM mission_worktrees WHERE mission_id = ?1",
            )?;
            let mut rows = stmt.query_map(params![mission_id], row)?;
            rows.next().transpose()
        })
    }

    /// The worktrees of those of `mission_ids` fired with one: one read for a page.
    pub fn of_many(
        &self,
        mission_ids: &[&str],
    ) -> Result<std::collections::HashMap<String, Worktree>, StoreError> {
        if mission_ids.is_empty() {
            return Ok(Default::default());
        }
        let ids = serde_json::json!(mission_ids).to_string();
        self.store.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT mission_id, repo, path, branch, base, state FROM mission_worktrees
                 WHERE mission_id IN (SELECT value FROM json_each(?1))",
            )?;
            let rows = stmt.query_map(params![ids], row)?;
            rows.map(|r| r.map(|wt| (wt.mission_id.clone(), wt)))
                .collect()
        })
    }

    /// The worktree of `mission`; an error naming the fix when it has none.
    pub fn of(&self, mission: &Mission) -> anyhow::Result<Worktree> {
        self.get(&mission.id)?.ok_or_else(|| {
            anyhow::anyhow!(
                "mission {} has no worktree: it worked in {} (fire with --worktree to give a mission its own)",
                mission.id,
                mission.cwd
            )
        })
    }

    /// [`Worktrees::of`], ready to be merged or discarded (`verb`): refused while the
    /// mission is still open (its unit may be writing the worktree).
    pub fn of_resting(&self, mission: &Mission, verb: &str) -> anyhow::Result<Worktree> {
        let wt = self.of(mission)?;
        if mission.status == Status::Open {
            anyhow::bail!(
                "mission {} is still open: its unit may still be writing the worktree — wait for it to rest, or `missionboard mission stop {}`, then {verb} it",
                mission.id,
                mission.id
            );
        }
        Ok(wt)
    }

    /// The state of every mission's worktree, for listings.
    pub fn states(&self) -> Result<std::collections::HashMap<String, State>, StoreError> {
        self.store.with(|c| {
            let mut stmt = c.prepare("SELECT mission_id, state FROM mission_worktrees")?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<String>(0)?, State::parse(&r.get::<String>(1)?)))
            })?;
            rows.collect()
        })
    }

    /// Merge the worktree's work into the operator's current branch: leftovers are
    /// committed as `mission <id8>: <intent>` first. Refused, changing nothing, when
    /// the operator's tree is dirty or the merge would conflict (naming the files).
    pub fn merge(&self, wt: &Worktree, intent: &str) -> anyhow::Result<Merged> {
        require_active(wt)?;
        if !self.transition(wt, State::Active, State::Merging)? {
            anyhow::bail!(
                "the worktree of mission {} is being merged or discarded by another command",
                wt.mission_id
            );
        }
        let merged = self.merge_claimed(wt, intent);
        let next = if merged.is_ok() {
            State::Merged
        } else {
            State::Active
        };
        self.transition(wt, State::Merging, next)?;
        merged
    }

    fn merge_claimed(&self, wt: &Worktree, intent: &str) -> anyhow::Result<Merged> {
        let dirty = git(&wt.repo, &["status", "--porcelain", "--untracked-files=no"])?;
        if !dirty.is_empty() {
            anyhow::bail!(
                "{} has uncommitted changes ({}) — commit or stash them, then merge again; nothing was changed",
                wt.repo.display(),
                porcelain_files(&dirty).join(", ")
            );
        }
        let into = git(&wt.repo, &["symbolic-ref", "--quiet", "--short", "HEAD"]).map_err(|_| {
            anyhow::anyhow!(
                "{} is on a detached HEAD: check out the branch the mission should land on, then merge again",
                wt.repo.display()
            )
        })?;
        let message = format!("mission {}: {intent}", short_id(&wt.mission_id));
        // The worktree's whole state as a commit object that no ref points to yet, so
        // the conflict check sees the leftovers without anything being changed.
        let candidate = snapshot_commit(wt, &message)?;
        let check = git_output(
            &wt.repo,
            &[
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                "HEAD",
                &candidate.commit,
            ],
        )?;
        if !check.status.success() {
            let text = String::from_utf8_lossy(&check.stdout);
            let files: Vec<&str> = text.lines().skip(1).filter(|l| !l.is_empty()).collect();
            anyhow::bail!(
                "merging {} into {into} would conflict in {} — resolve it in the worktree ({}) or discard the mission; nothing was changed",
                wt.branch,
                files.join(", "),
                wt.path.display()
            );
        }
        if candidate.leftovers {
            git(&wt.path, &["add", "-A"])?;
            git_as_operator(
                &wt.path,
                &["commit", "--quiet", "--no-verify", "-m", &message],
            )?;
        }
        let merge_message = format!("Merge {} ({})", wt.branch, message);
        git_as_operator(
            &wt.repo,
            &[
                "merge",
                "--quiet",
                "--no-ff",
                "--no-verify",
                "-m",
                &merge_message,
                &wt.branch,
            ],
        )?;
        remove_worktree(wt)?;
        Ok(Merged {
            into,
            committed_leftovers: candidate.leftovers,
        })
    }

    /// Remove the worktree and its branch, work and all.
    pub fn discard(&self, wt: &Worktree) -> anyhow::Result<()> {
        require_active(wt)?;
        if !self.transition(wt, State::Active, State::Discarded)? {
            anyhow::bail!(
                "the worktree of mission {} is being merged or discarded by another command",
                wt.mission_id
            );
        }
        remove_worktree(wt)
    }

    /// The guarded state change: true only for the one caller that moved it.
    fn transition(&self, wt: &Worktree, from: State, to: State) -> Result<bool, StoreError> {
        self.store.with(|c| {
            c.execute(
                "UPDATE mission_worktrees SET state = ?3 WHERE mission_id = ?1 AND state = ?2",
                crate::store::sql::params![wt.mission_id, from.as_str(), to.as_str()],
            )
            .map(|n| n == 1)
        })
    }
}

/// What a unit must be able to write to commit on its mission's branch, and no more:
/// the worktree's own admin dir (its `HEAD`, `index`, `ORIG_HEAD`, `COMMIT_EDITMSG`,
/// `logs/HEAD` and their `.lock`s), the shared object store, and the directories
/// that hold the branch's ref and its reflog (`refs/heads/mission/`,
/// `logs/refs/heads/mission/`: git locks a ref by creating `<ref>.lock` beside it).
/// Every other ref — the operator's branches, tags, `packed-refs` — and the config
/// stay out of reach. (So git's attempt, after a commit, to clear the `AUTO_MERGE`
/// pseudo-ref through `packed-refs.lock` prints an error; the commit stands.)
/// Under limited reads the repository's common dir is readable too: git reads its
/// config, refs and objects for every command.
pub fn commit_access(wt: &Worktree) -> anyhow::Result<CommitAccess> {
    let admin = git(&wt.path, &["rev-parse", "--absolute-git-dir"])?;
    let common = PathBuf::from(git(
        &wt.path,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )?);
    let branch_dir = Path::new(&wt.branch)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| anyhow::anyhow!("mission branch {:?} has no directory", wt.branch))?;
    Ok(CommitAccess {
        write: vec![
            PathBuf::from(admin),
            common.join("objects"),
            common.join("refs/heads").join(branch_dir),
            common.join("logs/refs/heads").join(branch_dir),
        ],
        read: vec![common],
    })
}

/// What a worktree mission's unit may write and read in the repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitAccess {
    pub write: Vec<PathBuf>,
    pub read: Vec<PathBuf>,
}

/// The committed and uncommitted changes of the worktree against its base, as a
/// patch or (`stat`) a file summary. Read through a scratch index: the worktree's
/// own index is left as the unit left it.
pub fn diff(wt: &Worktree, stat: bool) -> anyhow::Result<String> {
    require_active(wt)?;
    let index = ScratchIndex::of(wt)?;
    let mut args = vec!["diff", "--cached", "--no-color", "--no-ext-diff"];
    if stat {
        args.push("--stat");
    }
    args.push(&wt.base);
    let out = index.git(&args)?;
    Ok(out)
}

fn require_active(wt: &Worktree) -> anyhow::Result<()> {
    match wt.state {
        State::Active => Ok(()),
        other => anyhow::bail!(
            "the worktree of mission {} was {} already: there is nothing left to diff, merge or discard",
            wt.mission_id,
            other.as_str()
        ),
    }
}

/// The file names in `git status --porcelain` output.
fn porcelain_files(text: &str) -> Vec<&str> {
    text.lines().filter_map(|l| l.get(3..)).collect()
}

struct Snapshot {
    commit: String,
    /// Whether the worktree held work not yet committed on its branch.
    leftovers: bool,
}

/// A commit object of the worktree exactly as it is (tracked, modified, untracked),
/// parented on its branch; no ref moves.
fn snapshot_commit(wt: &Worktree, message: &str) -> anyhow::Result<Snapshot> {
    let index = ScratchIndex::of(wt)?;
    let tree = index.git(&["write-tree"])?;
    let head = git(&wt.path, &["rev-parse", "HEAD"])?;
    let head_tree = git(&wt.path, &["rev-parse", "HEAD^{tree}"])?;
    if tree == head_tree {
        return Ok(Snapshot {
            commit: head,
            leftovers: false,
        });
    }
    let commit = git_as_operator(
        &wt.path,
        &["commit-tree", &tree, "-p", &head, "-m", message],
    )?;
    Ok(Snapshot {
        commit,
        leftovers: true,
    })
}

/// A temporary index holding the worktree's whole state (`git add -A` into it).
struct ScratchIndex {
    dir: PathBuf,
    file: PathBuf,
    worktree: PathBuf,
}

impl ScratchIndex {
    fn of(wt: &Worktree) -> anyhow::Result<ScratchIndex> {
        let dir = std::env::temp_dir().join(format!(
            "missionboard-index-{}-{}",
            short_id(&wt.mission_id),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir)?;
        let index = ScratchIndex {
            file: dir.join("index"),
            dir,
            worktree: wt.path.clone(),
        };
        index.git(&["read-tree", "HEAD"])?;
        index.git(&["add", "-A"])?;
        Ok(index)
    }

    fn git(&self, args: &[&str]) -> anyhow::Result<String> {
        let mut cmd = git_command(&self.worktree, args);
        cmd.env("GIT_INDEX_FILE", &self.file);
        checked(cmd, args)
    }
}

impl Drop for ScratchIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn remove_worktree(wt: &Worktree) -> anyhow::Result<()> {
    let path = wt.path.display().to_string();
    if wt.path.exists() {
        git(
            &wt.repo,
            &["worktree", "remove", "--force", "--force", &path],
        )?;
    } else {
        git(&wt.repo, &["worktree", "prune"])?;
    }
    // A branch someone already deleted is not an error here.
    let _ = git(&wt.repo, &["branch", "--quiet", "-D", &wt.branch]);
    Ok(())
}

/// `git -C dir args…` with a predictable environment: no pager, no prompts, no
/// locale-dependent messages.
fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_PAGER", "cat")
        .env("LC_ALL", "C")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    cmd
}

fn git_output(dir: &Path, args: &[&str]) -> anyhow::Result<Output> {
    git_command(dir, args)
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run git (is it installed and on PATH?): {e}"))
}

fn checked(mut cmd: Command, args: &[&str]) -> anyhow::Result<String> {
    let out = cmd
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run git (is it installed and on PATH?): {e}"))?;
    if !out.status.success() {
        anyhow::bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    checked(git_command(dir, args), args)
}

/// A git command that records a commit: the operator's identity when git knows one,
/// else missionboard's, so a merge never fails on an unconfigured machine.
fn git_as_operator(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let mut cmd = git_command(dir, &[]);
    let known = git(dir, &["config", "user.email"]).is_ok_and(|e| !e.is_empty());
    if !known {
        cmd.args([
            "-c",
            "user.name=missionboard",
            "-c",
            "user.email=missionboard@localhost",
        ]);
    }
    cmd.args(args);
    checked(cmd, args)
}
