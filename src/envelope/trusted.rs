//! Trusted binaries: the file checks behind `trusted_binaries`, which gates the
//! allows that `command_prefix_allowlist` grants. A program word must resolve to a
//! file under a trusted directory and, when its real path is pinned, hash to the
//! declared sha256.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::quote::quote;

/// Gates the allows that `command_prefix_allowlist` grants.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrustedBinaries {
    /// Absolute directories a program must resolve into.
    pub dirs: Vec<String>,
    /// realpath → lowercase sha256 hex.
    pub hashes: BTreeMap<String, String>,
}

impl TrustedBinaries {
    /// An empty block declares nothing, so it gates nothing.
    pub fn is_enforced(&self) -> bool {
        !self.dirs.is_empty() || !self.hashes.is_empty()
    }

    /// Checks that `program` (a program word as the call wrote it) resolves to a
    /// file under one of `dirs` and, when `hashes` pins its real path, that the
    /// file's sha256 matches. `cwd` anchors relative paths like `./go`. Returns the
    /// real path, or why the binary is not trusted.
    pub fn verify(&self, program: &str, cwd: Option<&Path>) -> Result<PathBuf, String> {
        let located = crate::paths::locate_program(program, cwd)
            .ok_or_else(|| format!("{} does not resolve to an executable", quote(program)))?;
        let real = std::fs::canonicalize(&located).map_err(|e| {
            format!(
                "{}: cannot resolve {}: {e}",
                quote(program),
                located.display()
            )
        })?;
        if !self.dirs.iter().any(|d| under_dir(&real, d)) {
            return Err(format!(
                "{} resolves to {}, outside every trusted_binaries.dirs entry",
                quote(program),
                real.display()
            ));
        }
        if let Some(want) = self.hashes.get(real.to_string_lossy().as_ref()) {
            let got = sha256_file(&real)
                .map_err(|e| format!("{}: cannot hash {}: {e}", quote(program), real.display()))?;
            if !got.eq_ignore_ascii_case(want) {
                return Err(format!(
                    "{} does not match its declared hash (on disk {got})",
                    real.display()
                ));
            }
        }
        Ok(real)
    }

    /// Whether a declared hash key lies under a trusted dir, i.e. can ever be read.
    pub fn covers(&self, path: &str) -> bool {
        self.dirs.iter().any(|d| under_dir(Path::new(path), d))
    }
}

/// A trusted dir may itself be a symlink (`/bin` → `/usr/bin`), so it is compared
/// both as written and resolved.
fn under_dir(real: &Path, dir: &str) -> bool {
    let dir = Path::new(dir);
    real.starts_with(dir) || std::fs::canonicalize(dir).is_ok_and(|d| real.starts_with(d))
}

/// Lowercase sha256 hex of a file's contents.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
