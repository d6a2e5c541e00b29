//! Issue J: a git worktree per mission — created on `mission/<id8>` from HEAD, the
//! unit's cwd, then diffed, merged (or refused on a dirty tree or a conflict) and
//! discarded, end to end through the real binary and the `git` CLI.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{Run, Sandbox, git};

/// The sandbox's cwd as a git repository with one commit on `main`.
fn repo(sb: &Sandbox) {
    git(&sb.cwd, &["init", "-q", "-b", "main"]);
    std::fs::write(sb.cwd.join("notes.txt"), "one\n").unwrap();
    git(&sb.cwd, &["add", "notes.txt"]);
    git(&sb.cwd, &["commit", "-q", "-m", "init"]);
}

/// [`repo`] with the [`writer`] stub declared and its script committed, so the
/// operator's tree starts clean.
fn clean_repo_with_writer(sb: &Sandbox, files: &[(&str, &str)]) {
    repo(sb);
    writer(sb, files);
    git(&sb.cwd, &["add", "-A"]);
    git(&sb.cwd, &["commit", "-q", "-m", "script"]);
}

/// Where a mission's worktree lives: inside the repository's own `.git`.
fn worktree_path(sb: &Sandbox, id8: &str) -> std::path::PathBuf {
    Path::new(&git(
        &sb.cwd,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    ))
    .join("missionboard-worktrees")
    .join(id8)
}

/// A stub that writes `files` (relative to its cwd) and lands.
fn writer(sb: &Sandbox, files: &[(&str, &str)]) {
    let mut steps: Vec<Value> = files
        .iter()
        .map(|(path, text)| json!({"write": {"path": path, "text": text}}))
        .collect();
    steps.push(json!({"report": {"kind": "result", "summary": "wrote them", "refs": files.iter().map(|(p, _)| p).collect::<Vec<_>>()}}));
    steps.push(json!({"finish": "landed"}));
    let script = json!({"name": "w", "turns": [{"steps": steps}]}).to_string();
    sb.declare_stubs(&[("writer", Some(&script))]);
}

/// The host's environment keeps git's machine config out, as the test's own does.
fn cmd(sb: &Sandbox, args: &[&str]) -> Run {
    let mut c = sb.command(args);
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    sb.run_with(c)
}

fn fire_in_worktree(sb: &Sandbox) -> (Run, String) {
    let run = cmd(
        sb,
        &[
            "mission",
            "fire",
            "writer",
            "write the notes",
            "--wait",
            "--policy",
            "default",
            "--worktree",
        ],
    );
    let id = sb.newest_mission().expect("a mission");
    (run, id)
}

