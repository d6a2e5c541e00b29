//! A scratch world per test: its own home, its own working directory, the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_missionboard");

pub struct Sandbox {
    _dir: tempfile::TempDir,
    /// `MISSIONBOARD_HOME`.
    pub home: PathBuf,
    /// The directory commands run in.
    pub cwd: PathBuf,
}

/// What a run left behind.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "expected success:\n{self:#?}");
        self
    }

    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("mbhome");
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        Sandbox {
            home,
            cwd,
            _dir: dir,
        }
    }

    /// A command with a clean, deterministic environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(&self.cwd)
            .env("MISSIONBOARD_HOME", &self.home)
            .env("HOME", self.home.parent().unwrap())
            .env_remove("MISSIONBOARD_OPT_IN_BETA")
            .env_remove("MISSIONBOARD_LOG")
            .env("NO_COLOR", "1");
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(self.command(args))
    }

    pub fn run_with(&self, mut c: Command) -> Run {
        let Output {
            status,
            stdout,
            stderr,
        } = c.output().expect("spawn missionboard");
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// The workspace `.missionboard/` of `cwd`, created.
    pub fn workspace(&self) -> PathBuf {
        let ws = self.cwd.join(".missionboard");
        std::fs::create_dir_all(&ws).unwrap();
        ws
    }

    pub fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub fn db(&self) -> PathBuf {
        self.home.join("board.db")
    }
}
