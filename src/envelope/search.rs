//! Finding envelopes on the search path: the workspace `.missionboard/`, then home.
//! The first directory that holds the file wins, so a workspace copy shadows home.

use std::path::{Path, PathBuf};

use super::format::Envelope;
use crate::paths::Paths;

/// File-name prefix every envelope carries.
pub const PREFIX: &str = "hitl-policy-";

/// Turn an envelope name as typed into its file name: a bare `strict` becomes
/// `hitl-policy-strict.json`, a name ending in `.json` is kept. Paths are refused:
/// envelopes are looked up on the search path, never anywhere on disk.
pub fn file_name(name: &str) -> Result<String, String> {
    let n = name.trim();
    if n.is_empty() {
        return Err(
            "an envelope name is required, e.g. `default` or `hitl-policy-default.json`".into(),
        );
    }
    if n.contains(['/', '\\']) || n.contains("..") || n != name {
        return Err(format!(
            "envelope name {name:?} must be a bare name like \"strict\" or a file name like \"hitl-policy-strict.json\", not a path — envelopes are looked up in .missionboard/ and ~/.missionboard/"
        ));
    }
    Ok(if n.ends_with(".json") {
        n.to_string()
    } else {
        format!("{PREFIX}{n}.json")
    })
}

/// The first search directory holding `file_name`. A read error other than
/// not-found aborts the lookup rather than silently falling through to another copy.
pub fn find(dirs: &[PathBuf], file_name: &str) -> Result<Option<PathBuf>, String> {
    for dir in dirs {
        let path = dir.join(file_name);
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => return Ok(Some(path)),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        }
    }
    Ok(None)
}

/// An envelope found and parsed.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The name as the operator typed it (what a mission records).
    pub name: String,
    pub path: PathBuf,
    /// What the file declares.
    pub declared: Envelope,
}

/// Resolve `name` on the search path and parse it. The error says which of the three
/// went wrong: the name, the lookup, or the file.
pub fn load(paths: &Paths, name: &str) -> Result<Loaded, String> {
    let file = file_name(name)?;
    let dirs = paths.search_dirs();
    let path = find(&dirs, &file)?.ok_or_else(|| {
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        format!(
            "hitl policy {file:?} not found in {} (run `missionboard init` to seed the presets)",
            shown.join(" or ")
        )
    })?;
    let bytes = std::fs::read(&path).map_err(|e| format!("read hitl policy {file:?}: {e}"))?;
    let declared =
        Envelope::parse(&path.display().to_string(), &bytes).map_err(|e| e.to_string())?;
    Ok(Loaded {
        name: name.to_string(),
        path,
        declared,
    })
}

/// An envelope file seen on the search path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub file_name: String,
    pub path: PathBuf,
}

/// Every `hitl-policy-*.json` on the search path, sorted within each directory and
/// deduplicated by file name (first wins). Read afresh on every call; unreadable
/// directories are skipped.
pub fn list(paths: &Paths) -> Vec<Listed> {
    let mut out: Vec<Listed> = Vec::new();
    for dir in paths.search_dirs() {
        let mut names: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_file())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(PREFIX) && n.ends_with(".json"))
                .collect(),
            Err(_) => continue,
        };
        names.sort();
        for n in names {
            if !out.iter().any(|l| l.file_name == n) {
                out.push(Listed {
                    path: dir.join(&n),
                    file_name: n,
                });
            }
        }
    }
    out
}

/// The short name operators type for an envelope file: `hitl-policy-strict.json` → `strict`.
pub fn short_name(file_name: &str) -> &str {
    file_name
        .strip_prefix(PREFIX)
        .and_then(|n| n.strip_suffix(".json"))
        .unwrap_or(file_name)
}

/// Is `path` an envelope file by name?
pub fn is_envelope_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("hitl-policy"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalise_and_paths_are_refused() {
        assert_eq!(file_name("strict").unwrap(), "hitl-policy-strict.json");
        assert_eq!(
            file_name("hitl-policy-dev.json").unwrap(),
            "hitl-policy-dev.json"
        );
        for bad in [
            "",
            " ",
            "../x",
            "/etc/passwd",
            "a/b",
            "a\\b",
            "..",
            " strict",
        ] {
            assert!(file_name(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(short_name("hitl-policy-strict.json"), "strict");
    }

    #[test]
    fn listing_dedupes_by_name_first_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let ws = tmp.path().join("proj/.missionboard");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        for (dir, n) in [
            (&home, "hitl-policy-b.json"),
            (&home, "hitl-policy-a.json"),
            (&ws, "hitl-policy-b.json"),
            (&home, "other.json"),
        ] {
            std::fs::write(dir.join(n), "{}").unwrap();
        }
        let paths = Paths::resolve(home.clone(), tmp.path().join("proj"));
        let listed = list(&paths);
        assert_eq!(
            listed,
            vec![
                Listed {
                    file_name: "hitl-policy-b.json".into(),
                    path: ws.join("hitl-policy-b.json")
                },
                Listed {
                    file_name: "hitl-policy-a.json".into(),
                    path: home.join("hitl-policy-a.json")
                },
            ]
        );
        assert_eq!(
            find(&paths.search_dirs(), "hitl-policy-a.json").unwrap(),
            Some(home.join("hitl-policy-a.json"))
        );
    }
}