#[test]
fn a_worktree_mission_is_diffed_then_merged_into_the_current_branch() {
    let sb = Sandbox::new();
    clean_repo_with_writer(&sb, &[("notes.txt", "two\n"), ("new.txt", "fresh\n")]);
    let base = git(&sb.cwd, &["rev-parse", "HEAD"]);
    let (fired, id) = fire_in_worktree(&sb);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id8 = &id[..8];
    let wt = worktree_path(&sb, id8);
    assert!(
        fired.stdout.contains(&format!(
            "Worktree: {} on branch mission/{id8} from {}",
            wt.display(),
            &base[..8]
        )),
        "{fired:#?}"
    );
    // The result's refs resolved against the worktree: not downgraded.
    assert!(
        fired.stdout.contains("  [result] wrote them\n"),
        "{fired:#?}"
    );
    // The operator's checkout is untouched until the merge.
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("notes.txt")).unwrap(),
        "one\n"
    );
    assert!(!sb.cwd.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(wt.join("new.txt")).unwrap(),
        "fresh\n"
    );
    let list = cmd(&sb, &["mission", "list"]).ok();
    assert!(list.lines()[0].contains("WORKSPACE"), "{list:#?}");
    assert!(list.lines()[1].contains(" worktree "), "{list:#?}");

    let stat = cmd(&sb, &["mission", "diff", id8, "--stat"]).ok();
    assert!(stat.stdout.contains(" new.txt   | 1 +"), "{stat:#?}");
    assert!(stat.stdout.contains(" notes.txt | 2 +-"), "{stat:#?}");
    let diff = cmd(&sb, &["mission", "diff", id8]).ok();
    assert!(diff.stdout.contains("-one\n+two\n"), "{diff:#?}");
    assert!(diff.stdout.contains("+++ b/new.txt\n"), "{diff:#?}");

    let merged = cmd(&sb, &["mission", "merge", id8]).ok();
    assert_eq!(
        merged.lines(),
        [
            format!(
                "Committed the worktree's uncommitted work on mission/{id8} as \"mission {id8}: …\"."
            ),
            format!(
                "Merged mission/{id8} into main in {}; the worktree and its branch are removed.",
                sb.cwd.display()
            ),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("notes.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("new.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(
        git(&sb.cwd, &["log", "-1", "--format=%s"]),
        format!("Merge mission/{id8} (mission {id8}: write the notes)")
    );
    assert_eq!(
        git(&sb.cwd, &["log", "-1", "--format=%s", "HEAD^2"]),
        format!("mission {id8}: write the notes")
    );
    assert!(!wt.exists());
    assert_eq!(git(&sb.cwd, &["branch", "--list", "mission/*"]), "");
    let list = cmd(&sb, &["mission", "list"]).ok();
    assert!(list.lines()[1].contains(" worktree (merged) "), "{list:#?}");
    let again = cmd(&sb, &["mission", "merge", id8]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("was merged already"), "{again:#?}");
}

#[test]
fn a_conflicting_or_dirty_merge_is_refused_naming_the_files_and_changes_nothing() {
    let sb = Sandbox::new();
    clean_repo_with_writer(&sb, &[("notes.txt", "from the mission\n")]);
    let (fired, id) = fire_in_worktree(&sb);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id8 = &id[..8];

    // A dirty operator tree: refused, nothing changed.
    std::fs::write(sb.cwd.join("notes.txt"), "uncommitted\n").unwrap();
    let dirty = cmd(&sb, &["mission", "merge", id8]);
    assert_eq!(dirty.code, 1, "{dirty:#?}");
    assert!(
        dirty.stderr.contains(&format!(
            "{} has uncommitted changes (notes.txt) — commit or stash them, then merge again; nothing was changed",
            sb.cwd.display()
        )),
        "{dirty:#?}"
    );

    // The operator commits a change of their own to the same line: a conflict.
    std::fs::write(sb.cwd.join("notes.txt"), "from the operator\n").unwrap();
    git(&sb.cwd, &["commit", "-q", "-am", "operator edit"]);
    let head = git(&sb.cwd, &["rev-parse", "HEAD"]);
    let mission_head = git(&sb.cwd, &["rev-parse", &format!("mission/{id8}")]);
    let conflict = cmd(&sb, &["mission", "merge", id8]);
    assert_eq!(conflict.code, 1, "{conflict:#?}");
    assert!(
        conflict.stderr.contains(&format!(
            "merging mission/{id8} into main would conflict in notes.txt — resolve it in the worktree"
        )),
        "{conflict:#?}"
    );
    assert_eq!(git(&sb.cwd, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&sb.cwd, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&sb.cwd, &["rev-parse", &format!("mission/{id8}")]),
        mission_head,
        "the mission branch did not move either"
    );
    // Still there to be fixed or discarded.
    let diff = cmd(&sb, &["mission", "diff", id8]).ok();
    assert!(diff.stdout.contains("+from the mission\n"), "{diff:#?}");
}

#[test]
fn an_envelope_that_asks_for_worktrees_gets_one_and_discard_removes_it_and_its_branch() {
    let sb = Sandbox::new();
    repo(&sb);
    writer(&sb, &[("scratch.txt", "throwaway\n")]);
    sb.write(
        &sb.home.join("hitl-policy-isolated.json"),
        &json!({"default_action": "allow", "workspace": "worktree"}).to_string(),
    );
    let fired = cmd(
        &sb,
        &[
            "mission", "fire", "writer", "scratch", "--wait", "--policy", "isolated",
        ],
    );
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let id8 = &id[..8];
    let wt = worktree_path(&sb, id8);
    assert!(wt.join("scratch.txt").exists());
    let discarded = cmd(&sb, &["mission", "discard", id8]).ok();
    assert_eq!(
        discarded.lines(),
        [format!(
            "Discarded mission {id}'s worktree {} and its branch mission/{id8}.",
            wt.display()
        )]
    );
    assert!(!wt.exists());
    assert_eq!(git(&sb.cwd, &["branch", "--list", "mission/*"]), "");
    assert_eq!(
        git(&sb.cwd, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    let list = cmd(&sb, &["mission", "list"]).ok();
    assert!(
        list.lines()[1].contains(" worktree (discarded) "),
        "{list:#?}"
    );
}

#[test]
fn a_worktree_fire_outside_a_git_repository_is_refused_and_records_nothing() {
    let sb = Sandbox::new();
    writer(&sb, &[("x.txt", "x\n")]);
    let fired = cmd(
        &sb,
        &[
            "mission",
            "fire",
            "writer",
            "write",
            "--wait",
            "--policy",
            "default",
            "--worktree",
        ],
    );
    assert_eq!(fired.code, 1, "{fired:#?}");
    assert!(
        fired.stderr.contains(&format!(
            "a mission worktree needs a git repository: {} is not inside one — run `git init` and commit, or fire without --worktree",
            sb.cwd.display()
        )),
        "{fired:#?}"
    );
    assert_eq!(sb.newest_mission(), None);
}

#[test]
fn a_unit_commits_on_its_own_branch_and_on_no_other_under_strict_and_default() {
    let sb = Sandbox::new();
    repo(&sb);
    let common = sb.cwd.join(".git");
    let identity = "-c user.name=unit -c user.email=unit@example.invalid";
    let sh = |line: String| json!({"run": {"argv": ["sh", "-c", line]}});
    let steps = vec![
        json!({"write": {"path": "feature.txt", "text": "from the unit\n"}}),
        sh(format!(
            "git add -A && git {identity} commit -q -m 'unit: add the feature' && echo committed"
        )),
        // Another branch's ref, through git and by hand: the kernel refuses both.
        sh("git update-ref refs/heads/main HEAD".to_string()),
        sh(format!("git {identity} branch sneaky")),
        json!({"write": {"path": common.join("refs/heads/main").display().to_string(), "text": "0000000000000000000000000000000000000000\n"}}),
        json!({"finish": "landed"}),
    ];
    let script = json!({"name": "c", "turns": [{"steps": steps}]}).to_string();
    sb.declare_stubs(&[("committer", Some(&script))]);
    git(&sb.cwd, &["add", "-A"]);
    git(&sb.cwd, &["commit", "-q", "-m", "script"]);
    let base = git(&sb.cwd, &["rev-parse", "HEAD"]);

    // Under strict (reads limited too) and default alike: the first is discarded, the
    // second merged.
    let mut id = String::new();
    for policy in ["strict", "default"] {
        if !id.is_empty() {
            cmd(&sb, &["mission", "discard", &id]).ok();
        }
        let fired = cmd(
            &sb,
            &[
                "mission",
                "fire",
                "committer",
                "commit the feature",
                "--wait",
                "--policy",
                policy,
                "--worktree",
            ],
        );
        assert_eq!(fired.code, 0, "{policy}: {fired:#?}");
        id = sb.newest_mission().unwrap();
        let got = sb.report_texts(&id);
        assert_eq!(got.len(), 5, "{policy}: {got:?}");
        assert_eq!(got[0].0, "write feature.txt: ok", "{policy}: {got:?}");
        // git also tries to clear the AUTO_MERGE pseudo-ref through the shared
        // packed-refs, which stays out of reach; the commit stands either way.
        assert_eq!(got[1].0, "run sh: exit 0", "{policy}: {got:?}");
        assert!(got[1].1.starts_with("committed"), "{policy}: {got:?}");
        for (summary, detail) in &got[2..4] {
            assert_ne!(summary, "run sh: exit 0", "{policy}: {got:?}");
            assert!(detail.contains("Permission denied"), "{policy}: {got:?}");
        }
        assert_eq!(
            got[4].0,
            format!(
                "write {}: EACCES (os error 13)",
                common.join("refs/heads/main").display()
            ),
            "{policy}"
        );
        assert_eq!(
            git(&sb.cwd, &["rev-parse", "main"]),
            base,
            "main did not move"
        );
        assert_eq!(git(&sb.cwd, &["branch", "--list", "sneaky"]), "");
        assert_eq!(
            git(
                &sb.cwd,
                &["log", "-1", "--format=%s", &format!("mission/{}", &id[..8])]
            ),
            "unit: add the feature",
            "{policy}"
        );
    }
    let id8 = &id[..8];

    let diff = cmd(&sb, &["mission", "diff", id8]).ok();
    assert!(diff.stdout.contains("+++ b/feature.txt\n"), "{diff:#?}");
    assert!(diff.stdout.contains("+from the unit\n"), "{diff:#?}");
    let merged = cmd(&sb, &["mission", "merge", id8]).ok();
    assert_eq!(
        merged.lines(),
        [format!(
            "Merged mission/{id8} into main in {}; the worktree and its branch are removed.",
            sb.cwd.display()
        )]
    );
    assert_eq!(
        git(&sb.cwd, &["log", "-1", "--format=%s", "HEAD^2"]),
        "unit: add the feature"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("feature.txt")).unwrap(),
        "from the unit\n"
    );
}
