//! The Python the SDK agent tests run on: one venv in the build tree, made from the
//! pinned `tests/agents/requirements.txt` once and reused while that file and the
//! base interpreter are unchanged. It never sees the machine's own site-packages, so
//! the tests prove the pins, not whatever happens to be installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::{FileLock, target_dir};

/// What the venv is made from.
pub const REQUIREMENTS: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents/requirements.txt");

/// Written into the venv last: what it was made from. A venv without it, or with
/// other contents, is half made or stale and is made again.
const STAMP: &str = "missionboard-requirements.txt";

/// `<target>/test-env/python-sdk`.
pub fn sdk_venv() -> PathBuf {
    target_dir().join("test-env").join("python-sdk")
}

/// The venv's interpreter, as the venv names it (`<venv>/bin/python3`, a symlink to
/// the base interpreter): a unit started on this path is granted the venv it lies in.
/// Made on first use in this process, under a file lock across test processes; panics
/// naming the fix when it cannot be made.
pub fn sdk_python() -> &'static Path {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PYTHON.get_or_init(prepare) {
        Ok(path) => path,
        Err(why) => panic!("{why}"),
    }
}

fn prepare() -> Result<PathBuf, String> {
    let venv = sdk_venv();
    let parent = venv.parent().expect("the venv has a parent");
    std::fs::create_dir_all(parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
    let _lock = FileLock::take(&parent.join("python-sdk.lock"));
    let python = venv.join("bin").join("python3");
    let wanted = stamp_text()?;
    let current = std::fs::read_to_string(venv.join(STAMP)).ok();
    if current.as_deref() != Some(wanted.as_str()) || !python.exists() {
        make(&venv, &python)?;
        std::fs::write(venv.join(STAMP), &wanted)
            .map_err(|e| format!("write {}: {e}", venv.join(STAMP).display()))?;
    }
    check_isolated(&venv, &python)?;
    Ok(python)
}

/// The requirements and the base interpreter's version: either changing makes the
/// venv again.
fn stamp_text() -> Result<String, String> {
    let requirements =
        std::fs::read_to_string(REQUIREMENTS).map_err(|e| format!("read {REQUIREMENTS}: {e}"))?;
    let base = run(
        base_command().args(["-c", "import sys; print(sys.version)"]),
        "python3 --version",
    )
    .map_err(|why| {
        format!("the SDK agent tests make a venv with python3, which did not run ({why}): install python3 (3.10 or newer) on PATH")
    })?;
    Ok(format!("# python {}\n{requirements}", base.trim()))
}

fn base_command() -> Command {
    let mut c = Command::new("python3");
    c.env_remove("PYTHONPATH").env_remove("PYTHONHOME");
    c
}

fn make(venv: &Path, python: &Path) -> Result<(), String> {
    if venv.exists() {
        std::fs::remove_dir_all(venv).map_err(|e| format!("remove {}: {e}", venv.display()))?;
    }
    let started = std::time::Instant::now();
    run(base_command().arg("-m").arg("venv").arg(venv), "python3 -m venv").map_err(|why| {
        format!("the SDK agent tests could not make their venv at {} ({why}): install python3 with its venv module (Debian: apt-get install python3-venv)", venv.display())
    })?;
    let mut pip = Command::new(python);
    // A `--user` install cannot go into a venv.
    pip.env_remove("PYTHONPATH")
        .env_remove("PYTHONHOME")
        .env_remove("PIP_USER")
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            "--requirement",
            REQUIREMENTS,
        ]);
    run(&mut pip, "pip install").map_err(|why| {
        format!("the SDK agent tests could not install {REQUIREMENTS} into their venv at {} ({why}): they need pypi.org (or the index pip is configured with) reachable", venv.display())
    })?;
    eprintln!(
        "python: made the SDK venv at {} in {:.1}s",
        venv.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The SDKs import from the venv itself, never from a site-packages outside it.
fn check_isolated(venv: &Path, python: &Path) -> Result<(), String> {
    let mut probe = Command::new(python);
    probe
        .env_remove("PYTHONPATH")
        .env_remove("PYTHONHOME")
        .args([
            "-c",
            "import acp, mcp; print(acp.__file__); print(mcp.__file__)",
        ]);
    let out = run(&mut probe, "import acp, mcp").map_err(|why| {
        format!(
            "the SDK venv at {} cannot import its SDKs ({why}): remove it and run the tests again",
            venv.display()
        )
    })?;
    let venv = std::fs::canonicalize(venv).unwrap_or_else(|_| venv.to_path_buf());
    for module in out.lines() {
        let real = std::fs::canonicalize(module).unwrap_or_else(|_| PathBuf::from(module));
        if !real.starts_with(&venv) {
            return Err(format!(
                "the SDK venv at {} imports {module} from outside itself: remove it and run the tests again",
                venv.display()
            ));
        }
    }
    Ok(())
}

/// Stdout of `c` when it succeeds; else why not.
fn run(c: &mut Command, what: &str) -> Result<String, String> {
    let out = c
        .output()
        .map_err(|e| format!("{what} did not start: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            tail.join("\n")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
