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

impl Sandbox {
    /// Declare stub agents in home `agents.toml`: `(name, script)`; a `None` script
    /// leaves the stub to read directives from the intent.
    pub fn declare_stubs(&self, agents: &[(&str, Option<&str>)]) {
        let mut toml = String::new();
        for (name, script) in agents {
            let args = match script {
                Some(json) => {
                    // In the workspace: under strict and acpx a unit cannot read the home.
                    let path = self.cwd.join(format!("script-{name}.json"));
                    self.write(&path, json);
                    format!(
                        "[\"stub-agent\", \"--script\", {:?}]",
                        path.display().to_string()
                    )
                }
                None => "[\"stub-agent\"]".to_string(),
            };
            toml.push_str(&format!(
                "[agents.{name}]\ncommand = \"missionboard\"\nargs = {args}\ndescription = \"test stub\"\n\n"
            ));
        }
        self.write(&self.home.join("agents.toml"), &toml);
    }

    /// `mission fire <agent> <intent> --wait --policy default` plus `extra`.
    pub fn fire(&self, agent: &str, intent: &str, extra: &[&str]) -> Run {
        let mut args = vec![
            "mission", "fire", agent, intent, "--wait", "--policy", "default",
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// Start a fire in the background (stdout/stderr captured when it is joined).
    pub fn fire_in_background(&self, agent: &str, intent: &str, extra: &[&str]) -> Background {
        let mut args = vec![
            "mission", "fire", agent, intent, "--wait", "--policy", "default",
        ];
        args.extend_from_slice(extra);
        Background::spawn(self.command(&args))
    }

    /// The id of the newest mission.
    pub fn newest_mission(&self) -> Option<String> {
        let out = self.run(&["mission", "list", "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        v.as_array()?
            .first()?
            .get("id")?
            .as_str()
            .map(str::to_string)
    }

    /// Pending asks as JSON rows (`approvals list` is for humans; the ids come from
    /// its first column).
    pub fn pending_ask_ids(&self) -> Vec<String> {
        let out = self.run(&["approvals", "list"]).ok();
        out.stdout
            .lines()
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|id| id.len() == 36)
            .collect()
    }
}

/// A background `mission fire`.
pub struct Background {
    child: Option<std::process::Child>,
}

impl Background {
    /// Start `command` with its output captured.
    pub fn spawn(mut command: Command) -> Background {
        let child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn missionboard");
        Background { child: Some(child) }
    }

    pub fn join(mut self) -> Run {
        let out = self.child.take().unwrap().wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Poll `f` until it yields `Some`, or panic after `secs` seconds naming `what`.
#[track_caller]
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
