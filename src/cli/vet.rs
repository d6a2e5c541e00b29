//! `missionboard vet [--all] [path]`: the loader's own validation, run ahead of time,
//! every error collected, one verdict line per file.

use std::path::{Path, PathBuf};

use super::out::outln;
use super::{Ctx, VetArgs};
use crate::envelope::vet::{self, FileKind, VetReport};

const INDENT: &str = "     ";

pub(super) fn run(ctx: &Ctx, args: VetArgs) -> anyhow::Result<i32> {
    let roots: Vec<PathBuf> = match (&args.path, args.all) {
        (Some(p), _) => {
            if !p.exists() {
                anyhow::bail!("cannot vet {}: no such file or directory", p.display());
            }
            vec![p.clone()]
        }
        (None, true) => ctx.paths.search_dirs(),
        (None, false) => ctx.paths.workspace.iter().cloned().collect(),
    };
    let mut files = Vec::new();
    for root in &roots {
        collect(
            root,
            root == args.path.as_deref().unwrap_or(Path::new("")),
            &mut files,
        );
    }
    if files.is_empty() {
        outln!(
            "Nothing to vet: no .json files found. Run 'missionboard init' to scaffold .missionboard/, or pass a path."
        )?;
        return Ok(0);
    }
    let (mut vetted, mut failed) = (0, 0);
    for file in &files {
        match vet_file(file) {
            None => outln!("skip {} (not a chain or hitl-policy file)", file.display())?,
            Some(report) => {
                vetted += 1;
                if !report.errors.is_empty() {
                    failed += 1;
                    outln!("FAIL {}", file.display())?;
                    for line in &report.errors {
                        outln!("{INDENT}{line}")?;
                    }
                } else if !report.warnings.is_empty() {
                    outln!("WARN {}", file.display())?;
                    for (field, message) in &report.warnings {
                        outln!("{INDENT}{field}: {message}")?;
                    }
                } else {
                    outln!("ok   {}", file.display())?;
                }
            }
        }
    }
    if failed > 0 {
        outln!("\nvet: {failed} of {vetted} file(s) failed")?;
        return Ok(1);
    }
    Ok(0)
}

/// Vet one file; `None` when it is neither an envelope, a chain nor an agents file.
fn vet_file(path: &Path) -> Option<VetReport> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return Some(VetReport {
                errors: vec![format!("cannot read: {e}")],
                warnings: vec![],
            });
        }
    };
    let name = path.file_name()?.to_string_lossy().into_owned();
    if crate::sched::template::is_template_file(path) {
        let errors = match std::str::from_utf8(&bytes)
            .map_err(|e| format!("not UTF-8: {e}"))
            .and_then(crate::sched::template::Template::parse)
        {
            Ok(_) => vec![],
            Err(e) => vec![format!("template failed validation: {e}")],
        };
        return Some(VetReport {
            errors,
            warnings: vec![],
        });
    }
    if name == crate::agents::FILE_NAME {
        let errors = match std::str::from_utf8(&bytes)
            .map_err(|e| anyhow::anyhow!("not UTF-8: {e}"))
            .and_then(|text| crate::agents::parse(path, text))
        {
            Ok(_) => vec![],
            Err(e) => vec![e.to_string()],
        };
        return Some(VetReport {
            errors,
            warnings: vec![],
        });
    }
    let (report, what) = match vet::classify(&name, &bytes) {
        FileKind::Skip => return None,
        FileKind::Envelope => (vet::vet_envelope(&bytes), "hitl policy"),
        FileKind::Chain => (vet::vet_chain(&bytes), "chain"),
    };
    Some(wrap(report, what))
}

/// Errors read as one sentence per file: the wrapper, then one line per error.
fn wrap(mut report: VetReport, what: &str) -> VetReport {
    report.errors = match report.errors.len() {
        0 => vec![],
        1 => vec![format!("{what} failed validation: {}", report.errors[0])],
        _ => std::iter::once(format!("{what} failed validation:"))
            .chain(report.errors)
            .collect(),
    };
    report
}

/// Every `.json` (any case) and `agents.toml` under `root`, sorted, hidden entries
/// skipped. An explicitly named file is vetted whatever its name.
fn collect(root: &Path, named: bool, out: &mut Vec<PathBuf>) {
    if root.is_file() {
        if named || wanted(root) {
            out.push(root.to_path_buf());
        }
        return;
    }
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let hidden = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        if p.is_dir() {
            collect(&p, false, out);
        } else if wanted(&p) {
            out.push(p);
        }
    }
}

fn wanted(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name.ends_with(".json")
        || name == crate::agents::FILE_NAME
        || crate::sched::template::is_template_file(p)
}
